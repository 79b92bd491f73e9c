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
    id, workspace_id, name, name_key, kind, state, paused, source, sealed_credentials,
    schedule_cron, schedule_timezone, worker_id, retention_expire_after_seconds,
    retention_lock_for_seconds, destination, sealed_destination_credentials, next_run_at,
    created_at, updated_at
)
SELECT :id, :workspace_id, :name, :name_key, :kind, :state, :paused, :source,
       :sealed_credentials, :schedule_cron, :schedule_timezone, :worker_id,
       :retention_expire_after_seconds, :retention_lock_for_seconds, :destination,
       :sealed_destination_credentials, :next_run_at, :created_at, :updated_at
FROM admitting
WHERE backup_limit = 0 OR backup_count < backup_limit

-- name: run_announce
-- Waiting claims of every process hear of new queued runs of the workspace: the
-- notification is delivered when the transaction commits, and never if it rolls back.
SELECT pg_notify('strongroom_runs', CAST(:workspace_id AS text)) AS announced
