-- 0015 a backup's body written by the repositories: its API JSON comes from the one wire
-- presenter (Python) when the row is written, and the database no longer renders it.
-- backups.body becomes a plain column (the rows keep the bodies they have, byte for byte
-- the presenter's), and backup_json, its one user gone, goes.
ALTER TABLE backups ALTER COLUMN body DROP EXPRESSION;
DROP FUNCTION backup_json(
    uuid, uuid, text, text, text, boolean, jsonb, boolean, text, text, uuid, bigint, bigint,
    jsonb, timestamptz, timestamptz, timestamptz
);
