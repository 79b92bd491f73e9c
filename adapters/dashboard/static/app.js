// The dashboard: a hash-routed page over the public /v1 API. This module draws the header
// and the signed-out pages and routes to the views (backup.js, artifacts.js, views.js).

import { all, api, session } from "./api.js";
import { artifactsView } from "./artifacts.js";
import { finishSignIn, signOut, signUp, startSignIn } from "./auth.js";
import { backupsView, backupView, runView } from "./backup.js";
import { act, banner, errors, field, h, onSubmit, page, select, table } from "./ui.js";
import { accessView, auditView, membersView, quotasView } from "./views.js";

const view = document.getElementById("view");

// ---------------------------------------------------------------------------------------
// Chrome: the header, the workspace switcher, the navigation.

let workspaces = [];

/** Redraw the header; built whole and put in place at once, so that two overlapping
 * redraws never leave two switchers behind. */
async function renderChrome() {
  const current = session.get();
  const nav = document.getElementById("nav");
  const account = [];
  const switcher = [];
  if (current) {
    workspaces = (await act(() => all("/v1/workspaces"))) || [];
    account.push(h("span", { className: "muted" }, current.user.email),
      h("button", { type: "button", className: "secondary", onclick: () => act(async () => { await signOut(); route(); }) }, "Sign out"));
    if (workspaces.length) {
      const choice = select("workspace", [["", "Choose a workspace…"], ...workspaces.map((w) => [w.id, `${w.name} (${w.role})`])], current.workspace_id || "");
      choice.setAttribute("aria-label", "Workspace");
      choice.id = "workspace-select";
      choice.addEventListener("change", () => choice.value && act(() => switchTo(choice.value)));
      switcher.push(choice);
    }
  }
  document.getElementById("account").replaceChildren(...account);
  document.getElementById("workspace-switcher").replaceChildren(...switcher);
  nav.hidden = !(current && current.workspace_id);
  for (const link of nav.querySelectorAll("a")) {
    if (location.hash.startsWith(link.getAttribute("href"))) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function switchTo(workspaceId) {
  const issued = await api("POST", "/v1/auth/switch", { workspace_id: workspaceId });
  session.set({ token: issued.token, workspace_id: issued.workspace_id, user: issued.user });
  banner.hidden = true;
  if (location.hash === "#/backups") await route();
  else location.hash = "#/backups";  // the hashchange routes
}

// ---------------------------------------------------------------------------------------
// Signed out: sign in or sign up.

async function landing() {
  // Sign-up belongs to the built-in identity provider; with an external one, accounts
  // are made there.
  const config = await act(() => api("GET", "/v1/auth/cli/config"));
  const builtin = config && config.issuer === `${location.origin}/idp`;
  return h("div", { className: "landing" },
    h("h1", {}, "Strongroom"),
    h("p", {}, "Backups you can trust, with artifacts locked against deletion."),
    h("button", { type: "button", id: "sign-in", onclick: () => act(() => startSignIn()) }, "Sign in"),
    builtin ? h("p", {}, "No account yet? ", h("a", { href: "#/signup" }, "Create an account"), ".") : null);
}

function signupView() {
  const form = h("form", { className: "card", id: "signup-form", onsubmit: onSubmit(async (_f, v) => {
    await signUp(v.name, v.email, v.password);
    await startSignIn({ email: v.email, password: v.password });
  }) },
  field("Your name", h("input", { name: "name", required: true, autocomplete: "name", maxLength: 100 })),
  field("Email", h("input", { name: "email", type: "email", required: true, autocomplete: "email" })),
  field("Password", h("input", { name: "password", type: "password", required: true, minLength: 8, autocomplete: "new-password" }), "At least 8 characters."),
  h("button", { type: "submit" }, "Create account"));
  return h("div", { className: "landing" }, h("h1", {}, "Create an account"),
    h("p", {}, "You are signed in as soon as it is created."), form,
    h("p", {}, "Already have one? ", h("button", { type: "button", className: "secondary", onclick: () => act(() => startSignIn()) }, "Sign in")));
}

// ---------------------------------------------------------------------------------------
// Workspaces

async function workspacesView() {
  const list = table(["Name", "Your role", ""], workspaces.map((w) => h("tr", {},
    h("td", {}, w.name), h("td", {}, w.role),
    h("td", {}, h("button", { type: "button", className: "secondary", onclick: () => act(() => switchTo(w.id)) }, `Open ${w.name}`)))),
  "You have no workspace yet: create one below.");
  const create = h("form", { className: "card", id: "workspace-form", onsubmit: onSubmit(async (_f, v) => {
    const created = await api("POST", "/v1/workspaces", { name: v.name });
    await switchTo(created.id);
  }) }, h("h2", {}, "Create a workspace"),
  field("Workspace name", h("input", { name: "name", required: true, maxLength: 100 })),
  h("button", { type: "submit" }, "Create workspace"));
  return [h("h1", {}, "Workspaces"), list, create];
}

// ---------------------------------------------------------------------------------------
// Routing

const UUID = "([0-9a-f-]{36})";
const VIEWS = [
  [new RegExp(`^#/backups/${UUID}$`), (m) => backupView(m[1])],
  [new RegExp(`^#/runs/${UUID}$`), (m) => runView(m[1])],
  [/^#\/backups$/, backupsView],
  [/^#\/artifacts$/, artifactsView],
  [/^#\/members$/, membersView],
  [/^#\/access$/, accessView],
  [/^#\/audit(\?.*)?$/, (m) => auditView(new URLSearchParams((m[1] || "").slice(1)))],
  [/^#\/quotas$/, quotasView],
  [/^#\/workspaces$/, workspacesView],
];

let drawing = 0;

async function route() {
  const mine = ++drawing;
  clearInterval(page.poller);
  page.poller = null;
  await renderChrome();
  const current = session.get();
  // A person with exactly one workspace is taken into it.
  if (current && !current.workspace_id && location.hash !== "#/workspaces" && workspaces.length === 1) {
    await act(() => switchTo(workspaces[0].id));
    return;
  }
  let content;
  if (!current) {
    content = location.hash === "#/signup" ? signupView() : await landing();
  } else if (!current.workspace_id || location.hash === "#/workspaces") {
    content = await act(workspacesView);
  } else {
    const hash = location.hash || "#/backups";
    const found = VIEWS.find(([pattern]) => pattern.test(hash));
    content = found ? await act(() => found[1](hash.match(found[0]))) : [h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/backups" }, "Backups"))];
  }
  if (mine !== drawing) {  // a newer drawing started meanwhile: it wins
    return;
  }
  view.replaceChildren(...[content || h("p", { className: "muted" }, "This view could not be loaded; see the error above.")].flat().filter(Boolean));
  view.dataset.route = location.hash || "#/";
  view.dataset.renders = String(Number(view.dataset.renders || 0) + 1);
}
page.route = route;

window.addEventListener("hashchange", () => {
  errors.replaceChildren();
  route();
});

async function start() {
  const params = new URLSearchParams(location.search);
  if (params.has("code") || params.has("error")) await act(() => finishSignIn(params));
  await route();
}

start();
