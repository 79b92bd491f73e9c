-- 0023 the retention job's look-up of the backups decided run by run (keep rules, 0017, or
-- a snapshot backup, encryption set; retention_ruled_backups) reads a partial index of
-- those backups alone, not every backup of every workspace: a pass at 10^6 backups cost
-- what it costs at 10^2 (bench/scale.py).
CREATE INDEX backups_ruled ON backups (workspace_id, id)
    WHERE retention_keep IS NOT NULL OR encryption IS NOT NULL;
