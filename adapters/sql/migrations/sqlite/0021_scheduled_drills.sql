-- 0021 scheduled restore drills (contract 16): a backup's drill ({schedule, target}, as
-- the API shows it) and its next drill slot, set only while drills are scheduled (active,
-- unpaused, with a drill); the drill scheduler finds due slots through a partial index
-- and claims each with a compare-and-set of next_drill_at, as the run scheduler does.
ALTER TABLE backups ADD COLUMN drill TEXT
    CONSTRAINT backups_drill_check CHECK (json_type(drill) = 'object');
ALTER TABLE backups ADD COLUMN next_drill_at TEXT;
CREATE INDEX backups_drill_due ON backups (next_drill_at) WHERE next_drill_at IS NOT NULL;
-- The stored bodies gain the new field (null: no backup had one).
UPDATE backups SET body = substr(body, 1, length(body) - 1) || ',"drill":null}'
WHERE body IS NOT NULL;
