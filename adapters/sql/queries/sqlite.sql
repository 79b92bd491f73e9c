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
