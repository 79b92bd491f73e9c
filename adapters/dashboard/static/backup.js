// Backups: the list with each backup's health, one backup's page (runs, artifacts, its
// snapshots, retention explained, configuration), and one run's page.

import { all, api } from "./api.js";
import { artifactsTable, credentialsOf, targetFields, targetOf } from "./artifacts.js";
import { nextRuns } from "./cron.js";
import { act, badge, bytes, field, formValues, h, inZone, onSubmit, page, select, shortId, switched, table, when, wid } from "./ui.js";

const HEALTH = { ok: "ok", late: "late", failing: "failing", never: "never run" };

async function lastRun(backup) {
  try {
    const found = await api("GET", `/v1/backups/${backup.id}/runs`, null, { limit: 1 });
    return found.data[0] || null;
  } catch {
    return null;
  }
}

function nextRunOf(b) {
  if (!b.schedule) return "no schedule";
  if (!b.next_run_at) return "—";
  return inZone(b.next_run_at, b.schedule.timezone);
}

export async function backupsView() {
  const [backups, health] = await Promise.all([all(`/v1/workspaces/${wid()}/backups`), all(`/v1/workspaces/${wid()}/health`).catch(() => [])]);
  const healthOf = Object.fromEntries(health.map((x) => [x.backup_id, x]));
  const runs = await Promise.all(backups.map(lastRun));
  const rows = backups.map((b, i) => {
    const x = healthOf[b.id];
    return h("tr", { "data-backup": b.id },
      h("td", {}, h("a", { href: `#/backups/${b.id}` }, b.name)),
      h("td", {}, b.kind, b.format === "snapshot" ? h("div", { className: "hint" }, "snapshots") : null),
      h("td", {}, badge(b.state), b.paused ? [" ", badge("paused")] : null),
      h("td", { "data-health": x ? x.status : "" }, x ? [badge(`health-${x.status}`, HEALTH[x.status] || x.status),
        x.last_success_at ? h("div", { className: "hint" }, `last success ${when(x.last_success_at)}`) : null] : "—"),
      h("td", {}, nextRunOf(b)),
      h("td", {}, runs[i] ? [h("a", { href: `#/runs/${runs[i].id}` }, badge(runs[i].state)), " ", when(runs[i].finished_at || runs[i].created_at)] : "never run"));
  });
  const create = h("form", { className: "card", id: "backup-form", onsubmit: onSubmit(async (_f, v) => {
    const created = await api("POST", `/v1/workspaces/${wid()}/backups`, { name: v.name, kind: v.kind });
    location.hash = `#/backups/${created.id}`;
  }) }, h("h2", {}, "Create a backup"),
  h("div", { className: "row" },
    field("Name", h("input", { name: "name", required: true, maxLength: 100 })),
    field("Kind", select("kind", [["cloud", "cloud — the service reads an S3 bucket or PostgreSQL"], ["local", "local — a worker on your machine"], ["manual", "manual — you upload artifacts"]], "cloud"))),
  h("button", { type: "submit" }, "Create backup"));
  return [h("h1", {}, "Backups"), table(["Name", "Kind", "State", "Health", "Next run", "Last run"], rows, "No backups yet: create one below."), create];
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

function cancelButton(r, after) {
  return ["queued", "running"].includes(r.state)
    ? h("button", { type: "button", className: "secondary", onclick: () => act(async () => { await api("POST", `/v1/runs/${r.id}/cancel`); await after(); }) }, "Cancel")
    : null;
}

function runsTable(runs) {
  return table(["Run", "State", "Trigger", "Started", "Finished", "Progress", "Artifacts", ""], runs.map((r) => h("tr", { "data-run": r.id, "data-state": r.state },
    h("td", {}, h("a", { href: `#/runs/${r.id}` }, shortId(r.id))),
    h("td", {}, badge(r.state), r.error ? h("div", { className: "hint" }, r.error) : null),
    h("td", {}, r.trigger),
    h("td", {}, when(r.started_at || r.created_at)),
    h("td", {}, when(r.finished_at)),
    h("td", {}, progressOf(r)),
    h("td", {}, `${r.artifact_count} (${bytes(r.bytes)})`),
    h("td", {}, cancelButton(r, () => refreshRuns(r.backup_id))))), "No runs yet.");
}

async function refreshRuns(backupId) {
  const holder = document.getElementById("runs");
  if (!holder) return;
  const found = await api("GET", `/v1/backups/${backupId}/runs`, null, { limit: 20 });
  if (!holder.isConnected) return;
  holder.replaceChildren(runsTable(found.data));
  holder.dataset.updated = new Date().toISOString();
  // When a run finishes, its artifacts appear: redraw them too (only then).
  const finished = found.data.filter((r) => !["queued", "running"].includes(r.state)).map((r) => r.id).join();
  const artifacts = document.getElementById("backup-artifacts");
  if (artifacts && holder.dataset.finished !== undefined && holder.dataset.finished !== finished) {
    artifacts.replaceChildren(...(await artifactsTable((a) => a.backup_id === backupId)));
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

/** What retention does with each run now: kept (and why) or expiring. */
async function retentionExplained(backup) {
  if (!backup.retention) return null;
  const verdicts = await act(() => all(`/v1/backups/${backup.id}/retention`, {}, 200));
  if (!verdicts) return null;
  const rows = verdicts.map((v) => h("tr", { "data-verdict": v.keep ? "keep" : "expire" },
    h("td", {}, h("a", { href: `#/runs/${v.run_id}` }, shortId(v.run_id))),
    h("td", {}, when(v.finished_at)),
    h("td", {}, v.keep ? badge("succeeded", "kept") : badge("failed", "expiring"), v.reasons.includes("held") ? [" ", badge("held", "held")] : null),
    h("td", {}, v.reasons.length ? v.reasons.join(", ") : "—"),
    h("td", {}, when(v.expires_at))));
  return h("section", { id: "retention-explained" }, h("h2", {}, "Retention, explained"),
    h("p", { className: "hint" }, "What the retention job does with each run now; it removes exactly the expiring ones."),
    table(["Run", "Finished", "Verdict", "Why kept", "Kept until"], rows, "No run with artifacts yet."));
}

/** A snapshot backup's snapshots: each run with what it added, and how to restore it. */
async function snapshotsOf(backup) {
  if (backup.format !== "snapshot") return null;
  const runs = await act(() => all(`/v1/backups/${backup.id}/runs`, {}, 200)) || [];
  const rows = runs.filter((r) => r.state === "succeeded").map((r) => h("tr", { "data-snapshot": r.id },
    h("td", {}, h("a", { href: `#/runs/${r.id}` }, shortId(r.id))),
    h("td", {}, when(r.finished_at)),
    h("td", {}, `${r.artifact_count} (${bytes(r.bytes)})`),
    h("td", {}, h("code", { className: "command" }, `strongroom restore ${r.id} --to DIR`))));
  return h("section", { id: "snapshots" }, h("h2", {}, "Snapshots"),
    h("p", { className: "hint" }, "End-to-end encrypted: only your key reads them, so the service shows what each snapshot stored, not its files. Restore one with the command line and your identity."),
    table(["Snapshot", "Taken", "New artifacts (stored)", "Restore"], rows, "No snapshot yet."));
}

function sourceForm(backup, patch) {
  const src = backup.source || { type: "s3" };
  const chooser = select("type", [["s3", "S3 bucket"], ["postgres", "PostgreSQL database"]], src.type);
  const groups = {
    s3: h("fieldset", { "data-type": "s3" }, targetFields("s3", src.type === "s3" ? src : {})),
    postgres: h("fieldset", { "data-type": "postgres" }, targetFields("postgres", src.type === "postgres" ? src : {})),
  };
  switched(chooser, groups);
  return h("form", { className: "card", id: "source-form", onsubmit: onSubmit(async (_f, v) => {
    const changes = { source: targetOf(v.type, v) };
    if (v.user || v.secret) changes.credentials = credentialsOf(v.type, v);
    await patch(changes);
  }) }, h("h2", {}, "Source and credentials"), field("Source type", chooser), groups.s3, groups.postgres,
  h("p", { className: "hint" }, backup.has_credentials ? "Credentials are stored (write-only: never shown again). Leave blank to keep them." : "No credentials stored yet."),
  h("button", { type: "submit" }, "Save source"));
}

function destinationForm(backup, patch) {
  const dest = backup.destination || { type: "service" };
  const chooser = select("type", [["service", "Strongroom's storage"], ["customer_s3", "Your own S3 bucket"]], dest.type);
  const groups = {
    service: h("fieldset", { "data-type": "service" }, h("p", { className: "hint" }, "Artifacts are stored, locked and served by Strongroom.")),
    customer_s3: h("fieldset", { "data-type": "customer_s3" }, targetFields("s3", dest.type === "customer_s3" ? dest : {}),
      h("p", { className: "hint" }, "Artifacts in your own bucket cannot be downloaded through Strongroom.")),
  };
  switched(chooser, groups);
  return h("form", { className: "card", id: "destination-form", onsubmit: onSubmit(async (_f, v) => {
    const changes = { destination: v.type === "service" ? { type: "service" } : { ...targetOf("s3", v), type: "customer_s3" } };
    if (v.type !== "service" && v.user) changes.destination_credentials = credentialsOf("s3", v);
    await patch(changes);
  }) }, h("h2", {}, "Destination"), field("Where artifacts go", chooser), groups.service, groups.customer_s3,
  h("button", { type: "submit" }, "Save destination"));
}

function retentionForm(backup, patch) {
  const retention = backup.retention || {};
  return h("form", { className: "card", id: "retention-form", onsubmit: onSubmit(async (_f, v) => {
    if (v.lock_for && v.lock_for !== "PT0S" && !confirm(`Artifacts will be write-once for ${v.lock_for}: nobody, not even an admin, can delete them or this backup before then. Continue?`)) return;
    await patch({ retention: { expire_after: v.expire_after, lock_for: v.lock_for || "PT0S" } });
  }) }, h("h2", {}, "Retention"),
  h("div", { className: "row" },
    durationField("expire_after", "Keep artifacts for", retention.expire_after, "ISO 8601 duration in weeks, days, hours: P30D, P4W, PT36H."),
    durationField("lock_for", "Lock artifacts for (write-once)", retention.lock_for || "PT0S", "PT0S: no lock.")),
  h("p", { className: "warning", role: "note" }, "Write-once: a locked artifact cannot be deleted or shortened by anyone — not by an admin, not by a stolen credential — until its lock ends. The backup and the workspace cannot be deleted while one of their artifacts is locked. Choose the lock with care."),
  h("button", { type: "submit" }, "Save retention"));
}

function scheduleForm(backup, patch) {
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
  return form;
}

export async function backupView(id) {
  const backup = await api("GET", `/v1/backups/${id}`);
  const patch = async (changes) => {
    await api("PATCH", `/v1/backups/${id}`, changes);
    await page.route();
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
    await page.route();
  }) }, label);

  const summary = h("section", { className: "card" },
    h("p", {}, "Kind: ", h("strong", {}, backup.kind), backup.format === "snapshot" ? " (snapshots)" : "", " · State: ", badge(backup.state), backup.paused ? [" ", badge("paused")] : null),
    h("p", {}, "Next run: ", h("strong", { id: "next-run-at" }, backup.next_run_at && backup.schedule ? inZone(backup.next_run_at, backup.schedule.timezone) : "none")),
    backup.state === "draft" ? h("p", { className: "hint" }, backup.kind === "cloud"
      ? "Draft: set a source, its credentials and a retention to activate it."
      : backup.kind === "local" ? "Draft: choose a worker and a retention to activate it." : "Draft: set a retention to activate it.") : null,
    backup.paused ? action("resume", "Resume") : action("pause", "Pause", "secondary"),
    backup.kind === "manual" ? action("run", "Start a manual run") : action("trigger", "Run now"),
    action("delete", "Delete backup", "danger"));

  const sections = [];
  if (backup.kind === "cloud") sections.push(sourceForm(backup, patch));
  if (backup.kind === "local") {
    const workers = await act(() => all("/v1/workers")) || [];
    sections.push(h("form", { className: "card", id: "worker-form", onsubmit: onSubmit(async (_f, v) => patch({ worker_id: v.worker_id || null })) },
      h("h2", {}, "Worker"),
      field("Worker that runs this backup", select("worker_id", [["", "none"], ...workers.map((w) => [w.id, w.name])], backup.worker_id || "")),
      h("p", { className: "hint" }, "Create workers under API keys & workers."),
      h("button", { type: "submit" }, "Save worker")));
  }
  if (backup.kind !== "manual") sections.push(scheduleForm(backup, patch));
  sections.push(retentionForm(backup, patch), destinationForm(backup, patch));

  const runsHolder = h("div", { id: "runs", "aria-live": "polite" }, h("p", {}, "Loading runs…"));
  const [artifacts, snapshots, explained] = await Promise.all([artifactsTable((a) => a.backup_id === id), snapshotsOf(backup), retentionExplained(backup)]);
  const result = [h("p", {}, h("a", { href: "#/backups" }, "← Backups")), h("h1", {}, backup.name), summary,
    h("h2", {}, "Runs"), h("p", { className: "hint" }, "Updated every two seconds."), runsHolder, snapshots,
    h("h2", {}, "Artifacts"), h("div", { id: "backup-artifacts" }, ...artifacts), explained, ...sections];
  setTimeout(() => act(() => refreshRuns(id)), 0);
  page.poller = setInterval(() => refreshRuns(id).catch(() => {}), 2000);
  return result;
}

