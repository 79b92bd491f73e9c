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
    id, workspace_id, name, name_key, kind, state, paused, source, sealed_credentials,
    schedule_cron, schedule_timezone, worker_id, retention_expire_after_seconds,
    retention_lock_for_seconds, destination, sealed_destination_credentials, next_run_at,
    created_at, updated_at
)
SELECT :id, :workspace_id, :name, :name_key, :kind, :state, :paused, :source,
       :sealed_credentials, :schedule_cron, :schedule_timezone, :worker_id,
       :retention_expire_after_seconds, :retention_lock_for_seconds, :destination,
       :sealed_destination_credentials, :next_run_at, :created_at, :updated_at
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

-- name: backup_create_in_session
-- A session's create as a transaction of its own, its three statements in one hop to the
-- database's thread (see the PostgreSQL text for the checks, which are the same; lists
-- are comma-separated text, matched whole between commas: role slugs and permission
-- names hold no comma): the backup only if the session authorizes it and the workspace
-- admits it; its event only if the backup was added; created is 1 when the backup exists
-- afterwards (a second run of the same create writes nothing twice, as on PostgreSQL).
INSERT INTO backups (
    id, workspace_id, name, name_key, kind, state, paused, source, sealed_credentials,
    schedule_cron, schedule_timezone, worker_id, retention_expire_after_seconds,
    retention_lock_for_seconds, destination, sealed_destination_credentials, next_run_at,
    created_at, updated_at
)
SELECT :id, :workspace_id, :name, :name_key, :kind, :state, :paused, :source,
       :sealed_credentials, :schedule_cron, :schedule_timezone, :worker_id,
       :retention_expire_after_seconds, :retention_lock_for_seconds, :destination,
       :sealed_destination_credentials, :next_run_at, :created_at, :updated_at
FROM (
    SELECT s.user_id, s.workspace_id, s.expires_at, s.revoked_at, m.role, r.permissions
    FROM sessions AS s
    JOIN users AS u ON u.id = s.user_id
    LEFT JOIN memberships AS m ON m.workspace_id = s.workspace_id AND m.user_id = s.user_id
    LEFT JOIN roles AS r ON r.workspace_id = m.workspace_id AND r.slug = m.role
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
WHERE s.token_hash = :token_hash
  AND EXISTS (SELECT 1 FROM backups WHERE workspace_id = :workspace_id AND id = :id)
  AND NOT EXISTS (SELECT 1 FROM audit_events WHERE id = :event_id)
LIMIT 1;
SELECT count(*) AS created FROM backups WHERE workspace_id = :workspace_id AND id = :id;
