-- Named queries shared by SQLite and PostgreSQL.
--
-- Each query starts with a "-- name: <name>" line; full-line comments are dropped when
-- loaded. Parameters are written :name (PostgreSQL receives them as %(name)s). A query
-- with a /*filters*/ marker takes optional "-- name: filter_*" fragments there. A read
-- with a /*lock*/ marker may lock what it reads until the unit of work ends: asked to lock,
-- the marker is FOR NO KEY UPDATE on PostgreSQL and nothing on SQLite, whose unit holds the
-- one writer (see catalog.py); otherwise it is nothing. A /*fragment name*/ marker is
-- replaced by the text of the named query "name" (a piece several statements share: the
-- session check's columns and joins, a table's column list); a fragment's own /*lock*/ or
-- /*fragment*/ markers would stay as they are, so it holds none.

-- name: workspace_insert
INSERT INTO workspaces (
    id, name, idp_org_id, customer_id, storage_namespace, created_by, billing_state,
    quota_overrides, created_at, updated_at
) VALUES (
    :id, :name, :idp_org_id, :customer_id, :storage_namespace, :created_by, :billing_state,
    :quota_overrides, :created_at, :updated_at
)

-- name: workspace_get
SELECT id, name, idp_org_id, customer_id, storage_namespace, created_by, billing_state,
       quota_overrides, created_at, updated_at
FROM workspaces
WHERE id = :id
/*lock*/

-- name: workspace_get_counted
-- workspace_get with the workspace's backup count (its usage counter, migration 0004).
SELECT id, name, idp_org_id, customer_id, storage_namespace, created_by, billing_state,
       quota_overrides, created_at, updated_at, backup_count
FROM workspaces
WHERE id = :id

-- name: workspace_update
-- Every column but the id and the creation time (which memberships copy).
UPDATE workspaces
SET name = :name, idp_org_id = :idp_org_id, customer_id = :customer_id,
    storage_namespace = :storage_namespace, created_by = :created_by,
    billing_state = :billing_state, quota_overrides = :quota_overrides,
    updated_at = :updated_at
WHERE id = :id

-- name: workspace_delete
-- Memberships, sessions, backups, audit events, workers and roles go by ON DELETE CASCADE.
DELETE FROM workspaces WHERE id = :id

-- name: workspace_count_created_by
SELECT count(*) AS n FROM workspaces WHERE created_by = :user_id

-- name: membership_insert
-- Inserts nothing when the workspace does not exist (the caller refuses that).
INSERT INTO memberships (workspace_id, user_id, role, joined_at, workspace_created_at)
SELECT id, :user_id, :role, :joined_at, created_at FROM workspaces WHERE id = :workspace_id

-- name: membership_get
SELECT workspace_id, user_id, role, joined_at
FROM memberships
WHERE workspace_id = :workspace_id AND user_id = :user_id

-- name: membership_list_for_user
SELECT w.id, w.name, w.idp_org_id, w.customer_id, w.storage_namespace, w.created_by,
       w.billing_state, w.quota_overrides, w.created_at, w.updated_at, m.role AS member_role
FROM memberships AS m
JOIN workspaces AS w ON w.id = m.workspace_id
WHERE m.user_id = :user_id /*filters*/
ORDER BY m.workspace_created_at DESC, m.workspace_id DESC
LIMIT :limit

-- name: filter_membership_after
AND (m.workspace_created_at, m.workspace_id) < (:after_created_at, :after_id)

-- name: membership_count
SELECT count(*) AS n FROM memberships WHERE workspace_id = :workspace_id

-- name: membership_list_members
SELECT m.user_id, u.email, u.name, m.role, m.joined_at
FROM memberships AS m
JOIN users AS u ON u.id = m.user_id
WHERE m.workspace_id = :workspace_id /*filters*/
ORDER BY m.joined_at DESC, m.user_id DESC
LIMIT :limit

-- name: filter_member_after
AND (m.joined_at, m.user_id) < (:after_created_at, :after_id)

-- name: membership_update
UPDATE memberships SET role = :role WHERE workspace_id = :workspace_id AND user_id = :user_id

-- name: membership_delete
DELETE FROM memberships WHERE workspace_id = :workspace_id AND user_id = :user_id

-- name: membership_count_role
SELECT count(*) AS n FROM memberships WHERE workspace_id = :workspace_id AND role = :role

-- name: user_insert
INSERT INTO users (id, email, name, idp_subject, created_at)
VALUES (:id, :email, :name, :idp_subject, :created_at)

-- name: user_get
SELECT id, email, name, idp_subject, created_at FROM users WHERE id = :id /*lock*/

-- name: user_get_by_subject
SELECT id, email, name, idp_subject, created_at FROM users WHERE idp_subject = :idp_subject

-- name: session_insert
INSERT INTO sessions (id, token_hash, user_id, workspace_id, created_at, expires_at, revoked_at,
                      origin)
VALUES (:id, :token_hash, :user_id, :workspace_id, :created_at, :expires_at, :revoked_at,
        :origin)

-- name: session_grant_columns
-- session_find's columns prefixed g_ (a fragment, after a SELECT: /*fragment
-- session_grant_columns*/) of the reads that check a session in the statement that reads.
-- Written tight: it counts towards the 4 096 characters of the *_json reads (see postgres.sql).
s.id AS g_id, s.token_hash AS g_token_hash, s.user_id AS g_user_id,
s.workspace_id AS g_workspace_id, s.created_at AS g_created_at, s.expires_at AS g_expires_at,
s.revoked_at AS g_revoked_at, u.email AS g_user_email, u.name AS g_user_name,
u.idp_subject AS g_user_idp_subject, u.created_at AS g_user_created_at,
m.role AS g_role_slug, r.name AS g_role_name, r.permissions AS g_role_permissions

-- name: session_grant_joins
-- A session (s), its person (u), their membership (m) and role (r) in its workspace: the
-- FROM of session_find and of the reads and writes that check a session (a fragment).
FROM sessions AS s
JOIN users AS u ON u.id = s.user_id
LEFT JOIN memberships AS m ON m.workspace_id = s.workspace_id AND m.user_id = s.user_id
LEFT JOIN roles AS r ON r.workspace_id = m.workspace_id AND r.slug = m.role

