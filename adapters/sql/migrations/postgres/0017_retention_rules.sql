-- 0017 retention rules and legal hold (contract 15): a policy's keep rules (NULL when not
-- set; else a JSON object of the six counts, written from Python), an artifact's legal
-- hold, and the artifacts a snapshot run references (the table of contract 14, created
-- here too so that this migration stands without the snapshot migration; IF NOT EXISTS).
ALTER TABLE backups ADD COLUMN retention_keep jsonb
    CONSTRAINT backups_retention_keep_check CHECK (jsonb_typeof(retention_keep) = 'object');
ALTER TABLE artifacts ADD COLUMN held boolean NOT NULL DEFAULT false;
CREATE TABLE IF NOT EXISTS run_references (
    workspace_id uuid NOT NULL,
    run_id uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    artifact_id uuid NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    PRIMARY KEY (run_id, artifact_id)
);
CREATE INDEX IF NOT EXISTS run_references_by_artifact ON run_references (artifact_id);
