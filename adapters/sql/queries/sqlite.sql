-- Named queries only SQLite runs (see common.sql for the format).
--
-- SQLite has no row locks: a unit of work that locks or writes holds the database's write
-- lock (BEGIN IMMEDIATE) from that statement to its end, which serialises it with every
-- other writer. The /*lock*/ marker of common.sql's locking reads is therefore empty here.

-- name: ping
SELECT count(*) AS answer FROM sqlite_schema

-- name: role_list
-- Slugs in code-point order, as every adapter sorts them.
SELECT slug, name, permissions FROM roles WHERE workspace_id = :workspace_id
ORDER BY slug

-- name: backup_insert_counted
-- backup_insert, only while the workspace's backup count is below :usage_below: the
-- compare-and-set of a create decided on a count read before (add_counted). The unit
-- holds the database's one writer.
INSERT INTO backups (
/*fragment backup_insert_columns*/
)
SELECT /*fragment backup_insert_values*/
FROM workspaces
WHERE id = :workspace_id AND backup_count < :usage_below

-- name: run_announce
-- One process serves a SQLite database: its in-process signals wake waiting claims after
-- the commit, so there is nothing to say to the database.
SELECT NULL AS announced

-- name: run_workers_with_queued
-- The workspaces and workers among :worker_ids (a JSON array of uuids) that have a queued
-- run of a backup assigned to them: every claim waiting in the process re-checked at once.
SELECT DISTINCT backups.workspace_id, backups.worker_id
FROM runs
JOIN backups ON backups.workspace_id = runs.workspace_id AND backups.id = runs.backup_id
WHERE runs.state = 'queued' AND backups.worker_id IN (SELECT value FROM json_each(:worker_ids))

-- name: session_find_with_backups_body
-- session_find_with_backups as one row: the session's columns (g_*), the page's items as
-- the API's JSON texts joined by commas in list order (items; NULL when none), and the
-- sort key of the last one shown when another follows (next_created_at, next_id): the
-- read model of GET /v1/workspaces/{wid}/backups. No row without a session; no items
-- unless :workspace_id is the session's workspace. :limit (:page_size + 1) is unused here.
-- Each body was written with its row (0015). Both scans walk
-- backups_by_workspace in the list's order, so nothing is sorted or copied: the items are
-- the first :page_size bodies (group_concat reads an ordered subquery, SQLite 3.40's idiom
-- for an ordered aggregate), and last holds the rows at positions :page_size and
-- :page_size + 1 from the index alone (two of them: another follows the page). Every step
-- that takes rows by position orders them itself. The contract test compares every page
-- with the presenter's, in order.
WITH g AS MATERIALIZED (
    SELECT /*fragment session_grant_columns*/
/*fragment session_grant_joins*/
    WHERE s.token_hash = :token_hash
),
last AS MATERIALIZED (
    SELECT created_at, id FROM backups
    WHERE workspace_id = :workspace_id
      AND workspace_id = (SELECT g_workspace_id FROM g) /*filters*/
    ORDER BY created_at DESC, id DESC LIMIT 2 OFFSET :page_size - 1
),
next AS (
    SELECT created_at, id FROM last WHERE (SELECT count(*) FROM last) = 2
    ORDER BY created_at DESC, id DESC LIMIT 1
)
SELECT g.*,
       (SELECT group_concat(body, ',') FROM (
            SELECT body FROM backups
            WHERE workspace_id = :workspace_id
              AND workspace_id = (SELECT g_workspace_id FROM g) /*filters*/
            ORDER BY created_at DESC, id DESC LIMIT :page_size)) AS items,
       (SELECT created_at FROM next) AS next_created_at, (SELECT id FROM next) AS next_id
FROM g

-- name: backup_create_counted
-- backup_insert_counted and the backup's event as a transaction of its own, its statements
-- in one hop to the database's thread: the event only if the backup was added
-- (``changes()`` is the count of the statement before: the backup's insert, which adds a
-- row only if none has its id); created is 1 when the event was added, so when both were
-- (a second run of the same create writes nothing twice, as on PostgreSQL, and answers 0:
-- the repository looks again).
INSERT INTO backups (
/*fragment backup_insert_columns*/
)
SELECT /*fragment backup_insert_values*/
FROM workspaces
WHERE id = :workspace_id AND backup_count < :usage_below
  AND NOT EXISTS (SELECT 1 FROM backups WHERE id = :id);
