// Browser sign-in: the authorization code grant with PKCE (RFC 7636, S256) at the identity
// provider named by /v1/auth/cli/config, then the exchange at POST /v1/auth/sessions.

import { api, ApiError, postForm, session } from "./api.js";

const PENDING = "strongroom.pkce";
const WEB_CLIENT = "strongroom-web";

function base64url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random(size) {
  return base64url(crypto.getRandomValues(new Uint8Array(size)));
}

/** The redirect URI: this page's own origin and path, nothing else. */
export function redirectUri() {
  return `${location.origin}/app`;
}

function clientIdOf(config) {
  // The built-in provider's browser client; an external provider knows us by its client id.
  return config.issuer === `${location.origin}/idp` ? WEB_CLIENT : config.client_id;
}

/** Leave for the identity provider's sign-in page; with `credentials` (just signed up with
 * the built-in provider), post them to it straight away so that nobody types them twice. */
export async function startSignIn(credentials) {
  if (!crypto.subtle) {
    throw new ApiError(0, "insecure_context", "Signing in needs HTTPS (or localhost): the browser offers no SHA-256 here.", null);
  }
  const config = await api("GET", "/v1/auth/cli/config");
  if (!config.authorization_endpoint) {
    throw new ApiError(0, "no_browser_sign_in", "The identity provider offers no browser sign-in.", null);
  }
  const verifier = random(48);
  const state = random(16);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const pending = {
    verifier,
    state,
    redirect_uri: redirectUri(),
    client_id: clientIdOf(config),
    token_endpoint: config.token_endpoint,
  };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const target = new URL(config.authorization_endpoint);
  const params = {
    response_type: "code",
    client_id: pending.client_id,
    redirect_uri: pending.redirect_uri,
    code_challenge: base64url(digest),
    code_challenge_method: "S256",
    state,
    scope: (config.scopes || []).join(" "),
  };
  if (credentials) {
    const form = document.createElement("form");
    form.method = "post";
    form.action = config.authorization_endpoint;
    form.hidden = true;
    const { scope, ...fields } = params;
    for (const [name, value] of Object.entries({ ...fields, ...credentials })) {
      const input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      input.value = value;
      form.append(input);
    }
    document.body.append(form);
    form.submit();
    return;
  }
  for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
  location.assign(target.toString());
}

/** Back from the identity provider with `?code&state` (or `?error`): a session. */
export async function finishSignIn(params) {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  history.replaceState(null, "", redirectUri() + location.hash);
  if (params.get("error")) {
    throw new ApiError(400, params.get("error"), params.get("error_description") || "sign-in refused", null);
  }
  if (!pending || pending.state !== params.get("state")) {
    throw new ApiError(400, "state_mismatch", "This sign-in answer does not belong to a sign-in started in this tab; sign in again.", null);
  }
  const token = await postForm(pending.token_endpoint, {
    grant_type: "authorization_code",
    code: params.get("code"),
    code_verifier: pending.verifier,
    redirect_uri: pending.redirect_uri,
    client_id: pending.client_id,
  });
  const issued = await api("POST", "/v1/auth/sessions", null, null, token.id_token || token.access_token);
  session.set({ token: issued.token, workspace_id: issued.workspace_id, user: issued.user });
}

/** Create an account with the built-in provider (sign-up on). */
export async function signUp(name, email, password) {
  return postForm("/idp/signup", { email, password, name });
}

export async function signOut() {
  try {
    await api("DELETE", "/v1/auth/sessions/current");
  } finally {
    session.clear();
  }
}
