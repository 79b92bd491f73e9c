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

-- name: backup_insert_admitted
-- backup_insert, only if the workspace admits one more backup: a billing state among
-- :billing_states (a JSON array) and fewer backups than its limit (an override, else
-- :default_limit; 0 is unlimited). The unit holds the database's one writer.
-- With :token_hash, only into that session's workspace.
INSERT INTO backups (
/*fragment backup_insert_columns*/
)
SELECT /*fragment backup_insert_values*/
FROM (
    SELECT backup_count,
           COALESCE(quota_overrides ->> '$.backups_per_workspace', :default_limit)
               AS backup_limit
    FROM workspaces
    WHERE id = :workspace_id
      AND billing_state IN (SELECT value FROM json_each(:billing_states))
      AND (CAST(:token_hash AS TEXT) IS NULL
           OR id = (SELECT workspace_id FROM sessions WHERE token_hash = :token_hash))
) AS admitting
WHERE backup_limit = 0 OR backup_count < backup_limit

-- name: run_announce
-- One process serves a SQLite database: its in-process signals wake waiting claims after
-- the commit, so there is nothing to say to the database.
SELECT NULL AS announced

-- name: session_find_with_backups_json
-- session_find_with_backups as one row: the session's columns (g_*), the page's items as
-- the API's JSON texts joined by commas in list order (items; NULL when none), and the
-- sort key of the last one shown when another follows (next_created_at, next_id): the
-- read model of GET /v1/workspaces/{wid}/backups. No row without a session; no items
-- unless :workspace_id is the session's workspace. :limit (:page_size + 1) is unused here.
-- Each body was rendered when its row was written (0014). Both scans walk
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

-- name: backup_create_in_session
-- A session's create as a transaction of its own, its three statements in one hop to the
-- database's thread (see the PostgreSQL text for the checks, which are the same; lists
-- are comma-separated text, matched whole between commas: role slugs and permission
-- names hold no comma): the backup only if the session authorizes it and the workspace
-- admits it; its event only if the backup was added (``changes()`` is the count of the
-- statement before: the backup's insert, which adds a row only if none has its id); created
-- is 1 when the event was added, so when both were (a second run of the same create
-- writes nothing twice, as on PostgreSQL, and answers 0: the repository looks again).
INSERT INTO backups (
/*fragment backup_insert_columns*/
)
SELECT :id, :workspace_id, :name, :name_key, :kind, :state, :paused, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, :destination, NULL, NULL, :created_at, :updated_at
FROM (
    SELECT s.user_id, s.workspace_id, s.expires_at, s.revoked_at, m.role, r.permissions
/*fragment session_grant_joins*/
    WHERE s.token_hash = :token_hash
    LIMIT 1
) AS g
JOIN workspaces AS w ON w.id = g.workspace_id
WHERE g.workspace_id = :workspace_id AND g.revoked_at IS NULL AND :now < g.expires_at
  AND (instr(',' || :granting_builtin || ',', ',' || g.role || ',') > 0
       OR (instr(',' || :builtin || ',', ',' || g.role || ',') = 0
           AND EXISTS (SELECT 1 FROM json_each(g.permissions) AS held
                       WHERE instr(',' || :permissions || ',', ',' || held.value || ',') > 0)))
  AND instr(',' || :billing_states || ',', ',' || w.billing_state || ',') > 0
  AND (COALESCE(w.quota_overrides ->> '$.backups_per_workspace', :default_limit) = 0
       OR w.backup_count
          < COALESCE(w.quota_overrides ->> '$.backups_per_workspace', :default_limit))
  AND NOT EXISTS (SELECT 1 FROM backups WHERE id = :id);
INSERT INTO audit_events (
    id, workspace_id, occurred_at, actor_type, actor_id, action, target_type, target_id,
    request_id, outcome, changes
)
SELECT :event_id, :workspace_id, :occurred_at, :actor_type, s.user_id, :action,
       :target_type, :target_id, :request_id, :outcome, :changes
FROM sessions AS s
WHERE s.token_hash = :token_hash AND changes() = 1
LIMIT 1;
SELECT changes() AS created;
