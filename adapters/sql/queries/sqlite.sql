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

-- name: backup_json
-- The API's JSON of the backup b (its wire shape, byte for byte what the Python presenter
-- writes: keys in the view's order, no spaces, timestamps in milliseconds with Z, durations
-- in ISO 8601, secrets never shown). A fragment of the *_json reads (/*fragment backup_json*/).
-- json() around a CASE keeps its value JSON (an object, true/false), not a string.
json_object(
    'id', b.id,
    'workspace_id', b.workspace_id,
    'name', b.name,
    'kind', b.kind,
    'state', b.state,
    'paused', json(CASE WHEN b.paused THEN 'true' ELSE 'false' END),
    'source', json(CASE
        WHEN b.source IS NULL THEN NULL
        WHEN b.source ->> '$.type' = 's3' THEN json_object(
               'endpoint', b.source ->> '$.endpoint', 'bucket', b.source ->> '$.bucket',
               'prefix', b.source ->> '$.prefix', 'type', 's3')
        WHEN b.source ->> '$.type' = 'postgres' THEN json_object(
               'host', b.source ->> '$.host', 'port', b.source ->> '$.port',
               'database', b.source ->> '$.database', 'type', 'postgres')
        ELSE json_object('type', b.source ->> '$.type')
    END),
    'has_credentials', json(CASE WHEN b.sealed_credentials IS NULL THEN 'false' ELSE 'true' END),
    'schedule', json(CASE
        WHEN b.schedule_cron IS NULL THEN NULL
        ELSE json_object('cron', b.schedule_cron, 'timezone', b.schedule_timezone)
    END),
    'worker_id', b.worker_id,
    'retention', json(CASE
        WHEN b.retention_expire_after_seconds IS NULL THEN NULL
        ELSE json_object(
           'expire_after', CASE
               WHEN b.retention_expire_after_seconds = 0 THEN 'PT0S'
               ELSE 'P' || CASE WHEN b.retention_expire_after_seconds >= 86400 THEN (b.retention_expire_after_seconds / 86400) || 'D' ELSE '' END
                    || CASE WHEN b.retention_expire_after_seconds % 86400 = 0 THEN ''
                            ELSE 'T'
                                 || CASE WHEN b.retention_expire_after_seconds % 86400 >= 3600
                                         THEN (b.retention_expire_after_seconds % 86400 / 3600) || 'H' ELSE '' END
                                 || CASE WHEN b.retention_expire_after_seconds % 3600 >= 60
                                         THEN (b.retention_expire_after_seconds % 3600 / 60) || 'M' ELSE '' END
                                 || CASE WHEN b.retention_expire_after_seconds % 60 > 0
                                         THEN (b.retention_expire_after_seconds % 60) || 'S' ELSE '' END
                       END
           END,
           'lock_for', CASE
               WHEN b.retention_lock_for_seconds = 0 THEN 'PT0S'
               ELSE 'P' || CASE WHEN b.retention_lock_for_seconds >= 86400 THEN (b.retention_lock_for_seconds / 86400) || 'D' ELSE '' END
                    || CASE WHEN b.retention_lock_for_seconds % 86400 = 0 THEN ''
                            ELSE 'T'
                                 || CASE WHEN b.retention_lock_for_seconds % 86400 >= 3600
                                         THEN (b.retention_lock_for_seconds % 86400 / 3600) || 'H' ELSE '' END
                                 || CASE WHEN b.retention_lock_for_seconds % 3600 >= 60
                                         THEN (b.retention_lock_for_seconds % 3600 / 60) || 'M' ELSE '' END
                                 || CASE WHEN b.retention_lock_for_seconds % 60 > 0
                                         THEN (b.retention_lock_for_seconds % 60) || 'S' ELSE '' END
                       END
           END)
    END),
    'destination', json(CASE
        WHEN b.destination ->> '$.type' = 'customer_s3' THEN json_object(
               'endpoint', b.destination ->> '$.endpoint', 'bucket', b.destination ->> '$.bucket',
               'prefix', b.destination ->> '$.prefix', 'type', 'customer_s3')
        ELSE json_object('type', b.destination ->> '$.type')
    END),
    'next_run_at', substr(b.next_run_at, 1, 23) || 'Z',
    'created_at', substr(b.created_at, 1, 23) || 'Z',
    'updated_at', substr(b.updated_at, 1, 23) || 'Z'
)

