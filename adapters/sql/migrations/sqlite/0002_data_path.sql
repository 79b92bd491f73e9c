-- 0002 data path: runs of backups.
--
-- A run belongs to a backup of its own workspace: the foreign key names both columns,
-- so a run can never point at another workspace's backup.

CREATE UNIQUE INDEX backups_workspace_id_unique ON backups (workspace_id, id);

CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    backup_id TEXT NOT NULL,
    state TEXT NOT NULL
        CONSTRAINT runs_state_check
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    trigger TEXT NOT NULL
        CONSTRAINT runs_trigger_check CHECK (trigger IN ('manual', 'schedule', 'api')),
    worker_id TEXT,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    artifact_count INTEGER NOT NULL CONSTRAINT runs_artifact_count_check CHECK (artifact_count >= 0),
    bytes INTEGER NOT NULL CONSTRAINT runs_bytes_check CHECK (bytes >= 0),
    error TEXT,
    CONSTRAINT runs_backup_fkey FOREIGN KEY (workspace_id, backup_id)
        REFERENCES backups (workspace_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX runs_by_backup ON runs (workspace_id, backup_id, created_at DESC, id DESC);
