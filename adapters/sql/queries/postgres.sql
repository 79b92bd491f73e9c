-- Named queries only PostgreSQL runs (see common.sql for the format).
--
-- Locks are FOR NO KEY UPDATE: they serialise the quota checks and read-modify-writes
-- that take them, yet let other transactions insert rows that reference the locked row.

-- name: ping
SELECT 1 AS answer

-- name: role_list
-- Slugs in code-point order, as every adapter sorts them.
SELECT slug, name, permissions FROM roles WHERE workspace_id = :workspace_id
ORDER BY slug COLLATE "C"

-- name: backup_insert_admitted
-- backup_insert, only if the workspace admits one more backup: a billing state among
-- :billing_states and fewer backups than its limit (an override, else :default_limit;
-- 0 is unlimited). The lock makes a concurrent create wait and then see the new count.
-- With :token_hash, only into that session's workspace.
WITH admitting AS (
    SELECT id, backup_count,
           COALESCE((quota_overrides ->> 'backups_per_workspace')::bigint, :default_limit)
               AS backup_limit
    FROM workspaces
    WHERE id = :workspace_id AND billing_state = ANY(:billing_states)
      AND (CAST(:token_hash AS text) IS NULL
           OR id = (SELECT workspace_id FROM sessions WHERE token_hash = :token_hash))
    FOR NO KEY UPDATE
)
INSERT INTO backups (
/*fragment backup_insert_columns*/
)
SELECT /*fragment backup_insert_values*/
FROM admitting
WHERE backup_limit = 0 OR backup_count < backup_limit

-- name: run_announce
-- Waiting claims of every process hear of new queued runs of the workspace: the
-- notification is delivered when the transaction commits, and never if it rolls back.
SELECT pg_notify('strongroom_runs', CAST(:workspace_id AS text)) AS announced

-- name: session_find_with_backups_json
-- session_find_with_backups as one row: the session's columns (g_*), the page's items as
-- the API's JSON texts joined by commas in list order (items; NULL when none), and the
-- sort key of the last one shown when another follows (next_created_at, next_id): the
-- read model of GET /v1/workspaces/{wid}/backups. No row without a session; no items
-- unless :workspace_id is the session's workspace. :limit is :page_size + 1. Written
-- tight: psycopg parses a statement over 4 096 characters again at every execution
-- instead of caching it. Each body was rendered when its row was written (0013).
WITH g AS (
SELECT /*fragment session_grant_columns*/
/*fragment session_grant_joins*/
WHERE s.token_hash = :token_hash
), page AS MATERIALIZED (
SELECT row_number() OVER (ORDER BY b.created_at DESC, b.id DESC) AS n, b.created_at, b.id,
b.body
FROM (
SELECT created_at, id, body FROM backups
WHERE workspace_id = :workspace_id AND workspace_id = (SELECT g_workspace_id FROM g) /*filters*/
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

-- name: backup_create_in_session
-- A session's create in one statement, committed on its own (autocommit): one round trip,
-- and the workspace row is locked only while this statement runs and commits. The event
-- and the backup are written only if every check passes, the checks of a session caller
-- (``Access.session_caller``, ``Access.permits``) and of the workspace's admission
-- (``Workspace.admit``) as SQL conditions:
--   (lists are comma-separated text)
--   the session of :token_hash (the first row, as session_find; its person exists by the
--   foreign key) is live at :now and scoped
--   to :workspace_id; its person is a member there, whose role is a built-in one among
--   :granting_builtin, or a custom one (a slug not among :builtin) holding one of
--   :permissions; the workspace's billing state is among :billing_states and it holds
--   fewer backups than its limit (an override, else :default_limit; 0 is unlimited,
--   taken as 1e18).
-- The lock makes a concurrent create wait and then see the new count (the conditions are
-- checked again on the row as it is once locked). The backup's insert follows the event's
-- (kept short: pg_stat_activity shows the first 1024 bytes, and the statement waiting to
-- insert an event must be recognisable there). created is 1 when both were written.
-- The backup is a draft: the columns a draft leaves NULL are NULL here, not parameters.
-- A retry of a statement whose answer was lost with its connection writes nothing twice:
-- the event's insert waits for the earlier attempt, if it is still running, and does
-- nothing if that committed; its backup, committed after this statement's snapshot, then
-- goes unseen here (created 0), and the repository looks again.
WITH g AS (
  SELECT s.user_id, s.workspace_id, s.expires_at, s.revoked_at, m.role, r.permissions
  FROM sessions s
  LEFT JOIN memberships m ON m.workspace_id = s.workspace_id AND m.user_id = s.user_id
  LEFT JOIN roles r ON r.workspace_id = m.workspace_id AND r.slug = m.role
  WHERE s.token_hash = :token_hash LIMIT 1
), a AS (
  SELECT g.user_id FROM workspaces w, g
  WHERE w.id = :workspace_id AND g.workspace_id = :workspace_id AND g.revoked_at IS NULL
    AND :now < g.expires_at AND (g.role = ANY(string_to_array(:granting_builtin, ','))
      OR (NOT g.role = ANY(string_to_array(:builtin, ','))
      AND g.permissions && string_to_array(:permissions, ',')))
    AND w.billing_state = ANY(string_to_array(:billing_states, ','))
    AND w.backup_count < COALESCE(NULLIF(COALESCE(
      (w.quota_overrides ->> 'backups_per_workspace')::bigint, :default_limit), 0), 1e18)
  FOR NO KEY UPDATE OF w
), e AS (
  INSERT INTO audit_events (id, workspace_id, occurred_at, actor_type, actor_id, action,
    target_type, target_id, request_id, outcome, changes)
  SELECT :event_id, :workspace_id, :occurred_at, :actor_type, user_id, :action, :target_type,
    :target_id, :request_id, :outcome, :changes
  FROM a
  ON CONFLICT (id) DO NOTHING
  RETURNING id
), b AS (
  INSERT INTO backups (
/*fragment backup_insert_columns*/
  )
  SELECT :id, :workspace_id, :name, :name_key, :kind, :state, :paused, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, :destination, NULL, NULL, :created_at, :updated_at
  FROM e
  RETURNING id
)
SELECT count(*) AS created FROM b
