-- 0013 a backup's body: the API's JSON of a backup, rendered once when its row is written
-- (a generated column) instead of at every read of GET /v1/backups/{id} and of a list page.
--
-- backup_json is the one definition of that rendering on PostgreSQL (its wire shape, byte
-- for byte what the Python presenter writes: keys in the view's order, no spaces,
-- timestamps in milliseconds with Z, durations in ISO 8601, secrets never shown: only
-- whether credentials are sealed). Text by concatenation: json_build_object writes spaces
-- and jsonb reorders keys (concat() skips NULLs: durations).
--
-- IMMUTABLE, as a generated column requires. to_char, concat and to_json are only STABLE
-- in general because some of their inputs depend on settings; ours do not: to_char gets a
-- timestamp without time zone (AT TIME ZONE 'UTC' of a timestamptz, the same whatever the
-- session's TimeZone) and a pattern of digits and literals only (no TM prefix, so no
-- lc_time); concat and to_json get text, uuid, boolean and bigint, whose output does not
-- depend on DateStyle, IntervalStyle or the locale; jsonb's ->, ->> and ::text are
-- immutable. A function's result is not recomputed when the function is redefined: a change
-- of the wire shape redefines it AND recomputes the column (drop and add it again, or
-- rewrite every row), as this migration does for existing rows by adding the column.
-- PL/pgSQL, not SQL: an SQL function this long is not inlined (its body is less immutable
-- than declared), and PostgreSQL 15 parses and plans a non-inlined SQL function's body
-- again in every statement that calls it (every create and update of a backup: its
-- database CPU per create doubled). PL/pgSQL keeps the planned expression per session.
CREATE FUNCTION backup_json(
    id uuid, workspace_id uuid, name text, kind text, state text, paused boolean,
    source jsonb, has_credentials boolean, schedule_cron text, schedule_timezone text,
    worker_id uuid, expire_after bigint, lock_for bigint, destination jsonb,
    next_run_at timestamptz, created_at timestamptz, updated_at timestamptz
) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
RETURN concat('{"id":"', id, '","workspace_id":"', workspace_id, '","name":', to_json(name),
',"kind":"', kind, '","state":"', state, '","paused":',
CASE WHEN paused THEN 'true' ELSE 'false' END,
',"source":', CASE
    WHEN source IS NULL THEN 'null'
    WHEN source->>'type' = 's3' THEN '{"endpoint":' || (source->'endpoint')::text || ',"bucket":' || (source->'bucket')::text
        || ',"prefix":' || coalesce((source->'prefix')::text, 'null') || ',"type":"s3"}'
    WHEN source->>'type' = 'postgres' THEN '{"host":' || (source->'host')::text
        || ',"port":' || (source->'port')::text || ',"database":' || (source->'database')::text
        || ',"type":"postgres"}'
    ELSE '{"type":' || (source->'type')::text || '}'
END,
',"has_credentials":', CASE WHEN has_credentials THEN 'true' ELSE 'false' END,
',"schedule":', coalesce('{"cron":' || to_json(schedule_cron) || ',"timezone":'
    || to_json(schedule_timezone) || '}', 'null'),
',"worker_id":', coalesce('"' || worker_id || '"', 'null'),
',"retention":', CASE WHEN expire_after IS NULL THEN 'null'
    ELSE concat('{"expire_after":"', CASE expire_after WHEN 0 THEN 'PT0S' ELSE concat('P', nullif(expire_after / 86400, 0) || 'D', CASE WHEN expire_after % 86400 > 0 THEN concat('T', nullif(expire_after % 86400 / 3600, 0) || 'H', nullif(expire_after % 3600 / 60, 0) || 'M', nullif(expire_after % 60, 0) || 'S') END) END,
        '","lock_for":"', CASE lock_for WHEN 0 THEN 'PT0S' ELSE concat('P', nullif(lock_for / 86400, 0) || 'D', CASE WHEN lock_for % 86400 > 0 THEN concat('T', nullif(lock_for % 86400 / 3600, 0) || 'H', nullif(lock_for % 3600 / 60, 0) || 'M', nullif(lock_for % 60, 0) || 'S') END) END, '"}') END,
',"destination":', CASE WHEN destination->>'type' = 'customer_s3'
    THEN '{"endpoint":' || (destination->'endpoint')::text || ',"bucket":' || (destination->'bucket')::text
        || ',"prefix":' || coalesce((destination->'prefix')::text, 'null') || ',"type":"customer_s3"}'
    ELSE '{"type":' || (destination->'type')::text || '}' END,
',"next_run_at":', coalesce('"' || to_char(next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null'),
',"created_at":"', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
'","updated_at":"', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '"}');
END
$$;

-- Adding the column renders every existing backup (the table is rewritten once). Every
-- write of a backup's columns (update, pause, the scheduler's next_run_at) renders it again.
ALTER TABLE backups ADD COLUMN body text NOT NULL GENERATED ALWAYS AS (backup_json(
    id, workspace_id, name, kind, state, paused, source, sealed_credentials IS NOT NULL,
    schedule_cron, schedule_timezone, worker_id, retention_expire_after_seconds,
    retention_lock_for_seconds, destination, next_run_at, created_at, updated_at)) STORED;