-- name: session_find_with_backup_json
-- session_find_with_backup with the backup as the API's JSON text (body; NULL when the
-- session's workspace has no backup of this id): the read model of GET /v1/backups/{id}.
SELECT s.id AS g_id, s.token_hash AS g_token_hash, s.user_id AS g_user_id,
       s.workspace_id AS g_workspace_id, s.created_at AS g_created_at,
       s.expires_at AS g_expires_at, s.revoked_at AS g_revoked_at, u.email AS g_user_email,
       u.name AS g_user_name, u.idp_subject AS g_user_idp_subject,
       u.created_at AS g_user_created_at, m.role AS g_role_slug, r.name AS g_role_name,
       r.permissions AS g_role_permissions,
       CASE WHEN b.id IS NULL THEN NULL ELSE /*fragment backup_json*/ END AS body
FROM sessions AS s
JOIN users AS u ON u.id = s.user_id
LEFT JOIN memberships AS m ON m.workspace_id = s.workspace_id AND m.user_id = s.user_id
LEFT JOIN roles AS r ON r.workspace_id = m.workspace_id AND r.slug = m.role
LEFT JOIN backups AS b ON b.workspace_id = s.workspace_id AND b.id = :id
WHERE s.token_hash = :token_hash
LIMIT 1

-- name: session_find_with_backups_json
-- session_find_with_backups as one row: the session's columns (g_*), the page's items as
-- the API's JSON texts joined by commas in list order (items; NULL when none), and the
-- sort key of the last one shown when another follows (next_created_at, next_id): the
-- read model of GET /v1/workspaces/{wid}/backups. No row without a session; no items
-- unless :workspace_id is the session's workspace. :limit is :page_size + 1.
WITH g AS (
    SELECT s.id AS g_id, s.token_hash AS g_token_hash, s.user_id AS g_user_id,
           s.workspace_id AS g_workspace_id, s.created_at AS g_created_at,
           s.expires_at AS g_expires_at, s.revoked_at AS g_revoked_at,
           u.email AS g_user_email, u.name AS g_user_name,
           u.idp_subject AS g_user_idp_subject, u.created_at AS g_user_created_at,
           m.role AS g_role_slug, r.name AS g_role_name, r.permissions AS g_role_permissions
    FROM sessions AS s
    JOIN users AS u ON u.id = s.user_id
    LEFT JOIN memberships AS m ON m.workspace_id = s.workspace_id AND m.user_id = s.user_id
    LEFT JOIN roles AS r ON r.workspace_id = m.workspace_id AND r.slug = m.role
    WHERE s.token_hash = :token_hash
),
page AS MATERIALIZED (
    SELECT row_number() OVER (ORDER BY b.created_at DESC, b.id DESC) AS n, b.created_at, b.id,
           /*fragment backup_json*/ AS body
    FROM (
        SELECT *
        FROM backups
        WHERE workspace_id = :workspace_id
          AND workspace_id = (SELECT g_workspace_id FROM g) /*filters*/
        ORDER BY created_at DESC, id DESC
        LIMIT :limit
    ) AS b
)
SELECT g.*,
       (SELECT group_concat(body, ',') OVER (
           ORDER BY n ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
        FROM page WHERE n <= :page_size LIMIT 1) AS items,
       (SELECT created_at FROM page WHERE n = :page_size AND EXISTS (
           SELECT 1 FROM page WHERE n > :page_size)) AS next_created_at,
       (SELECT id FROM page WHERE n = :page_size AND EXISTS (
           SELECT 1 FROM page WHERE n > :page_size)) AS next_id
FROM g
