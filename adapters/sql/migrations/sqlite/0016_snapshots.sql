-- 0016 snapshots (contract 14): a backup's encryption (the age recipients its snapshots are
-- sealed to, public keys; set, its format is snapshot) and the artifacts of earlier runs
-- that a run's snapshot references. Every stored body gains the two new fields the
-- presenter writes last ("format", "encryption"): no backup had encryption before.
ALTER TABLE backups ADD COLUMN encryption TEXT
    CONSTRAINT backups_encryption_check CHECK (json_type(encryption) = 'array');
UPDATE backups
SET body = substr(body, 1, length(body) - 1) || ',"format":"archive","encryption":null}'
WHERE body IS NOT NULL;

CREATE TABLE run_references (
    workspace_id TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    artifact_id TEXT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    PRIMARY KEY (run_id, artifact_id)
) STRICT;
CREATE INDEX run_references_by_artifact ON run_references (artifact_id);
