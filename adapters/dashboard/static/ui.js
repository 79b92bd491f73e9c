// What every view shares: `h` builds the DOM (no innerHTML, so nothing the API returns is
// ever parsed as HTML), formatting, and errors shown with the API's code and request id.

import { ApiError, session } from "./api.js";

export const errors = document.getElementById("errors");
export const banner = document.getElementById("banner");

/** The router, set by app.js (a 401 signs out and redraws). */
export const page = { route: async () => {}, poller: null };

export function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    else if (name in node && name !== "list" && name !== "form") node[name] = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

let uid = 0;
export function field(label, input, hint) {
  input.id = input.id || `f${++uid}`;
  return h("div", {}, h("label", { htmlFor: input.id }, label), input, hint ? h("p", { className: "hint" }, hint) : null);
}

export function select(name, options, value) {
  return h("select", { name }, options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)));
}

/** A table whose cells carry their column's name: on a narrow screen each row becomes a
 * card of "name value" lines instead of scrolling sideways (style.css). */
export function table(headers, rows, empty = "Nothing here yet.") {
  if (!rows.length) return h("p", { className: "muted" }, empty);
  for (const row of rows) {
    [...row.children].forEach((cell, i) => cell.setAttribute("data-label", headers[i] || ""));
  }
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows));
}

export function badge(state, text) {
  return h("span", { className: `state state-${state}` }, text || state);
}

export function when(value) {
  if (!value) return "—";
  return new Date(value).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** One instant in a named zone, with the zone: "Nov 28, 2026, 2:30 AM Europe/Paris". */
export function inZone(value, timeZone) {
  try {
    return `${new Date(value).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short", timeZone })} ${timeZone}`;
  } catch {
    return when(value);
  }
}

export function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

export function shortId(id) {
  return h("code", { title: id }, id.slice(0, 8));
}

export function formValues(form) {
  return Object.fromEntries(new FormData(form).entries());
}

export function showError(error) {
  if (!(error instanceof ApiError)) error = new ApiError(0, "client_error", String(error.message || error), null);
  if (error.code === "billing_restricted") {
    showBanner(error);  // the refusal is said once, in the banner
    return;
  }
  const item = h("div", { className: "error", "data-code": error.code },
    h("span", {}, h("strong", {}, error.message), ` (${error.code})`),
    error.requestId ? h("span", { className: "rid" }, `Request ID: ${error.requestId}`) : null,
    h("button", { type: "button", className: "secondary", onclick: () => item.remove(), "aria-label": "Dismiss error" }, "Dismiss"));
  errors.append(item);
  if (error.status === 401) {
    session.clear();
    page.route();
  }
}

function showBanner(error) {
  banner.hidden = false;
  banner.replaceChildren(
    `Writes are refused in this workspace: ${error.message}. Reads and downloads still work.`,
    ...(error.requestId ? [" ", h("span", { className: "rid" }, `Request ID: ${error.requestId}`)] : []));
}

/** Run `work`, showing any failure; returns its result or undefined. */
export async function act(work) {
  try {
    return await work();
  } catch (error) {
    showError(error);
    return undefined;
  }
}

export function onSubmit(work) {
  return async (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    try {
      await act(() => work(form, formValues(form)));
    } finally {
      if (button) button.disabled = false;
    }
  };
}

/** Show only the fieldset of the chosen type: the others are hidden and disabled, so their
 * inputs are neither seen nor submitted. */
export function switched(chooser, groups) {
  const show = () => {
    for (const [value, group] of Object.entries(groups)) {
      group.hidden = chooser.value !== value;
      group.disabled = chooser.value !== value;
    }
  };
  chooser.addEventListener("change", show);
  show();
}

export function secretShown(label, token) {
  const code = h("code", { className: "secret", "data-secret": "token" }, token);
  const copy = h("button", {
    type: "button", className: "secondary",
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(token);
        copy.textContent = "Copied";
      } catch {
        const range = document.createRange();
        range.selectNodeContents(code);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        copy.textContent = "Selected: press Ctrl+C";
      }
    },
  }, "Copy");
  return h("section", { className: "card", role: "status" },
    h("p", {}, h("strong", {}, label), " — shown only this once. Store it now."), code, copy);
}

export const wid = () => session.get().workspace_id;
