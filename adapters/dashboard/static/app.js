// The dashboard: a hash-routed page over the public /v1 API. Every view builds its DOM with
// `h` (no innerHTML, so nothing the API returns is ever parsed as HTML).

import { all, api, ApiError, session } from "./api.js";
import { finishSignIn, signOut, signUp, startSignIn } from "./auth.js";
import { nextRuns } from "./cron.js";

const view = document.getElementById("view");
const errors = document.getElementById("errors");
const banner = document.getElementById("banner");
let poller = null;

// ---------------------------------------------------------------------------------------
// DOM helpers

function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    else if (name in node && name !== "list" && name !== "form") node[name] = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

let uid = 0;
function field(label, input, hint) {
  input.id = input.id || `f${++uid}`;
  return h("div", {}, h("label", { htmlFor: input.id }, label), input, hint ? h("p", { className: "hint" }, hint) : null);
}

function select(name, options, value) {
  return h("select", { name }, options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)));
}

function table(headers, rows, empty = "Nothing here yet.") {
  if (!rows.length) return h("p", { className: "muted" }, empty);
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows));
}

function badge(state) {
  return h("span", { className: `state state-${state}` }, state);
}

function when(value) {
  if (!value) return "—";
  return new Date(value).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function inZone(value, timeZone) {
  try {
    return new Date(value).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short", timeZone });
  } catch {
    return value;
  }
}

function changesOf(changes) {
  if (!changes) return "";
  return Object.entries(changes).map(([name, change]) => {
    const shown = (v) => (v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v));
    return change && typeof change === "object" && ("from" in change || "to" in change)
      ? `${name}: ${shown(change.from)} → ${shown(change.to)}`
      : `${name}: ${shown(change)}`;
  }).join("; ");
}

function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

function formValues(form) {
  return Object.fromEntries(new FormData(form).entries());
}

// ---------------------------------------------------------------------------------------
// Errors: the API's message and request id, plainly.

function showError(error) {
  if (!(error instanceof ApiError)) error = new ApiError(0, "client_error", String(error.message || error), null);
  if (error.code === "billing_restricted") showBanner(error.message);
  const item = h("div", { className: "error", "data-code": error.code },
    h("span", {}, h("strong", {}, error.message), ` (${error.code})`),
    error.requestId ? h("span", { className: "rid" }, `Request ID: ${error.requestId}`) : null,
    h("button", { type: "button", className: "secondary", onclick: () => item.remove(), "aria-label": "Dismiss error" }, "Dismiss"));
  errors.append(item);
  if (error.status === 401) {
    session.clear();
    route();
  }
}

function showBanner(message) {
  banner.hidden = false;
  banner.textContent = `Writes are refused in this workspace: ${message}. Reads and downloads still work.`;
}

/** Run `work`, showing any failure; returns its result or undefined. */
async function act(work) {
  try {
    return await work();
  } catch (error) {
    showError(error);
    return undefined;
  }
}

