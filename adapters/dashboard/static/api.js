// The public API over fetch: JSON in and out, the session token from sessionStorage (never
// a cookie), every failure an ApiError carrying the API's code, message and request id.

const TOKEN = "strongroom.session";

export class ApiError extends Error {
  constructor(status, code, message, requestId) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

export const session = {
  get() {
    const raw = sessionStorage.getItem(TOKEN);
    return raw ? JSON.parse(raw) : null;
  },
  set(value) {
    sessionStorage.setItem(TOKEN, JSON.stringify(value));
  },
  clear() {
    sessionStorage.removeItem(TOKEN);
  },
};

function query(params) {
  const kept = Object.entries(params || {}).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return kept.length ? "?" + new URLSearchParams(kept).toString() : "";
}

async function answer(response) {
  const requestId = response.headers.get("X-Request-ID");
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = data && data.error;
    if (error && typeof error === "object") {
      throw new ApiError(response.status, error.code, error.message, error.request_id || requestId);
    }
    if (data && typeof data.error === "string") {  // OAuth's own format (/idp/token)
      throw new ApiError(response.status, data.error, data.error_description || data.error, requestId);
    }
    throw new ApiError(response.status, `http_${response.status}`, response.statusText || "request failed", requestId);
  }
  return data;
}

async function send(url, init) {
  try {
    return await fetch(url, { credentials: "omit", cache: "no-store", ...init });
  } catch (error) {
    throw new ApiError(0, "network_error", `The server could not be reached (${error.message}).`, null);
  }
}

/** Call `/v1`: `api("GET", "/v1/me")`, `api("POST", path, body)`, `api("GET", path, null, {limit: 10})`. */
export async function api(method, path, body, params, bearer) {
  const headers = { Accept: "application/json" };
  const token = bearer || (session.get() || {}).token;
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers };
  if (body !== undefined && body !== null) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  return answer(await send(path + query(params), init));
}

/** POST a URL-encoded form (the identity provider's endpoints). */
export async function postForm(url, fields) {
  const init = {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  };
  return answer(await send(url, init));
}

/** Every item of a paginated list, following `next_cursor` (at most `max` items). */
export async function all(path, params, max = 1000) {
  const items = [];
  let cursor = null;
  do {
    const page = await api("GET", path, null, { ...params, limit: 200, cursor });
    items.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor && items.length < max);
  return items;
}