INSERT INTO audit_events (
    id, workspace_id, occurred_at, actor_type, actor_id, action, target_type, target_id,
    request_id, outcome, changes
)
SELECT :event_id, :workspace_id, :occurred_at, :actor_type, :actor_id, :action,
       :target_type, :target_id, :request_id, :outcome, :changes
WHERE changes() = 1;
SELECT changes() AS created;

-- name: artifact_get_many
-- The artifacts of a workspace among :ids (a JSON array of uuids).
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE workspace_id = :workspace_id AND id IN (SELECT value FROM json_each(:ids))

-- name: artifact_lock_until
-- Referenced artifacts take the referencing run's lock (chosen by the domain).
UPDATE artifacts SET locked_until = :locked_until
WHERE workspace_id = :workspace_id AND id IN (SELECT value FROM json_each(:ids))

-- name: run_references_add
INSERT OR IGNORE INTO run_references (workspace_id, run_id, artifact_id)
SELECT :workspace_id, :run_id, value FROM json_each(:ids)

-- name: retention_lock_artifacts
-- The artifacts the keep rules gave up (ids: a JSON array), in the writer's transaction.
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE workspace_id = :workspace_id AND id IN (SELECT value FROM json_each(:ids))
ORDER BY id

-- name: audit_insert_many
-- audit_insert of several events, a JSON array a column (a unit of work's events).
INSERT INTO audit_events (
    id, workspace_id, occurred_at, actor_type, actor_id, action, target_type, target_id,
    request_id, outcome, changes
)
SELECT value, json_extract(:workspace_id, '$[' || key || ']'), json_extract(:occurred_at, '$[' || key || ']'),
       json_extract(:actor_type, '$[' || key || ']'), json_extract(:actor_id, '$[' || key || ']'), json_extract(:action, '$[' || key || ']'),
       json_extract(:target_type, '$[' || key || ']'), json_extract(:target_id, '$[' || key || ']'), json_extract(:request_id, '$[' || key || ']'),
       json_extract(:outcome, '$[' || key || ']'), json_extract(:changes, '$[' || key || ']')
FROM json_each(:id)

-- name: retention_store_artifacts
-- The removed artifacts' state and upload as the domain set them (a JSON array a column).
UPDATE artifacts
SET state = json_extract(:state, '$[' || u.key || ']'),
    upload_id = json_extract(:upload_id, '$[' || u.key || ']')
FROM json_each(:id) AS u
WHERE artifacts.workspace_id = :workspace_id AND artifacts.id = u.value

-- name: retention_store_runs
-- Their runs' counts as the domain set them (a JSON array a column).
UPDATE runs
SET artifact_count = json_extract(:artifact_count, '$[' || u.key || ']'),
    bytes = json_extract(:bytes, '$[' || u.key || ']')
FROM json_each(:id) AS u
WHERE runs.workspace_id = :workspace_id AND runs.id = u.value

-- name: retention_lock_runs
-- Their runs (their artifact_count and bytes change).
SELECT id, workspace_id, backup_id, state, trigger, worker_id, created_at, started_at,
       finished_at, artifact_count, bytes, error, attempt, lease_expires_at,
       cancel_requested, progress
FROM runs
WHERE workspace_id = :workspace_id AND id IN (SELECT value FROM json_each(:ids))
ORDER BY id

-- name: delivery_take
-- Due deliveries, oldest first, leased to this sender until :lease_until (their next
-- attempt moves there, so a sender that dies leaves them due again); the unit holds the
-- database's one writer.
UPDATE webhook_deliveries SET next_attempt_at = :lease_until
WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE state = 'pending' AND next_attempt_at <= :now
    ORDER BY next_attempt_at, id
    LIMIT :limit
)
RETURNING id, webhook_id, workspace_id, event, payload, created_at, state, attempts,
          :now AS next_attempt_at,
          (SELECT w.url FROM webhooks AS w WHERE w.id = webhook_id) AS url,
          (SELECT w.sealed_secret FROM webhooks AS w WHERE w.id = webhook_id) AS sealed_secret

-- name: worker_find_many
-- The workers whose credentials hash to one of :token_hashes (a JSON array): the
-- credentials of many concurrent long polls in one look.
SELECT id, workspace_id, name, token_hash, created_at, last_seen_at
FROM workers
WHERE token_hash IN (SELECT value FROM json_each(:token_hashes))

-- name: worker_touch_many
-- worker_touch of every worker among :ids (a JSON array of uuids), in one statement.
UPDATE workers
SET last_seen_at = :at
WHERE id IN (SELECT value FROM json_each(:ids))
  AND (last_seen_at IS NULL OR last_seen_at < :stale_before)
