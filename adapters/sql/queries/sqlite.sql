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

-- name: backup_json
-- The API's JSON of the backup b (its wire shape, byte for byte what the Python presenter
-- writes: keys in the view's order, no spaces, timestamps in milliseconds with Z, durations
-- in ISO 8601, secrets never shown). A fragment of the *_json reads (/*fragment backup_json*/).
-- One printf per backup, strings by json_quote (NULL is null): json_object() and json()
-- parse each nested value again, and each || copies the text so far.
printf(
    '{"id":"%s","workspace_id":"%s","name":%s,"kind":"%s","state":"%s","paused":%s,'
    || '"source":%s,"has_credentials":%s,"schedule":%s,"worker_id":%s,"retention":%s,'
    || '"destination":%s,"next_run_at":%s,"created_at":"%.23sZ","updated_at":"%.23sZ"}',
    b.id, b.workspace_id, json_quote(b.name), b.kind, b.state,
    CASE WHEN b.paused THEN 'true' ELSE 'false' END,
    CASE
        WHEN b.source IS NULL THEN 'null'
        WHEN b.source ->> '$.type' = 's3' THEN printf('{"endpoint":%s,"bucket":%s,"prefix":%s,"type":"s3"}',
        json_quote(b.source ->> '$.endpoint'), json_quote(b.source ->> '$.bucket'),
        json_quote(b.source ->> '$.prefix'))
        WHEN b.source ->> '$.type' = 'postgres' THEN printf(
            '{"host":%s,"port":%s,"database":%s,"type":"postgres"}',
            json_quote(b.source ->> '$.host'), b.source ->> '$.port',
            json_quote(b.source ->> '$.database'))
        ELSE printf('{"type":%s}', json_quote(b.source ->> '$.type'))
    END,
    CASE WHEN b.sealed_credentials IS NULL THEN 'false' ELSE 'true' END,
    CASE WHEN b.schedule_cron IS NULL THEN 'null'
        ELSE printf('{"cron":%s,"timezone":%s}',
            json_quote(b.schedule_cron), json_quote(b.schedule_timezone)) END,
    json_quote(b.worker_id),
    CASE WHEN b.retention_expire_after_seconds IS NULL THEN 'null'
        ELSE printf('{"expire_after":"%s","lock_for":"%s"}',
            CASE WHEN b.retention_expire_after_seconds = 0 THEN 'PT0S' ELSE 'P'
            || CASE WHEN b.retention_expire_after_seconds >= 86400 THEN (b.retention_expire_after_seconds / 86400) || 'D' ELSE '' END
            || CASE WHEN b.retention_expire_after_seconds % 86400 = 0 THEN '' ELSE 'T'
                || CASE WHEN b.retention_expire_after_seconds % 86400 >= 3600 THEN (b.retention_expire_after_seconds % 86400 / 3600) || 'H' ELSE '' END
                || CASE WHEN b.retention_expire_after_seconds % 3600 >= 60 THEN (b.retention_expire_after_seconds % 3600 / 60) || 'M' ELSE '' END
                || CASE WHEN b.retention_expire_after_seconds % 60 > 0 THEN (b.retention_expire_after_seconds % 60) || 'S' ELSE '' END END END,
            CASE WHEN b.retention_lock_for_seconds = 0 THEN 'PT0S' ELSE 'P'
            || CASE WHEN b.retention_lock_for_seconds >= 86400 THEN (b.retention_lock_for_seconds / 86400) || 'D' ELSE '' END
            || CASE WHEN b.retention_lock_for_seconds % 86400 = 0 THEN '' ELSE 'T'
                || CASE WHEN b.retention_lock_for_seconds % 86400 >= 3600 THEN (b.retention_lock_for_seconds % 86400 / 3600) || 'H' ELSE '' END
                || CASE WHEN b.retention_lock_for_seconds % 3600 >= 60 THEN (b.retention_lock_for_seconds % 3600 / 60) || 'M' ELSE '' END
                || CASE WHEN b.retention_lock_for_seconds % 60 > 0 THEN (b.retention_lock_for_seconds % 60) || 'S' ELSE '' END END END) END,
    CASE
        -- The common one, as the codec writes it: no JSON parse (a third of a page's time).
        WHEN b.destination = '{"type":"service"}' THEN b.destination
        WHEN b.destination ->> '$.type' = 'customer_s3' THEN printf('{"endpoint":%s,"bucket":%s,"prefix":%s,"type":"customer_s3"}',
        json_quote(b.destination ->> '$.endpoint'), json_quote(b.destination ->> '$.bucket'),
        json_quote(b.destination ->> '$.prefix'))
        ELSE printf('{"type":%s}', json_quote(b.destination ->> '$.type'))
    END,
    CASE WHEN b.next_run_at IS NULL THEN 'null' ELSE printf('"%.23sZ"', b.next_run_at) END,
    b.created_at, b.updated_at
)

-- name: session_find_with_backups_json
-- session_find_with_backups as one row: the session's columns (g_*), the page's items as
-- the API's JSON texts joined by commas in list order (items; NULL when none), and the
-- sort key of the last one shown when another follows (next_created_at, next_id): the
-- read model of GET /v1/workspaces/{wid}/backups. No row without a session; no items
-- unless :workspace_id is the session's workspace. :limit is :page_size + 1.
-- Every step that takes rows by position orders them itself (LIMIT and OFFSET of a
-- materialized CTE do not promise its written order). SQLite 3.40 has no ORDER BY inside
-- an aggregate: group_concat reads an ordered subquery, SQLite's usual idiom for it (a
-- window over the rows cost as much as rendering them). The contract test compares every
-- page with the presenter's, in order.
WITH g AS MATERIALIZED (
    SELECT /*fragment session_grant_columns*/
/*fragment session_grant_joins*/
    WHERE s.token_hash = :token_hash
),
page AS MATERIALIZED (
    SELECT created_at, id, /*fragment backup_json*/ AS body
    FROM backups AS b
    WHERE workspace_id = :workspace_id
      AND workspace_id = (SELECT g_workspace_id FROM g) /*filters*/
    ORDER BY created_at DESC, id DESC
    LIMIT :limit
),
shown AS MATERIALIZED (
    SELECT created_at, id, body FROM page ORDER BY created_at DESC, id DESC LIMIT :page_size
),
last AS (
    SELECT created_at, id FROM shown
    WHERE (SELECT count(*) FROM page) > :page_size
    ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET :page_size - 1
)
SELECT g.*,
       (SELECT group_concat(body, ',')
        FROM (SELECT body FROM shown ORDER BY created_at DESC, id DESC)) AS items,
       (SELECT created_at FROM last) AS next_created_at, (SELECT id FROM last) AS next_id
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
