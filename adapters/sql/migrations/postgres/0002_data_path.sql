-- 0002 data path: runs of backups.
--
-- A run belongs to a backup of its own workspace: the foreign key names both columns,
-- so a run can never point at another workspace's backup.

ALTER TABLE backups ADD CONSTRAINT backups_workspace_id_unique UNIQUE (workspace_id, id);

CREATE TABLE runs (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL,
    backup_id uuid NOT NULL,
    state text NOT NULL
        CONSTRAINT runs_state_check
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    trigger text NOT NULL
        CONSTRAINT runs_trigger_check CHECK (trigger IN ('manual', 'schedule', 'api')),
    worker_id uuid,
    created_at timestamptz NOT NULL,
    started_at timestamptz,
    finished_at timestamptz,
    artifact_count integer NOT NULL CONSTRAINT runs_artifact_count_check CHECK (artifact_count >= 0),
    bytes bigint NOT NULL CONSTRAINT runs_bytes_check CHECK (bytes >= 0),
    error text,
    CONSTRAINT runs_backup_fkey FOREIGN KEY (workspace_id, backup_id)
        REFERENCES backups (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX runs_by_backup ON runs (workspace_id, backup_id, created_at DESC, id DESC);
