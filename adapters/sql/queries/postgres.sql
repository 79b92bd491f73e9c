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

-- name: run_next_queued
-- The oldest queued run of a backup assigned to :worker_id, locked; a run another claimer
-- holds locked is skipped, so concurrent claimers never take the same run.
SELECT runs.id, runs.workspace_id, runs.backup_id, runs.state, runs.trigger,
       runs.worker_id, runs.created_at, runs.started_at, runs.finished_at,
       runs.artifact_count, runs.bytes, runs.error, runs.attempt, runs.lease_expires_at,
       runs.cancel_requested, runs.progress
FROM runs
JOIN backups ON backups.workspace_id = runs.workspace_id AND backups.id = runs.backup_id
WHERE runs.workspace_id = :workspace_id AND backups.worker_id = :worker_id
  AND runs.state = 'queued'
ORDER BY runs.created_at, runs.id
LIMIT 1
FOR NO KEY UPDATE OF runs SKIP LOCKED
