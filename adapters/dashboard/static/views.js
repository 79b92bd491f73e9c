// Members, API keys and workers, the audit log, quotas.

import { all, api, session } from "./api.js";
import { act, badge, bytes, field, formValues, h, onSubmit, page, secretShown, select, table, when, wid } from "./ui.js";

// ---------------------------------------------------------------------------------------
// Members, invitations, roles

export async function membersView() {
  const base = `/v1/workspaces/${wid()}`;
  const [members, invitations, roles] = await Promise.all([all(`${base}/members`), all(`${base}/invitations`), all(`${base}/roles`)]);
  const roleOptions = roles.map((r) => [r.slug, r.name || r.slug]);
  const me = session.get().user.id;
  const admins = members.filter((m) => m.role === "admin").length;
  const memberRows = members.map((m) => {
    // The workspace's only admin cannot leave it without one: she is offered neither.
    const soleAdmin = m.user_id === me && m.role === "admin" && admins === 1;
    const role = select("role", roleOptions, m.role);
    role.setAttribute("aria-label", `Role of ${m.email}`);
    role.disabled = soleAdmin;
    role.addEventListener("change", () => act(async () => { await api("PATCH", `${base}/members/${m.user_id}`, { role: role.value }); await page.route(); }));
    return h("tr", { "data-member": m.user_id }, h("td", {}, m.name, m.user_id === me ? " (you)" : ""), h("td", {}, m.email), h("td", {}, role), h("td", {}, when(m.joined_at)),
      h("td", {}, soleAdmin ? h("span", { className: "hint" }, "The only admin: make someone else admin to leave.") : h("button", { type: "button", className: "danger", "aria-label": `Remove ${m.email}`, onclick: () => act(async () => {
        if (!confirm(`Remove ${m.email} from this workspace?`)) return;
        await api("DELETE", `${base}/members/${m.user_id}`);
        await page.route();
      }) }, "Remove")));
  });
  const invite = h("form", { className: "card", id: "invite-form", onsubmit: onSubmit(async (_f, v) => {
    await api("POST", `${base}/invitations`, { email: v.email, role: v.role });
    await page.route();
  }) }, h("h2", {}, "Invite someone"),
  h("div", { className: "row" }, field("Email", h("input", { name: "email", type: "email", required: true })), field("Role", select("role", roleOptions, "member"))),
  h("button", { type: "submit" }, "Send invitation"));
  const roleForm = h("form", { className: "card", id: "role-form", onsubmit: onSubmit(async (form, v) => {
    const permissions = [...form.querySelectorAll("input[name=perm]:checked")].map((c) => c.value);
    await api("POST", `${base}/roles`, { slug: v.slug, name: v.name, permissions });
    await page.route();
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
    table(["Slug", "Name", "Permissions"], roles.map((r) => h("tr", {}, h("td", {}, h("code", {}, r.slug)), h("td", {}, r.name), h("td", { className: "perms" }, (r.permissions || []).join(", "))))),
    roleForm];
}

// Presets of an API key's permissions, from the catalog: what a reader, an uploading
// script (a worker's permissions) and an administrator need.
const PRESETS = [
  ["read-only", "Read-only", (slug) => slug.endsWith(":read") || slug === "artifacts:download"],
  ["uploader", "Uploader", (slug) => ["backups:read", "runs:read", "artifacts:upload", "artifacts:confirm"].includes(slug)],
  ["admin", "Admin", () => true],
];

async function permissionBoxes(presets = false) {
  const catalog = await api("GET", "/v1/permissions");
  const boxes = catalog.data.map((p) => h("label", { className: "inline", title: p.description }, h("input", { type: "checkbox", name: "perm", value: p.slug }), p.slug));
  const choose = (keep) => {
    for (const label of boxes) {
      const box = label.querySelector("input");
      box.checked = keep(box.value);
    }
  };
  const offered = presets ? h("div", { className: "presets", role: "group", "aria-label": "Presets" }, h("span", { className: "hint" }, "Presets: "),
    PRESETS.map(([name, label, keep]) => h("button", { type: "button", className: "secondary", "data-preset": name, onclick: () => choose(keep) }, label)),
    h("button", { type: "button", className: "secondary", onclick: () => choose(() => false) }, "None")) : null;
  return h("fieldset", {}, h("legend", {}, "Permissions"), offered, h("div", { className: "boxes" }, boxes));
}

// ---------------------------------------------------------------------------------------
// API keys and workers

export async function accessView() {
  const [keys, workers] = await Promise.all([all("/v1/api-keys"), all("/v1/workers")]);
  const shown = h("div", { id: "secret" });
  const keyForm = h("form", { className: "card", id: "api-key-form", onsubmit: onSubmit(async (form, v) => {
    const permissions = [...form.querySelectorAll("input[name=perm]:checked")].map((c) => c.value);
    const created = await api("POST", "/v1/api-keys", { name: v.name, permissions, ...(v.expires_at ? { expires_at: new Date(v.expires_at).toISOString().replace(/\.\d+Z$/, "Z") } : {}) });
    await page.route();
    document.getElementById("secret").replaceChildren(secretShown(`API key ${created.name}`, created.token));
  }) }, h("h2", {}, "Create an API key"),
  h("div", { className: "row" }, field("Name", h("input", { name: "name", required: true })), field("Expires (optional)", h("input", { name: "expires_at", type: "datetime-local" }))),
  await permissionBoxes(true));
  keyForm.append(h("button", { type: "submit" }, "Create API key"));
  const workerForm = h("form", { className: "card", id: "worker-create-form", onsubmit: onSubmit(async (_f, v) => {
    const created = await api("POST", "/v1/workers", { name: v.name });
    await page.route();
    document.getElementById("secret").replaceChildren(secretShown(`Worker ${created.name}`, created.token));
  }) }, h("h2", {}, "Create a worker"), field("Name", h("input", { name: "name", required: true })), h("button", { type: "submit" }, "Create worker"));
  const del = (path, label) => h("button", { type: "button", className: "danger", "aria-label": `Delete ${label}`, onclick: () => act(async () => {
    if (!confirm(`Delete ${label}? Anything using it stops working.`)) return;
    await api("DELETE", path);
    await page.route();
  }) }, "Delete");
  return [h("h1", {}, "API keys & workers"), shown,
    h("h2", {}, "API keys"),
    table(["Name", "Permissions", "Created", "Expires", "Last used", ""], keys.map((k) => h("tr", {},
      h("td", {}, k.name), h("td", { className: "perms" }, k.permissions.join(", ") || "none"), h("td", {}, when(k.created_at)), h("td", {}, when(k.expires_at)), h("td", {}, when(k.last_used_at)), h("td", {}, del(`/v1/api-keys/${k.id}`, `API key ${k.name}`))))),
    keyForm,
    h("h2", {}, "Workers"),
    table(["Name", "Id", "Created", "Last seen", ""], workers.map((w) => h("tr", {},
      h("td", {}, w.name), h("td", {}, h("code", {}, w.id)), h("td", {}, when(w.created_at)), h("td", {}, when(w.last_seen_at)),
      h("td", {}, h("button", { type: "button", className: "secondary", onclick: () => act(async () => {
        const rotated = await api("POST", `/v1/workers/${w.id}/rotate`);
        await page.route();
        document.getElementById("secret").replaceChildren(secretShown(`New token of worker ${rotated.name}`, rotated.token));
      }) }, "Rotate token"), del(`/v1/workers/${w.id}`, `worker ${w.name}`))))),
    workerForm];
}

// ---------------------------------------------------------------------------------------
// Audit log

function changesOf(changes) {
  if (!changes) return "";
  return Object.entries(changes).map(([name, change]) => {
    const shown = (v) => (v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v));
    return change && typeof change === "object" && ("from" in change || "to" in change)
      ? `${name}: ${shown(change.from)} → ${shown(change.to)}`
      : `${name}: ${shown(change)}`;
  }).join("; ");
}

export async function auditView(params) {
  const filters = { action: params.get("action") || "", actor_id: params.get("actor_id") || "", since: params.get("since") || "" };
  const found = await api("GET", `/v1/workspaces/${wid()}/audit`, null, { ...filters, limit: 50, cursor: params.get("cursor") || "" });
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
  const who = (x) => [x.type, x.id ? h("div", {}, h("code", { className: "id nowrap", title: x.id }, x.id.slice(0, 8))) : null];
  const rows = found.data.map((e) => h("tr", {},
    h("td", { className: "nowrap" }, when(e.occurred_at)), h("td", { className: "nowrap" }, h("code", {}, e.action)), h("td", {}, who(e.actor)),
    h("td", {}, who(e.target)), h("td", {}, badge(e.outcome)),
    h("td", { className: "hint changes" }, changesOf(e.changes)), h("td", {}, h("code", { className: "id" }, e.request_id))));
  const more = found.next_cursor ? h("a", { href: "#/audit?" + new URLSearchParams({ ...Object.fromEntries(Object.entries(filters).filter(([, x]) => x)), cursor: found.next_cursor }).toString() }, "Older events →") : null;
  return [h("h1", {}, "Audit log"), form, table(["When", "Action", "Actor", "Target", "Outcome", "Changes", "Request id"], rows, "No events match."), more];
}

// ---------------------------------------------------------------------------------------
// Quotas

const RESOURCES = {
  backups_per_workspace: "Backups",
  workers_per_workspace: "Workers",
  api_keys_per_workspace: "API keys",
  members_per_workspace: "Members",
  storage_bytes: "Storage",
};

export async function quotasView() {
  const quotas = await api("GET", `/v1/workspaces/${wid()}/quotas`);
  const rows = quotas.data.map((q) => {
    const name = RESOURCES[q.resource] || q.resource.replace(/_/g, " ");
    const unit = q.resource === "storage_bytes" ? bytes : (n) => String(n);
    const gauge = q.limit
      ? h("meter", { min: 0, max: q.limit, value: q.usage, high: q.limit * 0.9, "aria-label": `${name} usage` })
      : h("span", { className: "muted" }, "unlimited");
    return h("tr", { "data-resource": q.resource }, h("td", {}, name), h("td", {}, gauge),
      h("td", {}, q.limit ? `${unit(q.usage)} of ${unit(q.limit)}` : `${unit(q.usage)} used, no limit`));
  });
  return [h("h1", {}, "Quotas"), table(["Resource", "Usage", "Used"], rows)];
}
