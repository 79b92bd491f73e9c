-- Named queries only PostgreSQL runs (see common.sql for the format).
--
-- Locks are FOR NO KEY UPDATE: they serialise the counted inserts and read-modify-writes
-- that take them, yet let other transactions insert rows that reference the locked row.

-- name: ping
SELECT 1 AS answer

-- name: role_list
-- Slugs in code-point order, as every adapter sorts them.
SELECT slug, name, permissions FROM roles WHERE workspace_id = :workspace_id
ORDER BY slug COLLATE "C"

-- name: backup_insert_counted
-- backup_insert, only while the workspace's backup count is below :usage_below: the
-- compare-and-set of a create decided on a count read before (add_counted). The lock makes
-- a concurrent create wait, then compare with the count that create left.
WITH w AS (
    SELECT id FROM workspaces
    WHERE id = :workspace_id AND backup_count < :usage_below
    FOR NO KEY UPDATE
)
INSERT INTO backups (
/*fragment backup_insert_columns*/
)
SELECT /*fragment backup_insert_values*/
FROM w

-- name: run_announce
-- The waiters of every process hear of new queued work (:payload names the workspace and
-- the worker that can take it): the notification is delivered when the transaction
-- commits, and never if it rolls back.
SELECT pg_notify('strongroom_runs', CAST(:payload AS text)) AS announced

-- name: run_workers_with_queued
-- The workspaces and workers among :worker_ids (a text[] of uuids) that have a queued run
-- of a backup assigned to them: every claim waiting in a process re-checked at once. It
-- walks the queued runs (runs_queued), so its cost follows the queue's length.
SELECT DISTINCT backups.workspace_id, backups.worker_id
FROM runs
JOIN backups ON backups.workspace_id = runs.workspace_id AND backups.id = runs.backup_id
WHERE runs.state = 'queued' AND backups.worker_id = ANY(CAST(:worker_ids AS uuid[]))

-- name: session_find_with_backups_body
-- session_find_with_backups as one row: the session's columns (g_*), the page's items as
-- the API's JSON texts joined by commas in list order (items; NULL when none), and the
-- sort key of the last one shown when another follows (next_created_at, next_id): the
-- read model of GET /v1/workspaces/{wid}/backups. No row without a session; no items
-- unless :workspace_id is the session's workspace. :limit is :page_size + 1. Written
-- tight: psycopg parses a statement over 4 096 characters again at every execution
-- instead of caching it. Each body was written with its row (0015).
-- The page's workspace comes only from g (the subquery, an unknown at planning time),
-- never from :workspace_id compared with the column: a known id let a custom plan read
-- the workspace's row count from the statistics, so in a workspace of a million backups
-- every custom plan looked cheaper than the generic one and PostgreSQL planned the
-- statement again at every execution (1 ms of planning for 0.3 ms of execution).
WITH g AS (
SELECT /*fragment session_grant_columns*/
/*fragment session_grant_joins*/
WHERE s.token_hash = :token_hash
), page AS MATERIALIZED (
SELECT row_number() OVER (ORDER BY b.created_at DESC, b.id DESC) AS n, b.created_at, b.id,
b.body
FROM (
SELECT created_at, id, body FROM backups
WHERE workspace_id = (SELECT g_workspace_id FROM g WHERE g_workspace_id = :workspace_id)
/*filters*/
ORDER BY created_at DESC, id DESC LIMIT :limit
) AS b
), p AS (
SELECT string_agg(body, ',' ORDER BY n) FILTER (WHERE n <= :page_size) AS items,
count(*) > :page_size AS more, max(created_at) FILTER (WHERE n = :page_size) AS last_at,
(array_agg(id) FILTER (WHERE n = :page_size))[1] AS last_id
FROM page
)
SELECT g.*, p.items, CASE WHEN p.more THEN p.last_at END AS next_created_at,
CASE WHEN p.more THEN p.last_id END AS next_id
FROM g, p

-- name: backup_create_counted
-- backup_insert_counted and the backup's event (audit_insert) in one statement committed on
-- its own (autocommit): one round trip, the workspace row locked only while it runs and
-- commits. created is 1 when both were written. The event's insert comes first (kept short:
-- pg_stat_activity shows the first 1024 bytes, and the statement waiting to insert an
-- event must be recognisable there). A retry of a statement whose answer was lost with its
-- connection writes nothing twice: the event's insert waits for the earlier attempt, if it
-- is still running, and does nothing if that committed; its backup, committed after this
-- statement's snapshot, then goes unseen here (created 0), and the repository looks again.
-- :commit_by, when not NULL, is the commit's deadline (COMMIT_DEADLINE's row, migration
-- 0020), written by the statement itself: alone in autocommit, its own commit checks it,
-- with no BEGIN, deadline statement or COMMIT beside it (postgres_transaction.run_batch).
WITH w AS (
  SELECT id FROM workspaces WHERE id = :workspace_id AND backup_count < :usage_below
  FOR NO KEY UPDATE
), e AS (
  INSERT INTO audit_events (id, workspace_id, occurred_at, actor_type, actor_id, action,
    target_type, target_id, request_id, outcome, changes)
  SELECT :event_id, :workspace_id, :occurred_at, :actor_type, :actor_id, :action,
    :target_type, :target_id, :request_id, :outcome, :changes
  FROM w
  ON CONFLICT (id) DO NOTHING
  RETURNING id
), b AS (
  INSERT INTO backups (
/*fragment backup_insert_columns*/
  )
  SELECT /*fragment backup_insert_values*/
  FROM e
  RETURNING id
), d AS (
  INSERT INTO commit_deadlines (backend_pid, commit_by)
  SELECT pg_backend_pid(), CAST(:commit_by AS timestamptz)
  WHERE CAST(:commit_by AS timestamptz) IS NOT NULL
  ON CONFLICT (backend_pid) DO UPDATE SET commit_by = EXCLUDED.commit_by
)
SELECT count(*) AS created FROM b

