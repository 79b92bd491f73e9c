-- Named queries only PostgreSQL runs (see common.sql for the format).
--
-- Locks are FOR NO KEY UPDATE: they serialise the quota checks and read-modify-writes
-- that take them, yet let other transactions insert rows that reference the locked row.

-- name: ping
SELECT 1 AS answer

-- name: workspace_get_for_update
SELECT id, name, idp_org_id, customer_id, storage_namespace, created_by, billing_state,
       quota_overrides, created_at, updated_at
FROM workspaces
WHERE id = :id
FOR NO KEY UPDATE

-- name: user_get_for_update
SELECT id, email, name, idp_subject, created_at FROM users WHERE id = :id FOR NO KEY UPDATE

-- name: backup_get_for_update
SELECT id, workspace_id, name, kind, state, paused, source, sealed_credentials,
       schedule_cron, schedule_timezone, worker_id, retention_expire_after_seconds,
       retention_lock_for_seconds, destination, sealed_destination_credentials, next_run_at,
       created_at, updated_at
FROM backups
WHERE workspace_id = :workspace_id AND id = :id
FOR NO KEY UPDATE