export async function runView(id) {
  const run = await api("GET", `/v1/runs/${id}`);
  const backup = await act(() => api("GET", `/v1/backups/${run.backup_id}`));
  const facts = [
    ["Backup", backup ? h("a", { href: `#/backups/${backup.id}` }, backup.name) : shortId(run.backup_id)],
    ["State", [badge(run.state), run.cancel_requested ? " (cancel requested)" : ""]],
    ["Trigger", run.trigger], ["Attempt", String(run.attempt)],
    ["Created", when(run.created_at)], ["Started", when(run.started_at)], ["Finished", when(run.finished_at)],
    ["Progress", progressOf(run)], ["Artifacts", `${run.artifact_count} (${bytes(run.bytes)})`],
    ["Error", run.error || "—"], ["Id", h("code", {}, run.id)],
  ];
  return [h("p", {}, backup ? h("a", { href: `#/backups/${backup.id}` }, `← ${backup.name}`) : null), h("h1", {}, "Run ", shortId(run.id)),
    h("dl", { className: "facts card" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    cancelButton(run, page.route),
    backup && backup.format === "snapshot" && run.state === "succeeded" ? h("p", {}, "Restore this snapshot: ", h("code", { className: "command" }, `strongroom restore ${run.id} --to DIR`)) : null,
    h("h2", {}, "Artifacts"), ...(await artifactsTable((a) => a.run_id === id))];
}
