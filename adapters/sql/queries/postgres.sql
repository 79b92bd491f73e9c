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

-- name: device_grant_by_device_code_for_update
SELECT id, device_code_hash, user_code, client_id, created_at, expires_at, poll_interval,
       state, account_id, failed_approvals, last_polled_at, access_token_hash,
       access_expires_at
FROM device_grants
WHERE device_code_hash = :device_code_hash
ORDER BY created_at DESC, id DESC
LIMIT 1
FOR NO KEY UPDATE

-- name: device_grant_by_user_code_for_update
SELECT id, device_code_hash, user_code, client_id, created_at, expires_at, poll_interval,
       state, account_id, failed_approvals, last_polled_at, access_token_hash,
       access_expires_at
FROM device_grants
WHERE user_code = :user_code
ORDER BY created_at DESC, id DESC
LIMIT 1
FOR NO KEY UPDATE

-- name: role_list
-- Slugs in code-point order, as every adapter sorts them.
SELECT slug, name, permissions FROM roles WHERE workspace_id = :workspace_id
ORDER BY slug COLLATE "C"

-- name: invitation_get_for_email
SELECT id, workspace_id, email, role, created_at, expires_at, accepted_at
FROM invitations
WHERE id = :id AND email_key = :email_key
FOR NO KEY UPDATE

-- name: run_get_for_update
SELECT id, workspace_id, backup_id, state, trigger, worker_id, created_at, started_at,
       finished_at, artifact_count, bytes, error
FROM runs
WHERE workspace_id = :workspace_id AND id = :id
FOR NO KEY UPDATE

-- name: artifact_get_for_update
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until
FROM artifacts
WHERE workspace_id = :workspace_id AND id = :id
FOR NO KEY UPDATE

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