-- name: artifact_get_many
-- The artifacts of a workspace among :ids (a text[] of uuids).
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE workspace_id = :workspace_id AND id = ANY(CAST(:ids AS uuid[]))

-- name: artifact_lock_until
-- Referenced artifacts take the referencing run's lock (chosen by the domain).
UPDATE artifacts SET locked_until = :locked_until
WHERE workspace_id = :workspace_id AND id = ANY(CAST(:ids AS uuid[]))

-- name: run_references_add
INSERT INTO run_references (workspace_id, run_id, artifact_id)
SELECT :workspace_id, :run_id, unnest(CAST(:ids AS uuid[]))
ON CONFLICT DO NOTHING

-- name: retention_lock_artifacts
-- The artifacts the keep rules gave up, locked until the removal commits (ids: uuid[]).
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE workspace_id = :workspace_id AND id = ANY(CAST(:ids AS uuid[]))
ORDER BY id
FOR UPDATE

-- name: audit_insert_many
-- audit_insert of several events, one array per column (a unit of work's events).
INSERT INTO audit_events (
    id, workspace_id, occurred_at, actor_type, actor_id, action, target_type, target_id,
    request_id, outcome, changes
)
SELECT * FROM unnest(
    CAST(:id AS uuid[]), CAST(:workspace_id AS uuid[]), CAST(:occurred_at AS timestamptz[]),
    CAST(:actor_type AS text[]), CAST(:actor_id AS uuid[]), CAST(:action AS text[]),
    CAST(:target_type AS text[]), CAST(:target_id AS text[]), CAST(:request_id AS text[]),
    CAST(:outcome AS text[]), CAST(:changes AS json[])
)

-- name: retention_store_artifacts
-- The removed artifacts' state and upload as the domain set them (one array per column).
UPDATE artifacts AS a SET state = u.state, upload_id = u.upload_id
FROM unnest(CAST(:id AS uuid[]), CAST(:state AS text[]), CAST(:upload_id AS text[]))
    AS u (id, state, upload_id)
WHERE a.workspace_id = :workspace_id AND a.id = u.id

-- name: retention_store_runs
-- Their runs' counts as the domain set them (one array per column).
UPDATE runs AS r SET artifact_count = u.artifact_count, bytes = u.bytes
FROM unnest(CAST(:id AS uuid[]), CAST(:artifact_count AS integer[]), CAST(:bytes AS bigint[]))
    AS u (id, artifact_count, bytes)
WHERE r.workspace_id = :workspace_id AND r.id = u.id

-- name: retention_lock_runs
-- Their runs, locked too (their artifact_count and bytes change).
SELECT id, workspace_id, backup_id, state, trigger, worker_id, created_at, started_at,
       finished_at, artifact_count, bytes, error, attempt, lease_expires_at,
       cancel_requested, progress
FROM runs
WHERE workspace_id = :workspace_id AND id = ANY(CAST(:ids AS uuid[]))
ORDER BY id
FOR UPDATE

-- name: delivery_take
-- Due deliveries, oldest first, leased to this sender until :lease_until (their next
-- attempt moves there, so a sender that dies leaves them due again): rows another sender
-- holds are skipped, so each delivery goes to one sender at a time.
WITH due AS (
    SELECT id FROM webhook_deliveries
    WHERE state = 'pending' AND next_attempt_at <= :now
    ORDER BY next_attempt_at, id
    LIMIT :limit
    FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries AS d SET next_attempt_at = :lease_until
FROM due, webhooks AS w
WHERE d.id = due.id AND w.id = d.webhook_id
RETURNING d.id, d.webhook_id, d.workspace_id, d.event, d.payload, d.created_at, d.state,
          d.attempts, :now AS next_attempt_at, w.url, w.sealed_secret

-- name: worker_find_many
-- The workers whose credentials hash to one of :token_hashes (a text[]): the credentials
-- of many concurrent long polls in one look (workers_token_hash_unique).
SELECT id, workspace_id, name, token_hash, created_at, last_seen_at
FROM workers
WHERE token_hash = ANY(CAST(:token_hashes AS text[]))

-- name: worker_touch_many
-- worker_touch of every worker among :ids (a text[] of uuids), in one statement.
UPDATE workers
SET last_seen_at = :at
WHERE id = ANY(CAST(:ids AS uuid[])) AND (last_seen_at IS NULL OR last_seen_at < :stale_before)