-- name: session_find
-- The session, its person, and their role in its workspace: one round trip per request.
SELECT s.id, s.token_hash, s.user_id, s.workspace_id, s.created_at, s.expires_at,
       s.revoked_at, u.email AS user_email, u.name AS user_name,
       u.idp_subject AS user_idp_subject, u.created_at AS user_created_at,
       m.role AS role_slug, r.name AS role_name, r.permissions AS role_permissions
/*fragment session_grant_joins*/
WHERE s.token_hash = :token_hash
LIMIT 1

-- name: session_find_with_backup
-- session_find (its columns g_*) joined with one backup of the session's workspace (NULL
-- when it has none with this id): the credential check and the read in one statement.
SELECT /*fragment session_grant_columns*/,
       b.id, b.workspace_id, b.name, b.kind, b.state, b.paused, b.source, b.sealed_credentials, b.schedule_cron, b.schedule_timezone,
       b.worker_id, b.retention_expire_after_seconds, b.retention_lock_for_seconds,
       b.retention_keep, b.destination, b.sealed_destination_credentials, b.next_run_at, b.created_at,
       b.updated_at, b.encryption, b.freshness_max_age_seconds, b.drill, b.next_drill_at
/*fragment session_grant_joins*/
LEFT JOIN backups AS b ON b.workspace_id = s.workspace_id AND b.id = :id
WHERE s.token_hash = :token_hash
LIMIT 1

-- name: session_find_with_backup_body
-- session_find_with_backup with the backup as the API's JSON text (body; NULL when the
-- session's workspace has no backup of this id): the read model of GET /v1/backups/{id}.
-- The body was written with the backup's row, from the wire presenter (0015).
SELECT /*fragment session_grant_columns*/, b.body
/*fragment session_grant_joins*/
LEFT JOIN backups AS b ON b.workspace_id = s.workspace_id AND b.id = :id
WHERE s.token_hash = :token_hash
LIMIT 1

-- name: session_find_with_workspace
-- session_find (its columns g_*) joined with :workspace_id and its backup count when it is
-- the session's workspace (NULL columns otherwise): what a session's create decides on.
SELECT /*fragment session_grant_columns*/,
       w.id, w.name, w.idp_org_id, w.customer_id, w.storage_namespace, w.created_by,
       w.billing_state, w.quota_overrides, w.created_at, w.updated_at, w.backup_count
/*fragment session_grant_joins*/
LEFT JOIN workspaces AS w ON w.id = s.workspace_id AND w.id = :workspace_id
WHERE s.token_hash = :token_hash
LIMIT 1

