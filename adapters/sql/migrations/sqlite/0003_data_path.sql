-- 0002 data path: runs of backups and their artifacts.
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

-- Artifacts: a run's files. The foreign key names workspace, backup and run together, so
-- an artifact always belongs to a run of its own backup in its own workspace. Deleted
-- artifacts keep their record (state 'deleted').
CREATE UNIQUE INDEX runs_lineage_unique ON runs (workspace_id, backup_id, id);

CREATE TABLE artifacts (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    backup_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    name TEXT NOT NULL,
    size INTEGER NOT NULL CONSTRAINT artifacts_size_check CHECK (size >= 0),
    sha256 TEXT NOT NULL,
    state TEXT NOT NULL
        CONSTRAINT artifacts_state_check CHECK (state IN ('pending', 'available', 'deleted')),
    storage TEXT NOT NULL
        CONSTRAINT artifacts_storage_check CHECK (storage IN ('service', 'customer')),
    object_key TEXT NOT NULL,
    upload_id TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    locked_until TEXT,
    CONSTRAINT artifacts_name_unique UNIQUE (run_id, name),
    CONSTRAINT artifacts_run_fkey FOREIGN KEY (workspace_id, backup_id, run_id)
        REFERENCES runs (workspace_id, backup_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX artifacts_by_workspace ON artifacts (workspace_id, created_at DESC, id DESC);
CREATE INDEX artifacts_by_backup ON artifacts (workspace_id, backup_id, state);
CREATE INDEX artifacts_by_expiry ON artifacts (expires_at) WHERE state = 'available';
