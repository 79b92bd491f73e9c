-- 0017 retention rules and legal hold (contract 15): a policy's keep rules (NULL when not
-- set; else a JSON object of the six counts, written from Python), an artifact's legal
-- hold, and the artifacts a snapshot run references (the table of contract 14, created
-- here too so that this migration stands without the snapshot migration; IF NOT EXISTS).
ALTER TABLE backups ADD COLUMN retention_keep TEXT
    CONSTRAINT backups_retention_keep_check CHECK (json_type(retention_keep) = 'object');
ALTER TABLE artifacts ADD COLUMN held INTEGER NOT NULL DEFAULT 0
    CONSTRAINT artifacts_held_check CHECK (held IN (0, 1));
CREATE TABLE IF NOT EXISTS run_references (
    workspace_id TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    artifact_id TEXT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    PRIMARY KEY (run_id, artifact_id)
) STRICT;
CREATE INDEX IF NOT EXISTS run_references_by_artifact ON run_references (artifact_id);