function onSubmit(work) {
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

function notice(text) {
  return h("p", { className: "notice", role: "status" }, text);
}

function secretShown(label, token) {
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

// ---------------------------------------------------------------------------------------
// Chrome: the header, the workspace switcher, the navigation.

let workspaces = [];

async function renderChrome() {
  const current = session.get();
  const account = document.getElementById("account");
  const switcher = document.getElementById("workspace-switcher");
  const nav = document.getElementById("nav");
  account.replaceChildren();
  switcher.replaceChildren();
  nav.hidden = !(current && current.workspace_id);
  if (!current) return;
  account.append(h("span", { className: "muted" }, current.user.email),
    h("button", { type: "button", className: "secondary", onclick: () => act(async () => { await signOut(); route(); }) }, "Sign out"));
  workspaces = (await act(() => all("/v1/workspaces"))) || [];
  if (!workspaces.length) return;
  const choice = select("workspace", [["", "Choose a workspace…"], ...workspaces.map((w) => [w.id, `${w.name} (${w.role})`])], current.workspace_id || "");
  choice.setAttribute("aria-label", "Workspace");
  choice.id = "workspace-select";
  choice.addEventListener("change", () => choice.value && act(() => switchTo(choice.value)));
  switcher.append(choice);
  for (const link of nav.querySelectorAll("a")) {
    link.toggleAttribute("aria-current", location.hash.startsWith(link.getAttribute("href")));
    if (link.hasAttribute("aria-current")) link.setAttribute("aria-current", "page");
  }
}

async function switchTo(workspaceId) {
  const issued = await api("POST", "/v1/auth/switch", { workspace_id: workspaceId });
  session.set({ token: issued.token, workspace_id: issued.workspace_id, user: issued.user });
  banner.hidden = true;
  location.hash = "#/backups";
  await route();
}

const wid = () => session.get().workspace_id;

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
    h("button", { type: "button", id: "sign-in", onclick: () => act(startSignIn) }, "Sign in"),
    builtin ? h("p", {}, "No account yet? ", h("a", { href: "#/signup" }, "Create an account"), ".") : null);
}

