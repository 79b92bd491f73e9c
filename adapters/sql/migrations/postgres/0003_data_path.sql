-- 0002 data path: runs of backups and their artifacts.
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

-- Artifacts: a run's files. The foreign key names workspace, backup and run together, so
-- an artifact always belongs to a run of its own backup in its own workspace. Deleted
-- artifacts keep their record (state 'deleted').
ALTER TABLE runs ADD CONSTRAINT runs_lineage_unique UNIQUE (workspace_id, backup_id, id);

CREATE TABLE artifacts (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL,
    backup_id uuid NOT NULL,
    run_id uuid NOT NULL,
    name text NOT NULL,
    size bigint NOT NULL CONSTRAINT artifacts_size_check CHECK (size >= 0),
    sha256 text NOT NULL,
    state text NOT NULL
        CONSTRAINT artifacts_state_check CHECK (state IN ('pending', 'available', 'deleted')),
    storage text NOT NULL
        CONSTRAINT artifacts_storage_check CHECK (storage IN ('service', 'customer')),
    object_key text NOT NULL,
    upload_id text,
    created_at timestamptz NOT NULL,
    expires_at timestamptz,
    locked_until timestamptz,
    CONSTRAINT artifacts_name_unique UNIQUE (run_id, name),
    CONSTRAINT artifacts_run_fkey FOREIGN KEY (workspace_id, backup_id, run_id)
        REFERENCES runs (workspace_id, backup_id, id) ON DELETE CASCADE
);
CREATE INDEX artifacts_by_workspace ON artifacts (workspace_id, created_at DESC, id DESC);
CREATE INDEX artifacts_by_backup ON artifacts (workspace_id, backup_id, state);
CREATE INDEX artifacts_by_expiry ON artifacts (expires_at) WHERE state = 'available';