-- name: session_find_with_backups
-- session_find (its columns g_*) and a page of backups (as backup_list) of :workspace_id
-- when it is the session's workspace: first a row of the session alone (NULL backup
-- columns), then one row per backup with NULL session columns; no row without a session.
-- The session's columns come once, not once per backup: a page of 50 spent a third of
-- its fetch loading 50 copies of them (the role's permissions array above all).
SELECT * FROM (
WITH g AS (
    SELECT /*fragment session_grant_columns*/
/*fragment session_grant_joins*/
    WHERE s.token_hash = :token_hash
)
SELECT 0 AS part, g_id, g_token_hash, g_user_id, g_workspace_id, g_created_at, g_expires_at,
       g_revoked_at, g_user_email, g_user_name, g_user_idp_subject, g_user_created_at,
       g_role_slug, g_role_name, g_role_permissions, NULL AS id, NULL AS workspace_id,
       NULL AS name, NULL AS kind, NULL AS state, NULL AS paused, NULL AS source,
       NULL AS sealed_credentials, NULL AS schedule_cron, NULL AS schedule_timezone,
       NULL AS worker_id, NULL AS retention_expire_after_seconds,
       NULL AS retention_lock_for_seconds, NULL AS retention_keep, NULL AS destination,
       NULL AS sealed_destination_credentials, NULL AS next_run_at, NULL AS created_at,
       NULL AS updated_at, NULL AS encryption, NULL AS freshness_max_age_seconds,
       NULL AS drill, NULL AS next_drill_at
FROM g
UNION ALL
SELECT 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, b.id, b.workspace_id, b.name, b.kind, b.state, b.paused, b.source,
       b.sealed_credentials, b.schedule_cron, b.schedule_timezone, b.worker_id,
       b.retention_expire_after_seconds, b.retention_lock_for_seconds, b.retention_keep,
       b.destination,
       b.sealed_destination_credentials, b.next_run_at, b.created_at, b.updated_at,
       b.encryption, b.freshness_max_age_seconds, b.drill, b.next_drill_at
FROM g
JOIN (
    SELECT /*fragment backup_columns*/
    FROM backups
    WHERE workspace_id = :workspace_id /*filters*/
    ORDER BY created_at DESC, id DESC
    LIMIT :limit
) AS b ON b.workspace_id = g.g_workspace_id
) AS page
ORDER BY part, created_at DESC, id DESC

-- name: session_revoke
-- The first revocation time stays.
UPDATE sessions SET revoked_at = :revoked_at WHERE id = :id AND revoked_at IS NULL

-- name: session_origin
-- The identity provider's grant a session was made from (migration 0022).
SELECT origin FROM sessions WHERE id = :id

-- name: session_revoke_from
-- Every live session made from one grant (index sessions_by_origin); first times stay.
UPDATE sessions SET revoked_at = :revoked_at WHERE origin = :origin AND revoked_at IS NULL

-- name: backup_columns
-- A backup's columns as the repositories read them (a fragment, after a SELECT).
id, workspace_id, name, kind, state, paused, source, sealed_credentials,
       schedule_cron, schedule_timezone, worker_id, retention_expire_after_seconds,
       retention_lock_for_seconds, retention_keep, destination, sealed_destination_credentials,
       next_run_at, created_at, updated_at, encryption, freshness_max_age_seconds, drill,
       next_drill_at

-- name: backup_insert_columns
-- Every column of a backup (name_key and body too), in the order of backup_insert_values:
-- the column list of its inserts (a fragment).
    id, workspace_id, name, name_key, kind, state, paused, source, sealed_credentials,
    schedule_cron, schedule_timezone, worker_id, retention_expire_after_seconds,
    retention_lock_for_seconds, retention_keep, destination, sealed_destination_credentials,
    next_run_at, created_at, updated_at, body, encryption, freshness_max_age_seconds, drill,
    next_drill_at

-- name: backup_insert_values
-- The parameters of backup_insert_columns, in their order (a fragment).
    :id, :workspace_id, :name, :name_key, :kind, :state, :paused, :source, :sealed_credentials,
    :schedule_cron, :schedule_timezone, :worker_id, :retention_expire_after_seconds,
    :retention_lock_for_seconds, :retention_keep, :destination, :sealed_destination_credentials,
    :next_run_at, :created_at, :updated_at, :body, :encryption, :freshness_max_age_seconds,
    :drill, :next_drill_at

-- name: backup_insert
INSERT INTO backups (
/*fragment backup_insert_columns*/
) VALUES (
/*fragment backup_insert_values*/
)

-- name: backup_get
SELECT /*fragment backup_columns*/
FROM backups
WHERE workspace_id = :workspace_id AND id = :id
/*lock*/

-- name: backup_update
UPDATE backups
SET name = :name, name_key = :name_key, kind = :kind, state = :state, paused = :paused,
    source = :source, sealed_credentials = :sealed_credentials,
    schedule_cron = :schedule_cron, schedule_timezone = :schedule_timezone,
    worker_id = :worker_id, retention_expire_after_seconds = :retention_expire_after_seconds,
    retention_lock_for_seconds = :retention_lock_for_seconds, retention_keep = :retention_keep,
    destination = :destination,
    sealed_destination_credentials = :sealed_destination_credentials,
    next_run_at = :next_run_at, created_at = :created_at, updated_at = :updated_at,
    body = :body, encryption = :encryption, freshness_max_age_seconds = :freshness_max_age_seconds,
    drill = :drill, next_drill_at = :next_drill_at
WHERE workspace_id = :workspace_id AND id = :id

-- name: backup_delete
DELETE FROM backups WHERE workspace_id = :workspace_id AND id = :id

-- name: backup_list
SELECT /*fragment backup_columns*/
FROM backups
WHERE workspace_id = :workspace_id /*filters*/
ORDER BY created_at DESC, id DESC
LIMIT :limit

-- name: filter_backup_after
AND (created_at, id) < (:after_created_at, :after_id)

-- name: filter_backup_worker
AND worker_id = :worker_id

-- name: backup_count
-- The workspace's usage counter, kept exact by triggers (migration 0004).
SELECT backup_count AS n FROM workspaces WHERE id = :workspace_id

-- name: run_insert
INSERT INTO runs (
    id, workspace_id, backup_id, state, trigger, worker_id, created_at, started_at,
    finished_at, artifact_count, bytes, error, attempt, lease_expires_at, cancel_requested,
    progress
) VALUES (
    :id, :workspace_id, :backup_id, :state, :trigger, :worker_id, :created_at, :started_at,
    :finished_at, :artifact_count, :bytes, :error, :attempt, :lease_expires_at,
    :cancel_requested, :progress
)

-- name: run_get
SELECT id, workspace_id, backup_id, state, trigger, worker_id, created_at, started_at,
       finished_at, artifact_count, bytes, error, attempt, lease_expires_at,
       cancel_requested, progress
FROM runs
WHERE workspace_id = :workspace_id AND id = :id
/*lock*/

-- name: run_update
-- Identity and origin (backup, trigger, creation time) never change; the worker holding
-- the run does (a claim sets it, an expired lease clears it).
UPDATE runs
SET state = :state, worker_id = :worker_id, started_at = :started_at, finished_at = :finished_at,
    artifact_count = :artifact_count, bytes = :bytes, error = :error, attempt = :attempt,
    lease_expires_at = :lease_expires_at, cancel_requested = :cancel_requested,
    progress = :progress
WHERE workspace_id = :workspace_id AND id = :id AND backup_id = :backup_id

-- name: run_lease_expired
-- Running runs of every workspace whose lease ran out, soonest expiry first.
SELECT id, workspace_id, backup_id, state, trigger, worker_id, created_at, started_at,
       finished_at, artifact_count, bytes, error, attempt, lease_expires_at,
       cancel_requested, progress
FROM runs
WHERE state = 'running' AND lease_expires_at <= :now
ORDER BY lease_expires_at, id
LIMIT :limit

-- name: run_left_manual
-- Running manual runs of every workspace with pending artifacts, none announced after
-- :announced_before (the lease job's abandonment candidates; the domain decides), oldest
-- first. Running runs come from the partial index runs_running, their artifacts from
-- artifacts_by_backup.
SELECT r.id, r.workspace_id, r.backup_id, r.state, r.trigger, r.worker_id, r.created_at,
       r.started_at, r.finished_at, r.artifact_count, r.bytes, r.error, r.attempt,
       r.lease_expires_at, r.cancel_requested, r.progress
FROM runs AS r
WHERE r.state = 'running' AND r.trigger = 'manual'
  AND EXISTS (
    SELECT 1 FROM artifacts AS a
    WHERE a.workspace_id = r.workspace_id AND a.backup_id = r.backup_id AND a.run_id = r.id
      AND a.state = 'pending')
  AND NOT EXISTS (
    SELECT 1 FROM artifacts AS a
    WHERE a.workspace_id = r.workspace_id AND a.backup_id = r.backup_id AND a.run_id = r.id
      AND a.state = 'pending' AND a.created_at > :announced_before)
ORDER BY r.created_at, r.id
LIMIT :limit

-- name: run_list_for_backup
-- A backup's runs, newest first (index runs_by_backup).
SELECT id, workspace_id, backup_id, state, trigger, worker_id, created_at, started_at,
       finished_at, artifact_count, bytes, error, attempt, lease_expires_at,
       cancel_requested, progress
FROM runs
WHERE workspace_id = :workspace_id AND backup_id = :backup_id /*filters*/
ORDER BY created_at DESC, id DESC
LIMIT :limit

-- name: filter_run_state
AND state = :state

-- name: filter_run_after
AND (created_at, id) < (:after_created_at, :after_id)

-- name: artifact_insert
INSERT INTO artifacts (
    id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
    upload_id, created_at, expires_at, locked_until, verification, verified_at, held
) VALUES (
    :id, :workspace_id, :backup_id, :run_id, :name, :size, :sha256, :state, :storage,
    :object_key, :upload_id, :created_at, :expires_at, :locked_until, :verification,
    :verified_at, :held
)

-- name: artifact_get
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE workspace_id = :workspace_id AND id = :id
/*lock*/

-- name: artifact_update
-- Only state, upload, expiry, lock, verification and hold change, and the size and sha256 of a
-- pending artifact (one the service streamed itself learns them at the end).
UPDATE artifacts
SET state = :state, upload_id = :upload_id, expires_at = :expires_at,
    locked_until = :locked_until, verification = :verification, verified_at = :verified_at,
    held = :held,
    size = CASE WHEN state = 'pending' THEN :size ELSE size END,
    sha256 = CASE WHEN state = 'pending' THEN :sha256 ELSE sha256 END
WHERE workspace_id = :workspace_id AND id = :id AND run_id = :run_id

-- name: artifact_find_in_run
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE workspace_id = :workspace_id AND run_id = :run_id AND name = :name

-- name: artifact_list_for_run
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE workspace_id = :workspace_id AND run_id = :run_id
ORDER BY created_at, id

-- name: artifact_list
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE workspace_id = :workspace_id /*filters*/
ORDER BY created_at DESC, id DESC
LIMIT :limit

-- name: filter_artifact_deleted
AND state = 'deleted'

-- name: filter_artifact_not_deleted
AND state <> 'deleted'

-- name: filter_artifact_after
AND (created_at, id) < (:after_created_at, :after_id)

-- name: artifact_count_available
SELECT count(*) AS n
FROM artifacts
WHERE workspace_id = :workspace_id AND backup_id = :backup_id AND state = 'available'

-- name: artifact_any_locked
SELECT count(*) AS n
FROM artifacts
WHERE workspace_id = :workspace_id AND state = 'available' AND locked_until > :now /*filters*/

-- name: filter_artifact_backup
AND backup_id = :backup_id

-- name: filter_artifact_storage
AND storage = :storage

-- name: artifact_storage_bytes
SELECT CAST(coalesce(sum(size), 0) AS BIGINT) AS n
FROM artifacts
WHERE workspace_id = :workspace_id AND storage = 'service' AND (state = 'available' /*filters*/)

-- name: filter_artifact_pending
OR state = 'pending'

-- name: artifact_expired
-- Not held; of backups the plan does not decide run by run (Backup.decided_run_by_run:
-- keep rules, 0017, or a snapshot backup, encryption set).
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE state = 'available' AND expires_at <= :now AND NOT held
  AND NOT EXISTS (
      SELECT 1 FROM backups AS b
      WHERE b.id = artifacts.backup_id
        AND (b.retention_keep IS NOT NULL OR b.encryption IS NOT NULL)
  )
ORDER BY expires_at, id
LIMIT :limit

-- name: artifact_to_verify
-- Pending verifications first, then (with the filter) the least recently verified.
SELECT id, workspace_id, backup_id, run_id, name, size, sha256, state, storage, object_key,
       upload_id, created_at, expires_at, locked_until, verification, verified_at, held
FROM artifacts
WHERE state = 'available' AND (verification = 'pending' /*filters*/)
ORDER BY CASE WHEN verification = 'pending' THEN 0 ELSE 1 END,
         coalesce(verified_at, created_at), id
LIMIT :limit

-- name: filter_artifact_verified_before
OR verified_at IS NULL OR verified_at < :verified_before

-- name: run_references_of_backup
-- For each run of a backup whose snapshot references artifacts, their ids.
SELECT r.run_id, r.artifact_id
FROM run_references r JOIN runs u ON u.id = r.run_id
WHERE r.workspace_id = :workspace_id AND u.backup_id = :backup_id
ORDER BY r.run_id, r.artifact_id

-- name: run_references_referrers
-- The runs referencing an artifact, each with its count of available artifacts.
SELECT r.run_id, (
    SELECT count(*) FROM artifacts a
    WHERE a.workspace_id = r.workspace_id AND a.run_id = r.run_id AND a.state = 'available'
) AS available
FROM run_references r
WHERE r.workspace_id = :workspace_id AND r.artifact_id = :artifact_id
ORDER BY r.run_id

-- name: worker_insert
INSERT INTO workers (id, workspace_id, name, token_hash, created_at, last_seen_at)
VALUES (:id, :workspace_id, :name, :token_hash, :created_at, :last_seen_at)

-- name: worker_exists
SELECT 1 AS found FROM workers WHERE id = :id AND workspace_id = :workspace_id

-- name: worker_get
SELECT id, workspace_id, name, token_hash, created_at, last_seen_at
FROM workers
WHERE workspace_id = :workspace_id AND id = :id

-- name: worker_find
SELECT id, workspace_id, name, token_hash, created_at, last_seen_at
FROM workers
WHERE token_hash = :token_hash

-- name: worker_update
-- The creation time never changes.
UPDATE workers
SET name = :name, token_hash = :token_hash, last_seen_at = :last_seen_at
WHERE workspace_id = :workspace_id AND id = :id

-- name: worker_touch
UPDATE workers
SET last_seen_at = :at
WHERE id = :id AND (last_seen_at IS NULL OR last_seen_at < :stale_before)

-- name: worker_delete
DELETE FROM workers WHERE workspace_id = :workspace_id AND id = :id

-- name: worker_list
SELECT id, workspace_id, name, token_hash, created_at, last_seen_at
FROM workers
WHERE workspace_id = :workspace_id /*filters*/
ORDER BY created_at DESC, id DESC
LIMIT :limit

-- name: filter_worker_after
AND (created_at, id) < (:after_created_at, :after_id)

-- name: worker_count
SELECT count(*) AS n FROM workers WHERE workspace_id = :workspace_id

-- name: api_key_insert
INSERT INTO api_keys (
    id, workspace_id, name, permissions, token_hash, created_at, expires_at, last_used_at
) VALUES (
    :id, :workspace_id, :name, :permissions, :token_hash, :created_at, :expires_at,
    :last_used_at
)

-- name: api_key_get
SELECT id, workspace_id, name, permissions, token_hash, created_at, expires_at, last_used_at
FROM api_keys
WHERE workspace_id = :workspace_id AND id = :id

-- name: api_key_find
SELECT id, workspace_id, name, permissions, token_hash, created_at, expires_at, last_used_at
FROM api_keys
WHERE token_hash = :token_hash

-- name: api_key_touch
UPDATE api_keys
SET last_used_at = :at
WHERE id = :id AND (last_used_at IS NULL OR last_used_at < :stale_before)

-- name: api_key_delete
DELETE FROM api_keys WHERE workspace_id = :workspace_id AND id = :id

-- name: api_key_list
SELECT id, workspace_id, name, permissions, token_hash, created_at, expires_at, last_used_at
FROM api_keys
WHERE workspace_id = :workspace_id /*filters*/
ORDER BY created_at DESC, id DESC
LIMIT :limit

-- name: filter_api_key_after
AND (created_at, id) < (:after_created_at, :after_id)

-- name: api_key_count
SELECT count(*) AS n FROM api_keys WHERE workspace_id = :workspace_id

-- name: role_insert
INSERT INTO roles (workspace_id, slug, name, permissions)
VALUES (:workspace_id, :slug, :name, :permissions)

-- name: role_get
SELECT slug, name, permissions FROM roles WHERE workspace_id = :workspace_id AND slug = :slug

-- name: role_update
UPDATE roles SET name = :name, permissions = :permissions
WHERE workspace_id = :workspace_id AND slug = :slug

-- name: role_delete
DELETE FROM roles WHERE workspace_id = :workspace_id AND slug = :slug

-- name: audit_insert
INSERT INTO audit_events (
    id, workspace_id, occurred_at, actor_type, actor_id, action, target_type, target_id,
    request_id, outcome, changes
) VALUES (
    :id, :workspace_id, :occurred_at, :actor_type, :actor_id, :action, :target_type,
    :target_id, :request_id, :outcome, :changes
)

-- name: audit_insert_if_backup
-- audit_insert, only if the backup :backup_id exists (the event of a counted create).
INSERT INTO audit_events (
    id, workspace_id, occurred_at, actor_type, actor_id, action, target_type, target_id,
    request_id, outcome, changes
)
SELECT :id, :workspace_id, :occurred_at, :actor_type, :actor_id, :action, :target_type,
       :target_id, :request_id, :outcome, :changes
WHERE EXISTS (SELECT 1 FROM backups WHERE workspace_id = :workspace_id AND id = :backup_id)

-- name: audit_list
SELECT id, workspace_id, occurred_at, actor_type, actor_id, action, target_type, target_id,
       request_id, outcome, changes
FROM audit_events
WHERE workspace_id = :workspace_id /*filters*/
ORDER BY occurred_at DESC, id DESC
LIMIT :limit

-- name: filter_audit_action
AND action = :action

-- name: filter_audit_actor
AND actor_id = :actor_id

-- name: filter_audit_since
AND occurred_at >= :since

-- name: filter_audit_after
AND (occurred_at, id) < (:after_created_at, :after_id)

-- name: idempotency_reserve
-- Takes a free key, or replaces one reserved before :expired_before; returns no row when a
-- live reservation holds the key (a concurrent one is waited for, then seen as live).
INSERT INTO idempotency_keys (scope, idempotency_key, fingerprint, created_at, body)
VALUES (:scope, :idempotency_key, :fingerprint, :created_at, :body)
ON CONFLICT (scope, idempotency_key) DO UPDATE
SET fingerprint = excluded.fingerprint, created_at = excluded.created_at,
    body = excluded.body
WHERE idempotency_keys.created_at < :expired_before
RETURNING scope

-- name: idempotency_get
SELECT scope, idempotency_key, fingerprint, created_at, body
FROM idempotency_keys
WHERE scope = :scope AND idempotency_key = :idempotency_key

-- name: idempotency_complete
UPDATE idempotency_keys
SET body = :body
WHERE scope = :scope AND idempotency_key = :idempotency_key

-- name: idempotency_purge
-- The retention job's: keys past their lifetime (a reservation would replace them anyway).
DELETE FROM idempotency_keys WHERE created_at < :expired_before

-- name: account_insert
INSERT INTO accounts (id, email, email_key, name, password_hash, created_at)
VALUES (:id, :email, :email_key, :name, :password_hash, :created_at)

-- name: account_get
SELECT id, email, name, password_hash, created_at FROM accounts WHERE id = :id

-- name: account_get_by_email
SELECT id, email, name, password_hash, created_at FROM accounts WHERE email_key = :email_key

-- name: failed_login_insert
INSERT INTO failed_logins (email_key, client_address, failed_at)
VALUES (:email_key, :client_address, :failed_at)

-- name: failed_login_recent
SELECT failed_at FROM failed_logins
WHERE email_key = :email_key AND client_address = :client_address AND failed_at >= :since
ORDER BY failed_at DESC LIMIT :limit

-- name: failed_login_recent_by_address
SELECT failed_at FROM failed_logins
WHERE client_address = :client_address AND failed_at >= :since
ORDER BY failed_at DESC LIMIT :limit

-- name: failed_login_purge
-- The retention job's: failures older than every rate-limit window count for nothing.
DELETE FROM failed_logins WHERE failed_at < :before

-- name: device_grant_insert
INSERT INTO device_grants (
    id, device_code_hash, user_code, client_id, created_at, expires_at, poll_interval, state,
    account_id, failed_approvals, last_polled_at, access_token_hash, access_expires_at
) VALUES (
    :id, :device_code_hash, :user_code, :client_id, :created_at, :expires_at, :poll_interval,
    :state, :account_id, :failed_approvals, :last_polled_at, :access_token_hash,
    :access_expires_at
)

-- name: device_grant_columns
-- A device grant's columns as the repositories read them (a fragment, after a SELECT).
id, device_code_hash, user_code, client_id, created_at, expires_at, poll_interval,
       state, account_id, failed_approvals, last_polled_at, access_token_hash,
       access_expires_at

-- name: device_grant_by_device_code
SELECT /*fragment device_grant_columns*/
FROM device_grants
WHERE device_code_hash = :device_code_hash
ORDER BY created_at DESC, id DESC
LIMIT 1
/*lock*/

-- name: device_grant_by_user_code
SELECT /*fragment device_grant_columns*/
FROM device_grants
WHERE user_code = :user_code
ORDER BY created_at DESC, id DESC
LIMIT 1
/*lock*/

-- name: device_grant_by_access_token
SELECT /*fragment device_grant_columns*/
FROM device_grants
WHERE access_token_hash = :access_token_hash
ORDER BY created_at DESC, id DESC
LIMIT 1
/*lock*/

-- name: device_grant_update
UPDATE device_grants
SET device_code_hash = :device_code_hash, user_code = :user_code, client_id = :client_id,
    created_at = :created_at, expires_at = :expires_at, poll_interval = :poll_interval,
    state = :state, account_id = :account_id, failed_approvals = :failed_approvals,
    last_polled_at = :last_polled_at, access_token_hash = :access_token_hash,
    access_expires_at = :access_expires_at
WHERE id = :id

-- name: invitation_insert
INSERT INTO invitations (
    id, workspace_id, email, email_key, role, created_at, expires_at, accepted_at
) VALUES (
    :id, :workspace_id, :email, :email_key, :role, :created_at, :expires_at, :accepted_at
)

-- name: invitation_get
SELECT id, workspace_id, email, role, created_at, expires_at, accepted_at
FROM invitations
WHERE workspace_id = :workspace_id AND id = :id

-- name: invitation_update
UPDATE invitations SET accepted_at = :accepted_at
WHERE workspace_id = :workspace_id AND id = :id

-- name: invitation_list
SELECT id, workspace_id, email, role, created_at, expires_at, accepted_at
FROM invitations
WHERE workspace_id = :workspace_id /*filters*/
ORDER BY created_at DESC, id DESC
LIMIT :limit

-- name: filter_invitation_after
AND (created_at, id) < (:after_created_at, :after_id)

-- name: invitation_count_pending
SELECT count(*) AS n FROM invitations
WHERE workspace_id = :workspace_id AND accepted_at IS NULL AND expires_at > :now /*filters*/

-- name: filter_invitation_role
AND role = :role

-- name: invitation_get_for_email
SELECT id, workspace_id, email, role, created_at, expires_at, accepted_at
FROM invitations
WHERE id = :id AND email_key = :email_key
/*lock*/

-- name: statistics_runs_by_state
-- Monitoring (GET /metrics): counts across every workspace, with no workspace in them.
SELECT state, count(*) AS n FROM runs GROUP BY state

-- name: statistics_artifacts_by_state
SELECT state, count(*) AS n FROM artifacts GROUP BY state

-- name: statistics_artifacts_by_verification
SELECT verification AS state, count(*) AS n
FROM artifacts
WHERE state = 'available' AND verification IS NOT NULL
GROUP BY verification

-- name: statistics_workspace_storage_bytes
-- One row per workspace, its stored bytes only (the id is grouped on, never returned).
SELECT CAST(coalesce(sum(a.size), 0) AS BIGINT) AS n
FROM workspaces AS w
LEFT JOIN artifacts AS a
    ON a.workspace_id = w.id AND a.state = 'available' AND a.storage = 'service'
GROUP BY w.id

-- name: run_next_queued
-- The oldest queued run of a backup assigned to :worker_id, locked: on PostgreSQL a run
-- another claimer holds locked is skipped; on SQLite the unit of work holds the one writer
-- from this read (writes=True). Concurrent claimers never take the same run.
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
/*lock of runs, skip locked*/

-- name: restore_insert
INSERT INTO restores (
    id, workspace_id, artifact_id, target, state, sealed_credentials, error, created_at,
    started_at, finished_at, attempt, lease_expires_at
) VALUES (
    :id, :workspace_id, :artifact_id, :target, :state, :sealed_credentials, :error,
    :created_at, :started_at, :finished_at, :attempt, :lease_expires_at
)

-- name: restore_get
SELECT id, workspace_id, artifact_id, target, state, sealed_credentials, error, created_at,
       started_at, finished_at, attempt, lease_expires_at
FROM restores
WHERE workspace_id = :workspace_id AND id = :id
/*lock*/

-- name: restore_update
-- Identity, artifact, target and creation time never change.
UPDATE restores
SET state = :state, sealed_credentials = :sealed_credentials, error = :error,
    started_at = :started_at, finished_at = :finished_at, attempt = :attempt,
    lease_expires_at = :lease_expires_at
WHERE workspace_id = :workspace_id AND id = :id AND artifact_id = :artifact_id

-- name: restore_lease_expired
-- Running restores of every workspace whose lease ran out (index restores_running),
-- soonest expiry first.
SELECT id, workspace_id, artifact_id, target, state, sealed_credentials, error, created_at,
       started_at, finished_at, attempt, lease_expires_at
FROM restores
WHERE state = 'running' AND lease_expires_at <= :now
ORDER BY lease_expires_at, id
LIMIT :limit

-- name: restore_next_queued
-- The oldest queued restore of any workspace (index restores_queued), locked: on
-- PostgreSQL one another runner holds locked is skipped; on SQLite the unit of work holds
-- the one writer from this read (writes=True). Concurrent runners never take the same one.
SELECT id, workspace_id, artifact_id, target, state, sealed_credentials, error, created_at,
       started_at, finished_at, attempt, lease_expires_at
FROM restores
WHERE state = 'queued'
ORDER BY created_at, id
LIMIT 1
/*lock of restores, skip locked*/

-- name: run_next_queued_cloud
-- The oldest queued run of a cloud backup in any workspace, for the service's executors;
-- locked and skipping locked ones as run_next_queued does.
SELECT runs.id, runs.workspace_id, runs.backup_id, runs.state, runs.trigger,
       runs.worker_id, runs.created_at, runs.started_at, runs.finished_at,
       runs.artifact_count, runs.bytes, runs.error, runs.attempt, runs.lease_expires_at,
       runs.cancel_requested, runs.progress
FROM runs
JOIN backups ON backups.workspace_id = runs.workspace_id AND backups.id = runs.backup_id
WHERE runs.state = 'queued' AND backups.kind = 'cloud'
ORDER BY runs.created_at, runs.id
LIMIT 1
/*lock of runs, skip locked*/

-- name: backup_due
-- Scheduled backups of every workspace whose next_run_at has come, soonest first, through
-- the partial index backups_due (0009): the cost grows with the number due, not with the
-- number of backups. Only scheduled backups have a next_run_at; the rest is a safeguard.
SELECT /*fragment backup_columns*/
FROM backups
WHERE next_run_at <= :now AND state = 'active' AND NOT paused AND schedule_cron IS NOT NULL
ORDER BY next_run_at
LIMIT :limit

-- name: backup_advance_schedule
-- Compare-and-set of a backup's next slot: it moves from :expected to :next_run_at (with
-- the body that shows it) only if nobody moved it first. Of concurrent schedulers, exactly
-- one changes the row (the others wait for its row lock, then find next_run_at changed and
-- change nothing).
UPDATE backups SET next_run_at = :next_run_at, body = :body
WHERE workspace_id = :workspace_id AND id = :id AND next_run_at = :expected

-- name: backup_drill_due
-- Backups of every workspace whose next drill slot has come, soonest first, through the
-- partial index backups_drill_due (0021); only backups whose drills are scheduled (active,
-- unpaused, with a drill) have a next_drill_at, the rest is a safeguard.
SELECT /*fragment backup_columns*/
FROM backups
WHERE next_drill_at <= :now AND state = 'active' AND NOT paused AND drill IS NOT NULL
ORDER BY next_drill_at
LIMIT :limit

-- name: backup_advance_drill
-- Compare-and-set of a backup's next drill slot, as backup_advance_schedule: of
-- concurrent schedulers exactly one moves it from :expected and queues the slot's drill
-- (the body stays: the API does not show the next drill slot).
UPDATE backups SET next_drill_at = :next_drill_at
WHERE workspace_id = :workspace_id AND id = :id AND next_drill_at = :expected

-- name: drill_open_exists
-- Whether a drill of a backup is queued or running (index drills_by_backup).
SELECT count(*) AS n FROM (
    SELECT 1 FROM drills
    WHERE workspace_id = :workspace_id AND backup_id = :backup_id
      AND state IN ('queued', 'running')
    LIMIT 1
) AS open_drills

-- name: run_open_exists
-- Whether a backup has a queued or running run (index runs_open).
SELECT count(*) AS n FROM (
    SELECT 1 FROM runs
    WHERE workspace_id = :workspace_id AND backup_id = :backup_id
      AND state IN ('queued', 'running')
    LIMIT 1
) AS open_runs

-- name: retention_ruled_backups
-- The backups whose runs the keep rules decide (the retention job's one look-up across
-- workspaces): a policy with keep rules (0017), a snapshot backup (encryption set:
-- Backup.decided_run_by_run), or runs that reference artifacts.
SELECT workspace_id, id FROM backups
WHERE retention_keep IS NOT NULL OR encryption IS NOT NULL
UNION
SELECT r.workspace_id, r.backup_id
FROM run_references AS rr
JOIN runs AS r ON r.id = rr.run_id
ORDER BY workspace_id, id

-- name: retention_finished_runs
-- Read as tuples (fetch_rows): the repository unpacks the columns in this order.
SELECT id, finished_at
FROM runs
WHERE workspace_id = :workspace_id AND backup_id = :backup_id AND state = 'succeeded'
  AND finished_at IS NOT NULL

-- name: retention_available_artifacts
-- What the decision needs of each: its run, lock and hold (read as tuples, in this order).
SELECT id, run_id, locked_until, held
FROM artifacts
WHERE workspace_id = :workspace_id AND backup_id = :backup_id AND state = 'available'

-- name: retention_references
SELECT rr.run_id, rr.artifact_id
FROM run_references AS rr
JOIN runs AS r ON r.id = rr.run_id
WHERE rr.workspace_id = :workspace_id AND r.workspace_id = :workspace_id
  AND r.backup_id = :backup_id

-- name: retention_reference_insert
INSERT INTO run_references (workspace_id, run_id, artifact_id)
VALUES (:workspace_id, :run_id, :artifact_id)
ON CONFLICT DO NOTHING

-- Assurance (0018): health facts and the stored status, webhooks and their outbox.

-- name: health_facts
-- Each backup with what its health is evaluated from: its newest success, its newest
-- failed run, the status stored last and when its admins were last mailed.
SELECT b.id, b.workspace_id, b.name, b.created_at, b.state, b.paused, b.schedule_cron,
       b.schedule_timezone, b.freshness_max_age_seconds,
       (SELECT max(r.finished_at) FROM runs AS r
        WHERE r.workspace_id = b.workspace_id AND r.backup_id = b.id
          AND r.state = 'succeeded') AS last_success_at,
       f.id AS failure_id, f.error AS failure_error, f.finished_at AS failure_at,
       h.status AS stored_status, h.mailed_at
FROM backups AS b
LEFT JOIN runs AS f ON f.id = (
    SELECT r.id FROM runs AS r
    WHERE r.workspace_id = b.workspace_id AND r.backup_id = b.id AND r.state = 'failed'
      AND r.finished_at IS NOT NULL
    ORDER BY r.finished_at DESC, r.id DESC
    LIMIT 1
)
LEFT JOIN backup_health AS h ON h.backup_id = b.id
WHERE 1 = 1 /*filters*/

-- name: filter_health_workspace
AND b.workspace_id = :workspace_id

-- name: health_insert
-- The first stored status of a backup (nothing when another evaluator stored one first).
INSERT INTO backup_health (backup_id, workspace_id, status, changed_at)
SELECT id, workspace_id, :status, :changed_at FROM backups
WHERE workspace_id = :workspace_id AND id = :backup_id
ON CONFLICT (backup_id) DO NOTHING

-- name: health_update
-- The compare-and-set of a stored status: only from the status the evaluator read.
UPDATE backup_health SET status = :status, changed_at = :changed_at
WHERE workspace_id = :workspace_id AND backup_id = :backup_id AND status = :expected

-- name: health_mailed
UPDATE backup_health SET mailed_at = :mailed_at
WHERE workspace_id = :workspace_id AND backup_id = :backup_id
  AND (mailed_at IS NULL OR mailed_at <= :not_since)

-- name: health_counts
SELECT h.status, count(*) AS n FROM backup_health AS h GROUP BY h.status

-- name: webhook_insert
INSERT INTO webhooks (id, workspace_id, url, events, sealed_secret, created_at)
VALUES (:id, :workspace_id, :url, :events, :sealed_secret, :created_at)

-- name: webhook_get
SELECT id, workspace_id, url, events, created_at FROM webhooks
WHERE workspace_id = :workspace_id AND id = :id

-- name: webhook_list
SELECT id, workspace_id, url, events, created_at FROM webhooks
WHERE workspace_id = :workspace_id /*filters*/
ORDER BY created_at DESC, id DESC
LIMIT :limit

-- name: filter_webhook_after
AND (created_at, id) < (:after_created_at, :after_id)

-- name: webhook_in_workspace
SELECT id, workspace_id, url, events, created_at FROM webhooks
WHERE workspace_id = :workspace_id
ORDER BY created_at, id

-- name: webhook_update
UPDATE webhooks SET url = :url, events = :events
WHERE workspace_id = :workspace_id AND id = :id

-- name: webhook_delete
DELETE FROM webhooks WHERE workspace_id = :workspace_id AND id = :id

-- name: delivery_insert
INSERT INTO webhook_deliveries (
    id, webhook_id, workspace_id, event, payload, created_at, state, attempts, next_attempt_at
)
SELECT :id, id, workspace_id, :event, :payload, :created_at, :state, :attempts,
       :next_attempt_at
FROM webhooks WHERE workspace_id = :workspace_id AND id = :webhook_id

-- name: delivery_columns
id, webhook_id, workspace_id, event, payload, created_at, state, attempts, next_attempt_at

-- name: delivery_get
SELECT /*fragment delivery_columns*/ FROM webhook_deliveries
WHERE workspace_id = :workspace_id AND webhook_id = :webhook_id AND id = :id
/*lock*/

-- name: delivery_list
SELECT /*fragment delivery_columns*/ FROM webhook_deliveries
WHERE workspace_id = :workspace_id AND webhook_id = :webhook_id /*filters*/
ORDER BY created_at DESC, id DESC
LIMIT :limit

-- name: filter_delivery_after
AND (created_at, id) < (:after_created_at, :after_id)

-- name: delivery_update
UPDATE webhook_deliveries
SET state = :state, attempts = :attempts, next_attempt_at = :next_attempt_at
WHERE workspace_id = :workspace_id AND id = :id

-- name: drill_insert
INSERT INTO drills (
    id, workspace_id, backup_id, run_id, state, created_at, started_at, finished_at,
    restore_seconds, bytes, checks, error
) VALUES (
    :id, :workspace_id, :backup_id, :run_id, :state, :created_at, :started_at, :finished_at,
    :restore_seconds, :bytes, :checks, :error
)

-- name: drill_get
SELECT id, workspace_id, backup_id, run_id, state, created_at, started_at, finished_at,
       restore_seconds, bytes, checks, error
FROM drills
WHERE workspace_id = :workspace_id AND id = :id
/*lock*/

-- name: drill_update
-- Identity, backup and creation time never change.
UPDATE drills
SET run_id = :run_id, state = :state, started_at = :started_at, finished_at = :finished_at,
    restore_seconds = :restore_seconds, bytes = :bytes, checks = :checks, error = :error
WHERE workspace_id = :workspace_id AND id = :id AND backup_id = :backup_id

-- name: drill_next_queued
-- The oldest queued drill of any workspace (index drills_queued), locked and skipping
-- locked ones as restore_next_queued does.
SELECT id, workspace_id, backup_id, run_id, state, created_at, started_at, finished_at,
       restore_seconds, bytes, checks, error
FROM drills
WHERE state = 'queued'
ORDER BY created_at, id
LIMIT 1
/*lock of drills, skip locked*/

-- name: drill_started_before
-- Running drills of every workspace started before :before (index drills_running).
SELECT id, workspace_id, backup_id, run_id, state, created_at, started_at, finished_at,
       restore_seconds, bytes, checks, error
FROM drills
WHERE state = 'running' AND started_at < :before
ORDER BY started_at, id
LIMIT :limit

-- name: drill_list_for_backup
-- A backup's drills, newest first (index drills_by_backup).
SELECT id, workspace_id, backup_id, run_id, state, created_at, started_at, finished_at,
       restore_seconds, bytes, checks, error
FROM drills
WHERE workspace_id = :workspace_id AND backup_id = :backup_id /*filters*/
ORDER BY created_at DESC, id DESC
LIMIT :limit

-- name: filter_drill_after
AND (created_at, id) < (:after_created_at, :after_id)

-- name: artifact_manifest_insert
-- A run's next attempt records its own dump's manifest over the last one's.
INSERT INTO artifact_manifests (artifact_id, workspace_id, tables)
VALUES (:artifact_id, :workspace_id, :tables)
ON CONFLICT (artifact_id) DO UPDATE SET tables = excluded.tables

-- name: artifact_manifest_get
SELECT tables FROM artifact_manifests
WHERE workspace_id = :workspace_id AND artifact_id = :artifact_id
