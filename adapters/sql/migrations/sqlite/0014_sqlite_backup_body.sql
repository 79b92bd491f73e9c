-- 0014 a backup's body on SQLite: the API's JSON of a backup, rendered once when its row is
-- written instead of at every read of GET /v1/backups/{id} and of a list page (PostgreSQL
-- does so since its 0013, with a generated column). SQLite cannot add a STORED generated
-- column (see 0013), so body is a plain column that two triggers fill: after an insert, and
-- after an update of any other column. recursive_triggers stays off (SQLite's default), and
-- the triggers' own update names only body, which the update trigger does not watch.
--
-- backup_bodies is the one definition of that rendering on SQLite (its wire shape, byte for
-- byte what the Python presenter writes: keys in the view's order, no spaces, timestamps in
-- milliseconds with Z, durations in ISO 8601, secrets never shown: only whether credentials
-- are sealed). One printf per backup, strings by json_quote (NULL is null): json_object()
-- and json() parse each nested value again, and each || copies the text so far. The
-- triggers read it for one rowid (SQLite flattens the view into a look-up by rowid). A
-- change of the wire shape redefines the view AND rewrites every body, as the last
-- statement here does for the rows that exist.

ALTER TABLE backups ADD COLUMN body TEXT;

CREATE VIEW backup_bodies AS
SELECT b.rowid AS backup_rowid, printf(
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
) AS body
FROM backups AS b;

CREATE TRIGGER backups_body_insert AFTER INSERT ON backups
BEGIN
    UPDATE backups SET body = (SELECT body FROM backup_bodies WHERE backup_rowid = NEW.rowid)
    WHERE rowid = NEW.rowid;
END;

CREATE TRIGGER backups_body_update
AFTER UPDATE OF id, workspace_id, name, name_key, kind, state, paused, source,
    sealed_credentials, schedule_cron, schedule_timezone, worker_id,
    retention_expire_after_seconds, retention_lock_for_seconds, destination,
    sealed_destination_credentials, next_run_at, created_at, updated_at ON backups
BEGIN
    UPDATE backups SET body = (SELECT body FROM backup_bodies WHERE backup_rowid = NEW.rowid)
    WHERE rowid = NEW.rowid;
END;

UPDATE backups SET body = (SELECT body FROM backup_bodies WHERE backup_rowid = backups.rowid);