function signupView() {
  const form = h("form", { className: "card", id: "signup-form", onsubmit: onSubmit(async (_f, v) => {
    await signUp(v.name, v.email, v.password);
    await startSignIn();
  }) },
  field("Your name", h("input", { name: "name", required: true, autocomplete: "name", maxLength: 100 })),
  field("Email", h("input", { name: "email", type: "email", required: true, autocomplete: "email" })),
  field("Password", h("input", { name: "password", type: "password", required: true, minLength: 8, autocomplete: "new-password" }), "At least 8 characters."),
  h("button", { type: "submit" }, "Create account"));
  return h("div", { className: "landing" }, h("h1", {}, "Create an account"),
    h("p", {}, "After creating it you sign in once with the same email and password."), form,
    h("p", {}, "Already have one? ", h("button", { type: "button", className: "secondary", onclick: () => act(startSignIn) }, "Sign in")));
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
// Backups

async function lastRun(backup) {
  try {
    const page = await api("GET", `/v1/backups/${backup.id}/runs`, null, { limit: 1 });
    return page.data[0] || null;
  } catch {
    return null;
  }
}

async function backupsView() {
  const backups = await all(`/v1/workspaces/${wid()}/backups`);
  const runs = await Promise.all(backups.map(lastRun));
  const rows = backups.map((b, i) => h("tr", {},
    h("td", {}, h("a", { href: `#/backups/${b.id}` }, b.name)),
    h("td", {}, b.kind),
    h("td", {}, badge(b.state), b.paused ? [" ", badge("paused")] : null),
    h("td", {}, b.schedule ? when(b.next_run_at) : "no schedule"),
    h("td", {}, runs[i] ? [badge(runs[i].state), " ", when(runs[i].finished_at || runs[i].created_at)] : "never run")));
  const create = h("form", { className: "card", id: "backup-form", onsubmit: onSubmit(async (_f, v) => {
    const created = await api("POST", `/v1/workspaces/${wid()}/backups`, { name: v.name, kind: v.kind });
    location.hash = `#/backups/${created.id}`;
  }) }, h("h2", {}, "Create a backup"),
  h("div", { className: "row" },
    field("Name", h("input", { name: "name", required: true, maxLength: 100 })),
    field("Kind", select("kind", [["cloud", "cloud — the service reads an S3 bucket or PostgreSQL"], ["local", "local — a worker on your machine"], ["manual", "manual — you upload artifacts"]], "cloud"))),
  h("button", { type: "submit" }, "Create backup"));
  return [h("h1", {}, "Backups"), table(["Name", "Kind", "State", "Next run", "Last run"], rows, "No backups yet: create one below."), create];
}

function runsTable(runs) {
  return table(["Run", "State", "Trigger", "Started", "Finished", "Progress", "Artifacts", ""], runs.map((r) => h("tr", { "data-run": r.id, "data-state": r.state },
    h("td", {}, h("code", {}, r.id.slice(0, 8))),
    h("td", {}, badge(r.state), r.error ? h("div", { className: "hint" }, r.error) : null),
    h("td", {}, r.trigger),
    h("td", {}, when(r.started_at || r.created_at)),
    h("td", {}, when(r.finished_at)),
    h("td", {}, progressOf(r)),
    h("td", {}, `${r.artifact_count} (${bytes(r.bytes)})`),
    h("td", {}, ["queued", "running"].includes(r.state)
      ? h("button", { type: "button", className: "secondary", onclick: () => act(async () => { await api("POST", `/v1/runs/${r.id}/cancel`); await refreshRuns(r.backup_id); }) }, "Cancel")
      : null))), "No runs yet.");
}

function progressOf(run) {
  const p = run.progress;
  if (run.state !== "running") return run.state === "succeeded" ? "done" : "—";
  if (!p) return "started";
  if (p.bytes_total) {
    return h("span", {}, h("progress", { max: p.bytes_total, value: p.bytes_done, "aria-label": "Run progress" }), ` ${bytes(p.bytes_done)} / ${bytes(p.bytes_total)}`, p.message ? ` ${p.message}` : "");
  }
  return `${bytes(p.bytes_done)}${p.message ? ` — ${p.message}` : ""}`;
}

async function refreshRuns(backupId) {
  const holder = document.getElementById("runs");
  if (!holder) return;
  const page = await api("GET", `/v1/backups/${backupId}/runs`, null, { limit: 20 });
  holder.replaceChildren(runsTable(page.data));
  holder.dataset.updated = new Date().toISOString();
  // When a run finishes, its artifacts appear: redraw them too (only then).
  const finished = page.data.filter((r) => !["queued", "running"].includes(r.state)).map((r) => r.id).join();
  const artifacts = document.getElementById("backup-artifacts");
  if (artifacts && holder.dataset.finished !== undefined && holder.dataset.finished !== finished) {
    artifacts.replaceChildren(await artifactsTable((a) => a.backup_id === backupId));
  }
  holder.dataset.finished = finished;
}

function durationField(name, label, value, hint) {
  return field(label, h("input", { name, value: value || "", pattern: "P(\\d+W)?(\\d+D)?(T(\\d+H)?(\\d+M)?(\\d+S)?)?", placeholder: "P30D" }), hint);
}

function schedulePreview(form) {
  const out = form.querySelector("[data-preview]");
  const { cron, timezone } = formValues(form);
  out.replaceChildren();
  if (!cron) return;
  try {
    const runs = nextRuns(cron, timezone || "UTC", 5);
    out.append(h("p", { className: "hint" }, `Next five run times (${timezone || "UTC"}), computed in your browser:`),
      h("ol", { id: "next-runs" }, runs.map((r) => h("li", {}, r.label))));
  } catch (error) {
    out.append(h("p", { className: "hint" }, `Not a schedule: ${error.message}`));
  }
}

async function backupView(id) {
  const backup = await api("GET", `/v1/backups/${id}`);
  const patch = async (changes) => {
    await api("PATCH", `/v1/backups/${id}`, changes);
    await route();
  };
  const action = (verb, label, cls) => h("button", { type: "button", className: cls, id: `backup-${verb}`, onclick: () => act(async () => {
    if (verb === "delete") {
      if (!confirm(`Delete backup ${backup.name}? This cannot be undone.`)) return;
      await api("DELETE", `/v1/backups/${id}`);
      location.hash = "#/backups";
      return;
    }
    if (verb === "run") {
      await api("POST", "/v1/runs", { backup_id: id });
    } else {
      await api("POST", `/v1/backups/${id}/${verb}`);
    }
    await route();
  }) }, label);

  const summary = h("section", { className: "card" },
    h("p", {}, "Kind: ", h("strong", {}, backup.kind), " · State: ", badge(backup.state), backup.paused ? [" ", badge("paused")] : null),
    h("p", {}, "Next run (from the API): ", h("strong", { id: "next-run-at" }, backup.next_run_at ? when(backup.next_run_at) : "none"),
      backup.next_run_at && backup.schedule ? ` — ${inZone(backup.next_run_at, backup.schedule.timezone)} in ${backup.schedule.timezone}` : ""),
    backup.state === "draft" ? h("p", { className: "hint" }, backup.kind === "cloud"
      ? "Draft: set a source, its credentials and a retention to activate it."
      : backup.kind === "local" ? "Draft: choose a worker and a retention to activate it." : "Draft: set a retention to activate it.") : null,
    backup.paused ? action("resume", "Resume") : action("pause", "Pause", "secondary"),
    backup.kind === "manual" ? action("run", "Start a manual run") : action("trigger", "Run now"),
    action("delete", "Delete backup", "danger"));

  const sections = [];
  if (backup.kind === "cloud") {
    const src = backup.source || { type: "s3" };
    sections.push(h("form", { className: "card", id: "source-form", onsubmit: onSubmit(async (_f, v) => {
      const source = v.type === "s3"
        ? { type: "s3", endpoint: v.endpoint, bucket: v.bucket, ...(v.prefix ? { prefix: v.prefix } : {}) }
        : { type: "postgres", host: v.host, port: Number(v.port), database: v.database };
      const changes = { source };
      if (v.user || v.secret) {
        changes.credentials = v.type === "s3"
          ? { access_key_id: v.user, secret_access_key: v.secret }
          : { username: v.user, password: v.secret };
      }
      await patch(changes);
    }) }, h("h2", {}, "Source and credentials"),
    field("Source type", select("type", [["s3", "S3 bucket"], ["postgres", "PostgreSQL database"]], src.type)),
    h("div", { className: "row" },
      field("S3 endpoint", h("input", { name: "endpoint", type: "url", value: src.endpoint || "", placeholder: "https://s3.example.com" })),
      field("Bucket", h("input", { name: "bucket", value: src.bucket || "" })),
      field("Prefix (optional)", h("input", { name: "prefix", value: src.prefix || "" }))),
    h("div", { className: "row" },
      field("PostgreSQL host", h("input", { name: "host", value: src.host || "" })),
      field("Port", h("input", { name: "port", type: "number", value: src.port || 5432 })),
      field("Database", h("input", { name: "database", value: src.database || "" }))),
    h("div", { className: "row" },
      field("Access key id / user name", h("input", { name: "user", autocomplete: "off" })),
      field("Secret access key / password", h("input", { name: "secret", type: "password", autocomplete: "new-password" }))),
    h("p", { className: "hint" }, backup.has_credentials ? "Credentials are stored (write-only: never shown again). Leave blank to keep them." : "No credentials stored yet."),
    h("button", { type: "submit" }, "Save source")));
  }
  if (backup.kind === "local") {
    const workers = await act(() => all("/v1/workers")) || [];
    sections.push(h("form", { className: "card", id: "worker-form", onsubmit: onSubmit(async (_f, v) => patch({ worker_id: v.worker_id || null })) },
      h("h2", {}, "Worker"),
      field("Worker that runs this backup", select("worker_id", [["", "none"], ...workers.map((w) => [w.id, w.name])], backup.worker_id || "")),
      h("p", { className: "hint" }, "Create workers under API keys & workers."),
      h("button", { type: "submit" }, "Save worker")));
  }
  if (backup.kind !== "manual") {
    const schedule = backup.schedule || { cron: "", timezone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC" };
    const form = h("form", { className: "card", id: "schedule-form", onsubmit: onSubmit(async (_f, v) => patch({ schedule: v.cron ? { cron: v.cron, timezone: v.timezone } : null })) },
      h("h2", {}, "Schedule"),
      h("div", { className: "row" },
        field("Cron (minute hour day month weekday)", h("input", { name: "cron", value: schedule.cron, placeholder: "0 3 * * *" }), "Empty: no schedule (run it by hand)."),
        field("Time zone (IANA)", h("input", { name: "timezone", value: schedule.timezone, placeholder: "Europe/Paris" }))),
      h("div", { "data-preview": "" }),
      h("button", { type: "submit" }, "Save schedule"));
    form.addEventListener("input", () => schedulePreview(form));
    schedulePreview(form);
    sections.push(form);
  }
  const retention = backup.retention || {};
  sections.push(h("form", { className: "card", id: "retention-form", onsubmit: onSubmit(async (_f, v) => {
    if (v.lock_for && v.lock_for !== "PT0S" && !confirm(`Artifacts will be write-once for ${v.lock_for}: nobody, not even an admin, can delete them or this backup before then. Continue?`)) return;
    await patch({ retention: { expire_after: v.expire_after, lock_for: v.lock_for || "PT0S" } });
  }) }, h("h2", {}, "Retention"),
  h("div", { className: "row" },
    durationField("expire_after", "Keep artifacts for", retention.expire_after, "ISO 8601 duration in weeks, days, hours: P30D, P4W, PT36H."),
    durationField("lock_for", "Lock artifacts for (write-once)", retention.lock_for || "PT0S", "PT0S: no lock.")),
  h("p", { className: "warning", role: "note" }, "Write-once: a locked artifact cannot be deleted or shortened by anyone — not by an admin, not by a stolen credential — until its lock ends. The backup and the workspace cannot be deleted while one of their artifacts is locked. Choose the lock with care."),
  h("button", { type: "submit" }, "Save retention")));

  const dest = backup.destination || { type: "service" };
  sections.push(h("form", { className: "card", id: "destination-form", onsubmit: onSubmit(async (_f, v) => {
    const changes = { destination: v.type === "service" ? { type: "service" } : { type: "customer_s3", endpoint: v.endpoint, bucket: v.bucket, ...(v.prefix ? { prefix: v.prefix } : {}) } };
    if (v.type !== "service" && v.user) changes.destination_credentials = { access_key_id: v.user, secret_access_key: v.secret };
    await patch(changes);
  }) }, h("h2", {}, "Destination"),
  field("Where artifacts go", select("type", [["service", "Strongroom's storage"], ["customer_s3", "Your own S3 bucket"]], dest.type)),
  h("div", { className: "row" },
    field("Endpoint", h("input", { name: "endpoint", type: "url", value: dest.endpoint || "" })),
    field("Bucket", h("input", { name: "bucket", value: dest.bucket || "" })),
    field("Prefix (optional)", h("input", { name: "prefix", value: dest.prefix || "" }))),
  h("div", { className: "row" },
    field("Access key id", h("input", { name: "user", autocomplete: "off" })),
    field("Secret access key", h("input", { name: "secret", type: "password", autocomplete: "new-password" }))),
  h("p", { className: "hint" }, "Artifacts in your own bucket cannot be downloaded through Strongroom."),
  h("button", { type: "submit" }, "Save destination")));

  const runsHolder = h("div", { id: "runs", "aria-live": "polite" }, h("p", {}, "Loading runs…"));
  const result = [h("p", {}, h("a", { href: "#/backups" }, "← Backups")), h("h1", {}, backup.name), summary,
    h("h2", {}, "Runs"), h("p", { className: "hint" }, "Updated every two seconds."), runsHolder,
    h("h2", {}, "Artifacts"), h("div", { id: "backup-artifacts" }, await artifactsTable((a) => a.backup_id === id)), ...sections];
  setTimeout(() => act(() => refreshRuns(id)), 0);
  poller = setInterval(() => refreshRuns(id).catch(() => {}), 2000);
  return result;
}

// ---------------------------------------------------------------------------------------
// Artifacts

async function artifactsTable(keep = () => true) {
  const artifacts = (await all(`/v1/workspaces/${wid()}/artifacts`)).filter(keep);
  const now = Date.now();
  return table(["Name", "Size", "State", "Locked until", "Expires", ""], artifacts.map((a) => h("tr", { "data-artifact": a.id },
    h("td", {}, a.name),
    h("td", {}, bytes(a.size)),
    h("td", {}, badge(a.state), a.storage === "customer" ? " (your bucket)" : ""),
    h("td", {}, a.locked_until && Date.parse(a.locked_until) > now ? ["🔒 ", when(a.locked_until)] : "not locked"),
    h("td", {}, when(a.expires_at)),
    h("td", {},
      h("button", { type: "button", className: "secondary", "aria-label": `Download ${a.name}`, onclick: () => act(async () => {
        const link = await api("POST", `/v1/artifacts/${a.id}/download-url`);
        const anchor = h("a", { href: link.url, download: a.name });
        document.body.append(anchor);
        anchor.click();
        anchor.remove();
      }) }, "Download"),
      h("button", { type: "button", className: "danger", "aria-label": `Delete ${a.name}`, onclick: () => act(async () => {
        if (!confirm(`Delete artifact ${a.name}?`)) return;
        await api("DELETE", `/v1/artifacts/${a.id}`);
        await route();
      }) }, "Delete")))), "No artifacts yet.");
}

async function artifactsView() {
  return [h("h1", {}, "Artifacts"), await artifactsTable()];
}

// ---------------------------------------------------------------------------------------
// Members, invitations, roles

async function membersView() {
  const base = `/v1/workspaces/${wid()}`;
  const [members, invitations, roles] = await Promise.all([all(`${base}/members`), all(`${base}/invitations`), all(`${base}/roles`)]);
  const roleOptions = roles.map((r) => [r.slug, r.name || r.slug]);
  const memberRows = members.map((m) => {
    const role = select("role", roleOptions, m.role);
    role.setAttribute("aria-label", `Role of ${m.email}`);
    role.addEventListener("change", () => act(async () => { await api("PATCH", `${base}/members/${m.user_id}`, { role: role.value }); await route(); }));
    return h("tr", {}, h("td", {}, m.name), h("td", {}, m.email), h("td", {}, role), h("td", {}, when(m.joined_at)),
      h("td", {}, h("button", { type: "button", className: "danger", onclick: () => act(async () => {
        if (!confirm(`Remove ${m.email} from this workspace?`)) return;
        await api("DELETE", `${base}/members/${m.user_id}`);
        await route();
      }) }, "Remove")));
  });
  const invite = h("form", { className: "card", id: "invite-form", onsubmit: onSubmit(async (_f, v) => {
    await api("POST", `${base}/invitations`, { email: v.email, role: v.role });
    await route();
  }) }, h("h2", {}, "Invite someone"),
  h("div", { className: "row" }, field("Email", h("input", { name: "email", type: "email", required: true })), field("Role", select("role", roleOptions, "member"))),
  h("button", { type: "submit" }, "Send invitation"));
  const roleForm = h("form", { className: "card", id: "role-form", onsubmit: onSubmit(async (form, v) => {
    const permissions = [...form.querySelectorAll("input[name=perm]:checked")].map((c) => c.value);
    await api("POST", `${base}/roles`, { slug: v.slug, name: v.name, permissions });
    await route();
  }) }, h("h2", {}, "Create a role"),
  h("div", { className: "row" }, field("Slug", h("input", { name: "slug", required: true, pattern: "[a-z][a-z0-9-]{1,39}" })), field("Name", h("input", { name: "name", required: true }))),
  await permissionBoxes());
  roleForm.append(h("button", { type: "submit" }, "Create role"));
  return [h("h1", {}, "Members"),
    table(["Name", "Email", "Role", "Joined", ""], memberRows),
    h("h2", {}, "Invitations"),
    table(["Email", "Role", "State", "Expires"], invitations.map((i) => h("tr", {}, h("td", {}, i.email), h("td", {}, i.role), h("td", {}, badge(i.state)), h("td", {}, when(i.expires_at)))), "No invitations."),
    invite,
    h("h2", {}, "Roles"),
    table(["Slug", "Name", "Permissions"], roles.map((r) => h("tr", {}, h("td", {}, h("code", {}, r.slug)), h("td", {}, r.name), h("td", {}, (r.permissions || []).join(", "))))),
    roleForm];
}

async function permissionBoxes() {
  const catalog = await api("GET", "/v1/permissions");
  return h("fieldset", {}, h("legend", {}, "Permissions"),
    catalog.data.map((p) => h("label", { className: "inline", title: p.description }, h("input", { type: "checkbox", name: "perm", value: p.slug }), p.slug)));
}

// ---------------------------------------------------------------------------------------
// API keys and workers

async function accessView() {
  const [keys, workers] = await Promise.all([all("/v1/api-keys"), all("/v1/workers")]);
  const shown = h("div", { id: "secret" });
  const keyForm = h("form", { className: "card", id: "api-key-form", onsubmit: onSubmit(async (form, v) => {
    const permissions = [...form.querySelectorAll("input[name=perm]:checked")].map((c) => c.value);
    const created = await api("POST", "/v1/api-keys", { name: v.name, permissions, ...(v.expires_at ? { expires_at: new Date(v.expires_at).toISOString().replace(/\.\d+Z$/, "Z") } : {}) });
    await route();
    document.getElementById("secret").replaceChildren(secretShown(`API key ${created.name}`, created.token));
  }) }, h("h2", {}, "Create an API key"),
  h("div", { className: "row" }, field("Name", h("input", { name: "name", required: true })), field("Expires (optional)", h("input", { name: "expires_at", type: "datetime-local" }))),
  await permissionBoxes());
  keyForm.append(h("button", { type: "submit" }, "Create API key"));
  const workerForm = h("form", { className: "card", id: "worker-create-form", onsubmit: onSubmit(async (_f, v) => {
    const created = await api("POST", "/v1/workers", { name: v.name });
    await route();
    document.getElementById("secret").replaceChildren(secretShown(`Worker ${created.name}`, created.token));
  }) }, h("h2", {}, "Create a worker"), field("Name", h("input", { name: "name", required: true })), h("button", { type: "submit" }, "Create worker"));
  const del = (path, label) => h("button", { type: "button", className: "danger", onclick: () => act(async () => {
    if (!confirm(`Delete ${label}? Anything using it stops working.`)) return;
    await api("DELETE", path);
    await route();
  }) }, "Delete");
  return [h("h1", {}, "API keys & workers"), shown,
    h("h2", {}, "API keys"),
    table(["Name", "Permissions", "Created", "Expires", "Last used", ""], keys.map((k) => h("tr", {},
      h("td", {}, k.name), h("td", {}, k.permissions.join(", ") || "none"), h("td", {}, when(k.created_at)), h("td", {}, when(k.expires_at)), h("td", {}, when(k.last_used_at)), h("td", {}, del(`/v1/api-keys/${k.id}`, `API key ${k.name}`))))),
    keyForm,
    h("h2", {}, "Workers"),
    table(["Name", "Id", "Created", "Last seen", ""], workers.map((w) => h("tr", {},
      h("td", {}, w.name), h("td", {}, h("code", {}, w.id)), h("td", {}, when(w.created_at)), h("td", {}, when(w.last_seen_at)),
      h("td", {}, h("button", { type: "button", className: "secondary", onclick: () => act(async () => {
        const rotated = await api("POST", `/v1/workers/${w.id}/rotate`);
        await route();
        document.getElementById("secret").replaceChildren(secretShown(`New token of worker ${rotated.name}`, rotated.token));
      }) }, "Rotate token"), del(`/v1/workers/${w.id}`, `worker ${w.name}`))))),
    workerForm];
}

// ---------------------------------------------------------------------------------------
// Audit log

async function auditView(params) {
  const filters = { action: params.get("action") || "", actor_id: params.get("actor_id") || "", since: params.get("since") || "" };
  const page = await api("GET", `/v1/workspaces/${wid()}/audit`, null, { ...filters, limit: 50, cursor: params.get("cursor") || "" });
  const form = h("form", { className: "card", id: "audit-form", onsubmit: (event) => {
    event.preventDefault();
    const v = formValues(event.currentTarget);
    const since = v.since ? new Date(v.since).toISOString().replace(/\.\d+Z$/, "Z") : "";
    location.hash = "#/audit?" + new URLSearchParams(Object.entries({ action: v.action, actor_id: v.actor_id, since }).filter(([, x]) => x)).toString();
  } }, h("div", { className: "row" },
    field("Action", h("input", { name: "action", value: filters.action, placeholder: "backup.create" })),
    field("Actor id", h("input", { name: "actor_id", value: filters.actor_id })),
    field("Since", h("input", { name: "since", type: "datetime-local" }))),
  h("button", { type: "submit" }, "Filter"));
  const rows = page.data.map((e) => h("tr", {},
    h("td", {}, when(e.occurred_at)), h("td", {}, h("code", {}, e.action)), h("td", {}, `${e.actor.type} ${e.actor.id || ""}`),
    h("td", {}, `${e.target.type} ${e.target.id || ""}`), h("td", {}, badge(e.outcome)),
    h("td", { className: "hint" }, changesOf(e.changes)), h("td", {}, h("code", {}, e.request_id))));
  const more = page.next_cursor ? h("a", { href: "#/audit?" + new URLSearchParams({ ...Object.fromEntries(Object.entries(filters).filter(([, x]) => x)), cursor: page.next_cursor }).toString() }, "Older events →") : null;
  return [h("h1", {}, "Audit log"), form, table(["When", "Action", "Actor", "Target", "Outcome", "Changes", "Request id"], rows, "No events match."), more];
}

// ---------------------------------------------------------------------------------------
// Quotas

async function quotasView() {
  const quotas = await api("GET", `/v1/workspaces/${wid()}/quotas`);
  const rows = quotas.data.map((q) => {
    const unit = q.resource === "storage_bytes" ? bytes : (n) => String(n);
    const gauge = q.limit
      ? h("meter", { min: 0, max: q.limit, value: q.usage, high: q.limit * 0.9, "aria-label": `${q.resource} usage` })
      : h("span", { className: "muted" }, "unlimited");
    return h("tr", {}, h("td", {}, h("code", {}, q.resource)), h("td", {}, gauge), h("td", {}, `${unit(q.usage)} of ${q.limit ? unit(q.limit) : "∞"}`));
  });
  return [h("h1", {}, "Quotas"), table(["Resource", "Usage", ""], rows)];
}

// ---------------------------------------------------------------------------------------
// Routing

const VIEWS = [
  [/^#\/backups\/([0-9a-f-]{36})$/, (m) => backupView(m[1])],
  [/^#\/backups$/, backupsView],
  [/^#\/artifacts$/, artifactsView],
  [/^#\/members$/, membersView],
  [/^#\/access$/, accessView],
  [/^#\/audit(\?.*)?$/, (m) => auditView(new URLSearchParams((m[1] || "").slice(1)))],
  [/^#\/quotas$/, quotasView],
  [/^#\/workspaces$/, workspacesView],
];

async function route() {
  clearInterval(poller);
  poller = null;
  const current = session.get();
  await renderChrome();
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
  view.replaceChildren(...[content || h("p", { className: "muted" }, "This view could not be loaded; see the error above.")].flat().filter(Boolean));
  view.dataset.route = location.hash || "#/";
  view.dataset.renders = String(Number(view.dataset.renders || 0) + 1);
}

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
