"""The data of ``scale.py``: one workspace set up over the HTTP API (its templates: a backup,
a run with an uploaded artifact, their audit events; a worker with a backup to claim; a few
scheduled backups; a backup decided by keep rules), then grown by SQL to each size.

Bulk rows are what the application would have written: every generated backup's ``body``
is the template's body, rendered by the wire presenter when the API wrote it, with the id,
the name and the times replaced (the same lengths, the same format); runs, artifacts and
audit events are copies of the API's own rows with new ids, times and names. Generated rows
are older than everything the API wrote, so the newest page is the API's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx2
import psycopg
from psycopg import sql

RETENTION = {"expire_after": "P3650D", "lock_for": "PT0S"}
KEEP_RULES = {"expire_after": "P1D", "lock_for": "PT0S", "keep": {"last": 3}}
TEMPLATE_NAME = "scale-0000000"  # generated names: scale-NNNNNNN, the same length
API_BACKUPS = 60  # newest backups made through the API: the first page is theirs
SCHEDULED = 10  # scheduled backups the scheduler's tick finds due
SMALL_BACKUPS = 10  # backups of each small workspace
CHUNK = 100_000  # generated rows per transaction
STAMP = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'  # the wire's instants (milliseconds, UTC)


@dataclass
class World:
    """The big workspace, its credentials and the ids the measurements use."""

    url: str  # the database
    port: int
    workspace_id: UUID
    token: str  # a session scoped to the workspace (admin)
    template_backup: UUID
    template_run: UUID
    template_artifact: UUID
    template_event: UUID
    worker_token: str
    claim_backup: UUID
    ruled_backup: UUID
    ruled_run: UUID
    scheduled: list[UUID] = field(default_factory=list)
    small_workspaces: int = 0
    server_pid: int = 0


def _ok(response: httpx2.Response, status: int, what: str) -> Any:
    if response.status_code != status:
        raise SystemExit(f"set-up: {what} answered {response.status_code}: {response.text}")
    return response.json()


def _backup(
    client: httpx2.Client, wid: UUID, auth: dict[str, str], name: str, **changes: Any
) -> UUID:
    kind = "local" if "worker_id" in changes else "manual"
    made = _ok(
        client.post(
            f"/v1/workspaces/{wid}/backups", json={"name": name, "kind": kind}, headers=auth
        ),
        201,
        "POST backups",
    )
    _ok(client.patch(f"/v1/backups/{made['id']}", json=changes, headers=auth), 200, "PATCH backup")
    return UUID(made["id"])


def _run_with_artifact(client: httpx2.Client, backup_id: UUID, auth: dict[str, str]) -> UUID:
    """A manual run with one uploaded, confirmed artifact; the run's id."""
    run = _ok(client.post("/v1/runs", json={"backup_id": str(backup_id)}, headers=auth), 201, "run")
    data = b"scale bench artifact"
    announce = {"name": "dump", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    plan = _ok(
        client.post(f"/v1/runs/{run['id']}/upload-url", json=announce, headers=auth), 201, "upload"
    )
    put = client.put(plan["url"], content=data, headers=plan.get("headers") or {})
    if put.status_code != 200:
        raise SystemExit(f"set-up: the upload answered {put.status_code}: {put.text}")
    _ok(client.post(f"/v1/runs/{run['id']}/confirm", headers=auth), 200, "confirm")
    return UUID(run["id"])


def set_up_workspace(client: httpx2.Client, url: str, port: int, wid: UUID, token: str) -> World:
    """Every template through the API, then the newest ``API_BACKUPS`` backups."""
    auth = {"Authorization": f"Bearer {token}"}
    template = _backup(client, wid, auth, TEMPLATE_NAME, retention=RETENTION)
    run_id = _run_with_artifact(client, template, auth)
    worker = _ok(client.post("/v1/workers", json={"name": "scale"}, headers=auth), 201, "worker")
    on_worker = {"worker_id": worker["id"], "retention": RETENTION}
    claim_backup = _backup(client, wid, auth, "claimed", **on_worker)
    schedule = {"cron": "0 3 * * *", "timezone": "UTC"}
    scheduled = [
        _backup(client, wid, auth, f"scheduled-{n}", schedule=schedule, **on_worker)
        for n in range(SCHEDULED)
    ]
    ruled = _backup(client, wid, auth, "ruled", retention=KEEP_RULES)
    ruled_run = _run_with_artifact(client, ruled, auth)
    for number in range(API_BACKUPS):
        _backup(client, wid, auth, f"api-{number}", retention=RETENTION)
    with psycopg.connect(url, autocommit=True) as conn:
        artifact = conn.execute("SELECT id FROM artifacts WHERE run_id = %s", (run_id,)).fetchone()
        event = conn.execute(
            "SELECT id FROM audit_events WHERE action = 'backup.create' AND target_id = %s",
            (str(template),),
        ).fetchone()
    assert artifact is not None
    assert event is not None
    return World(
        url=url,
        port=port,
        workspace_id=wid,
        token=token,
        template_backup=template,
        template_run=run_id,
        template_artifact=artifact[0],
        template_event=event[0],
        worker_token=worker["token"],
        claim_backup=claim_backup,
        ruled_backup=ruled,
        ruled_run=ruled_run,
        scheduled=scheduled,
    )


def count_backups(world: World) -> int:
    with psycopg.connect(world.url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM backups WHERE workspace_id = %s", (world.workspace_id,)
        ).fetchone()
    return int(row[0]) if row else 0


# Bulk growth.

_GENERATE = """
CREATE TEMP TABLE g ON COMMIT DROP AS
SELECT i, gen_random_uuid() AS bid, gen_random_uuid() AS rid, gen_random_uuid() AS aid,
       'scale-' || lpad(i::text, 7, '0') AS name,
       date_trunc('milliseconds', t.created_at) - i * interval '1 second' AS at
FROM generate_series(%(lo)s::int, %(hi)s::int) AS i, backups AS t WHERE t.id = %(backup)s
"""
_BACKUPS = """
INSERT INTO backups (id, workspace_id, name, name_key, kind, state, paused, source,
    sealed_credentials, schedule_cron, schedule_timezone, worker_id,
    retention_expire_after_seconds, retention_lock_for_seconds, destination,
    sealed_destination_credentials, next_run_at, created_at, updated_at, body, encryption,
    retention_keep, freshness_max_age_seconds, drill, next_drill_at)
SELECT g.bid, t.workspace_id, g.name, g.name, t.kind, t.state, t.paused, t.source,
    t.sealed_credentials, t.schedule_cron, t.schedule_timezone, t.worker_id,
    t.retention_expire_after_seconds, t.retention_lock_for_seconds, t.destination,
    t.sealed_destination_credentials, t.next_run_at, g.at, g.at,
    replace(replace(replace(replace(t.body, t.id::text, g.bid::text), %(name)s, g.name),
        to_char(t.created_at AT TIME ZONE 'UTC', %(stamp)s),
        to_char(g.at AT TIME ZONE 'UTC', %(stamp)s)),
        to_char(t.updated_at AT TIME ZONE 'UTC', %(stamp)s),
        to_char(g.at AT TIME ZONE 'UTC', %(stamp)s)),
    t.encryption, t.retention_keep, t.freshness_max_age_seconds, t.drill, t.next_drill_at
FROM g, backups AS t WHERE t.id = %(backup)s
"""
_RUNS = """
INSERT INTO runs (id, workspace_id, backup_id, state, trigger, worker_id, created_at,
    started_at, finished_at, artifact_count, bytes, error, attempt, lease_expires_at,
    cancel_requested, progress)
SELECT g.rid, t.workspace_id, g.bid, t.state, t.trigger, t.worker_id, g.at, g.at,
    g.at + (t.finished_at - t.started_at), t.artifact_count, t.bytes, t.error, t.attempt,
    t.lease_expires_at, t.cancel_requested, t.progress
FROM g, runs AS t WHERE t.id = %(run)s
"""
_ARTIFACTS = """
INSERT INTO artifacts (id, workspace_id, backup_id, run_id, name, size, sha256, state, storage,
    object_key, upload_id, created_at, expires_at, locked_until, verification, verified_at, held)
SELECT g.aid, t.workspace_id, g.bid, g.rid, t.name, t.size, t.sha256, t.state, t.storage,
    replace(replace(replace(t.object_key, t.backup_id::text, g.bid::text), t.run_id::text,
        g.rid::text), t.id::text, g.aid::text),
    t.upload_id, g.at, g.at + (t.expires_at - t.created_at), g.at + (t.locked_until - t.created_at),
    t.verification, g.at + (t.verified_at - t.created_at), t.held
FROM g, artifacts AS t WHERE t.id = %(artifact)s
"""
_EVENTS = """
INSERT INTO audit_events (id, workspace_id, occurred_at, actor_type, actor_id, action,
    target_type, target_id, request_id, outcome, changes)
SELECT gen_random_uuid(), t.workspace_id, g.at, t.actor_type, t.actor_id, t.action,
    t.target_type, g.bid::text, 'req_' || gen_random_uuid(), t.outcome,
    replace(t.changes::text, %(name)s, g.name)::json
FROM g, audit_events AS t WHERE t.id = %(event)s
"""


def grow_big(world: World, target: int) -> int:
    """Generated backups (each with a run, an artifact and its audit event) until the big
    workspace holds ``target`` backups; how many were added."""
    have = count_backups(world)
    with psycopg.connect(world.url) as conn:
        row = conn.execute(
            "SELECT coalesce(max(substr(name, 7)::int), 0) FROM backups"
            " WHERE workspace_id = %s AND name LIKE 'scale-%%'",
            (world.workspace_id,),
        ).fetchone()
    start = int(row[0]) if row else 0
    params = {
        "backup": world.template_backup,
        "run": world.template_run,
        "artifact": world.template_artifact,
        "event": world.template_event,
        "name": TEMPLATE_NAME,
        "stamp": STAMP,
    }
    added = 0
    while have + added < target:
        count = min(CHUNK, target - have - added)
        lo = start + added + 1
        with psycopg.connect(world.url) as conn:
            conn.execute("SET LOCAL synchronous_commit = off")
            conn.execute(_GENERATE, {**params, "lo": lo, "hi": lo + count - 1})
            for statement in (_BACKUPS, _RUNS, _ARTIFACTS, _EVENTS):
                conn.execute(statement, params)
        added += count
    return added


_WORKSPACES = """
CREATE TEMP TABLE w ON COMMIT DROP AS
SELECT gen_random_uuid() AS wid, i FROM generate_series(%(lo)s::int, %(hi)s::int) AS i;
INSERT INTO workspaces (id, name, idp_org_id, customer_id, storage_namespace, created_by,
    billing_state, quota_overrides, backup_count, created_at, updated_at)
SELECT w.wid, 'small-' || w.i, t.idp_org_id, t.customer_id,
    'ws-' || replace(w.wid::text, '-', ''), t.created_by, t.billing_state, t.quota_overrides, 0,
    t.created_at, t.updated_at
FROM w, workspaces AS t WHERE t.id = %(workspace)s;
INSERT INTO memberships (workspace_id, user_id, role, joined_at, workspace_created_at)
SELECT w.wid, m.user_id, m.role, m.joined_at, m.workspace_created_at
FROM w, memberships AS m WHERE m.workspace_id = %(workspace)s;
INSERT INTO backups (id, workspace_id, name, name_key, kind, state, paused, source,
    sealed_credentials, schedule_cron, schedule_timezone, worker_id,
    retention_expire_after_seconds, retention_lock_for_seconds, destination,
    sealed_destination_credentials, next_run_at, created_at, updated_at, body, encryption,
    retention_keep, freshness_max_age_seconds, drill, next_drill_at)
SELECT s.bid, w.wid, s.name, s.name, t.kind, t.state, t.paused, t.source,
    t.sealed_credentials, t.schedule_cron, t.schedule_timezone, t.worker_id,
    t.retention_expire_after_seconds, t.retention_lock_for_seconds, t.destination,
    t.sealed_destination_credentials, t.next_run_at, s.at, s.at,
    replace(replace(replace(replace(replace(t.body, t.id::text, s.bid::text),
        t.workspace_id::text, w.wid::text), %(name)s, s.name),
        to_char(t.created_at AT TIME ZONE 'UTC', %(stamp)s),
        to_char(s.at AT TIME ZONE 'UTC', %(stamp)s)),
        to_char(t.updated_at AT TIME ZONE 'UTC', %(stamp)s),
        to_char(s.at AT TIME ZONE 'UTC', %(stamp)s)),
    t.encryption, t.retention_keep, t.freshness_max_age_seconds, t.drill, t.next_drill_at
FROM w, backups AS t,
LATERAL (SELECT gen_random_uuid() AS bid, 'scale-' || lpad(j::text, 7, '0') AS name,
                date_trunc('milliseconds', t.created_at) - j * interval '1 second' AS at
         FROM generate_series(1, %(per)s::int) AS j
         WHERE w.wid IS NOT NULL) AS s  -- correlated: new ids for every workspace
WHERE t.id = %(backup)s;
"""


def grow_small(world: World, workspaces: int) -> int:
    """Small workspaces beside the big one (``SMALL_BACKUPS`` backups each, a membership of
    the same person) until there are ``workspaces``; how many were added."""
    added = 0
    while world.small_workspaces < workspaces:
        count = min(CHUNK // SMALL_BACKUPS, workspaces - world.small_workspaces)
        lo = world.small_workspaces + 1
        params = {
            "lo": lo,
            "hi": lo + count - 1,
            "workspace": world.workspace_id,
            "backup": world.template_backup,
            "name": TEMPLATE_NAME,
            "stamp": STAMP,
            "per": SMALL_BACKUPS,
        }
        with psycopg.connect(world.url) as conn:
            for statement in _WORKSPACES.split(";\n"):
                if statement.strip():
                    conn.execute(statement, params)
        world.small_workspaces += count
        added += count
    return added


def settle(url: str) -> None:
    """VACUUM ANALYZE every grown table and a checkpoint, as after a quiet night."""
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("workspaces", "memberships", "backups", "runs", "artifacts", "audit_events"):
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(table)))
        conn.execute("CHECKPOINT")


def check_bodies(world: World, sample: int = 20) -> None:
    """Generated bodies are valid JSON naming their own row (id, name, created_at)."""
    with psycopg.connect(world.url) as conn:
        rows = conn.execute(
            "SELECT id, name, created_at, body FROM backups WHERE name LIKE 'scale-%%'"
            " ORDER BY random() LIMIT %s",
            (sample,),
        ).fetchall()
    for backup_id, name, created_at, body in rows:
        parsed = json.loads(body)
        stamp = created_at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{created_at.microsecond // 1000:03d}Z"
        if (parsed["id"], parsed["name"], parsed["created_at"]) != (str(backup_id), name, stamp):
            raise SystemExit(f"generated body does not match its row {backup_id}: {body}")
