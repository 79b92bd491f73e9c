// Artifacts: what each one is (backup, run, sha256, verification, lock, hold), download,
// delete, and for a cloud backup's artifact a service restore into a bucket or database.

import { all, api } from "./api.js";
import { act, badge, bytes, field, h, onSubmit, page, select, shortId, table, when, wid } from "./ui.js";

const VERIFIED = { ok: "verified", mismatch: "differs", missing: "missing", pending: "pending" };

function verification(a) {
  if (!a.verification) return h("span", { className: "muted" }, "not yet");
  return [badge(a.verification === "ok" ? "succeeded" : a.verification === "pending" ? "pending" : "failed", VERIFIED[a.verification] || a.verification),
    a.verified_at ? h("div", { className: "hint nowrap" }, when(a.verified_at)) : null];
}

/** The fields of a bucket (`s3`) or a database (`postgres`) and their credentials. */
export function targetFields(type, values = {}) {
  if (type === "s3") {
    return [h("div", { className: "row" },
      field("S3 endpoint", h("input", { name: "endpoint", type: "url", required: true, value: values.endpoint || "", placeholder: "https://s3.example.com" })),
      field("Bucket", h("input", { name: "bucket", required: true, value: values.bucket || "" })),
      field("Prefix (optional)", h("input", { name: "prefix", value: values.prefix || "" }))),
    h("div", { className: "row" },
      field("Access key id", h("input", { name: "user", autocomplete: "off" })),
      field("Secret access key", h("input", { name: "secret", type: "password", autocomplete: "new-password" })))];
  }
  return [h("div", { className: "row" },
    field("PostgreSQL host", h("input", { name: "host", required: true, value: values.host || "" })),
    field("Port", h("input", { name: "port", type: "number", required: true, min: 1, max: 65535, value: values.port || 5432 })),
    field("Database", h("input", { name: "database", required: true, value: values.database || "" }))),
  h("div", { className: "row" },
    field("User name", h("input", { name: "user", autocomplete: "off" })),
    field("Password", h("input", { name: "secret", type: "password", autocomplete: "new-password" })))];
}

export function targetOf(type, v) {
  return type === "s3"
    ? { type: "s3", endpoint: v.endpoint, bucket: v.bucket, ...(v.prefix ? { prefix: v.prefix } : {}) }
    : { type: "postgres", host: v.host, port: Number(v.port), database: v.database };
}

export function credentialsOf(type, v) {
  return type === "s3" ? { access_key_id: v.user, secret_access_key: v.secret } : { username: v.user, password: v.secret };
}

function restoreForm(artifact, backup, holder) {
  const type = backup.source ? backup.source.type : "s3";
  const status = h("div", { id: "restore-status", "aria-live": "polite" });
  const form = h("form", { className: "card", id: "restore-form", onsubmit: onSubmit(async (_f, v) => {
    const restore = await api("POST", `/v1/artifacts/${artifact.id}/restores`, { target: targetOf(type, v), credentials: credentialsOf(type, v) });
    const show = (r) => status.replaceChildren(h("p", {}, "Restore ", shortId(r.id), ": ", badge(r.state), r.error ? ` ${r.error}` : ""));
    show(restore);
    for (let i = 0; i < 300 && ["queued", "running"].includes(restore.state); i++) {
      await new Promise((done) => setTimeout(done, 2000));
      if (!status.isConnected) return;
      Object.assign(restore, await api("GET", `/v1/restores/${restore.id}`));
      show(restore);
    }
  }) }, h("h2", {}, `Restore ${artifact.name}`),
  h("p", { className: "hint" }, type === "s3"
    ? "The service copies the artifact's objects into this bucket (created when missing), under the prefix."
    : "The service loads the dump into this existing, empty database."),
  targetFields(type), h("button", { type: "submit" }, "Start restore"),
  h("button", { type: "button", className: "secondary", onclick: () => holder.replaceChildren() }, "Cancel"), status);
  holder.replaceChildren(form);
  form.querySelector("input").focus();
}

/** The table of the workspace's artifacts that `keep` accepts. */
export async function artifactsTable(keep = () => true) {
  const [artifacts, backups] = await Promise.all([all(`/v1/workspaces/${wid()}/artifacts`), all(`/v1/workspaces/${wid()}/backups`)]);
  const byId = Object.fromEntries(backups.map((b) => [b.id, b]));
  const now = Date.now();
  const restoreHolder = h("div", { className: "restore-holder" });
  const rows = artifacts.filter(keep).map((a) => {
    const backup = byId[a.backup_id];
    const cloud = backup && backup.kind === "cloud" && a.state === "available";
    return h("tr", { "data-artifact": a.id },
      h("td", {}, h("span", { className: "name" }, a.name), h("div", { className: "hint" }, "run ", h("a", { href: `#/runs/${a.run_id}` }, shortId(a.run_id)))),
      h("td", {}, backup ? h("a", { href: `#/backups/${backup.id}` }, backup.name) : shortId(a.backup_id)),
      h("td", { className: "nowrap" }, bytes(a.size)),
      h("td", {}, h("code", { className: "digest", title: a.sha256 }, `${a.sha256.slice(0, 12)}…`)),
      h("td", {}, badge(a.state), a.held ? [" ", badge("held", "held")] : null, a.storage === "customer" ? h("div", { className: "hint" }, "your bucket") : null),
      h("td", {}, verification(a)),
      h("td", {}, a.locked_until && Date.parse(a.locked_until) > now ? when(a.locked_until) : "not locked"),
      h("td", {}, when(a.expires_at)),
      h("td", { className: "actions" },
        a.storage !== "customer" ? h("button", { type: "button", className: "secondary", "aria-label": `Download ${a.name}`, onclick: () => act(async () => {
          const link = await api("POST", `/v1/artifacts/${a.id}/download-url`);
          const anchor = h("a", { href: link.url, download: a.name });
          document.body.append(anchor);
          anchor.click();
          anchor.remove();
        }) }, "Download") : null,
        cloud ? h("button", { type: "button", className: "secondary", "aria-label": `Restore ${a.name}`, onclick: () => restoreForm(a, backup, restoreHolder) }, "Restore") : null,
        h("button", { type: "button", className: "danger", "aria-label": `Delete ${a.name}`, onclick: () => act(async () => {
          if (!confirm(`Delete artifact ${a.name}?`)) return;
          await api("DELETE", `/v1/artifacts/${a.id}`);
          await page.route();
        }) }, "Delete")));
  });
  return [table(["Name", "Backup", "Size", "SHA-256", "State", "Verification", "Locked until", "Expires", ""], rows, "No artifacts yet."), restoreHolder];
}

export async function artifactsView() {
  return [h("h1", {}, "Artifacts"), ...(await artifactsTable())];
}
