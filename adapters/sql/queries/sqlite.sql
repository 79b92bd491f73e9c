-- Named queries only SQLite runs (see common.sql for the format).
--
-- SQLite has no row locks: a unit of work that locks or writes holds the database's write
-- lock (BEGIN IMMEDIATE) from that statement to its end, which serialises it with every
-- other writer. The *_for_update queries are therefore plain reads run inside it.

-- name: ping
SELECT count(*) AS answer FROM sqlite_schema

-- name: workspace_get_for_update
SELECT id, name, idp_org_id, customer_id, storage_namespace, created_by, billing_state,
       quota_overrides, created_at, updated_at
FROM workspaces
WHERE id = :id

-- name: user_get_for_update
SELECT id, email, name, idp_subject, created_at FROM users WHERE id = :id

-- name: backup_get_for_update
SELECT id, workspace_id, name, kind, state, paused, source, sealed_credentials,
       schedule_cron, schedule_timezone, worker_id, retention_expire_after_seconds,
       retention_lock_for_seconds, destination, sealed_destination_credentials, next_run_at,
       created_at, updated_at
FROM backups
WHERE workspace_id = :workspace_id AND id = :id

-- name: device_grant_by_device_code_for_update
SELECT id, device_code_hash, user_code, client_id, created_at, expires_at, poll_interval,
       state, account_id, failed_approvals, last_polled_at, access_token_hash,
       access_expires_at
FROM device_grants
WHERE device_code_hash = :device_code_hash
ORDER BY created_at DESC, id DESC
LIMIT 1

-- name: device_grant_by_user_code_for_update
SELECT id, device_code_hash, user_code, client_id, created_at, expires_at, poll_interval,
       state, account_id, failed_approvals, last_polled_at, access_token_hash,
       access_expires_at
FROM device_grants
WHERE user_code = :user_code
ORDER BY created_at DESC, id DESC
LIMIT 1

-- name: role_list
-- Slugs in code-point order, as every adapter sorts them.
SELECT slug, name, permissions FROM roles WHERE workspace_id = :workspace_id
ORDER BY slug

-- name: invitation_get_for_email
SELECT id, workspace_id, email, role, created_at, expires_at, accepted_at
FROM invitations
WHERE id = :id AND email_key = :email_key

-- name: run_get_for_update
SELECT id, workspace_id, backup_id, state, trigger, worker_id, created_at, started_at,
       finished_at, artifact_count, bytes, error
FROM runs
WHERE workspace_id = :workspace_id AND id = :id

-- name: artifact_get_for_update
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until
FROM artifacts
WHERE workspace_id = :workspace_id AND id = :id

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
