-- 0019 restore drills (contract 16): a backup's newest copy restored into a scratch target
-- the service owns and checked; and what a source recorded of an artifact when it was made
-- (a PostgreSQL dump's tables: rows and checksum), for its drills to check against. Both go
-- with their backup or artifact and their workspace.
CREATE TABLE drills (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    backup_id TEXT NOT NULL,
    run_id TEXT,
    state TEXT NOT NULL
        CONSTRAINT drills_state_check
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    restore_seconds REAL,
    bytes INTEGER,
    checks TEXT NOT NULL CONSTRAINT drills_checks_check CHECK (json_type(checks) = 'object'),
    error TEXT,
    CONSTRAINT drills_backup_fkey FOREIGN KEY (workspace_id, backup_id)
        REFERENCES backups (workspace_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX drills_by_backup ON drills (workspace_id, backup_id, created_at DESC, id DESC);
CREATE INDEX drills_queued ON drills (created_at, id) WHERE state = 'queued';
CREATE INDEX drills_running ON drills (started_at, id) WHERE state = 'running';
CREATE TABLE artifact_manifests (
    artifact_id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    tables TEXT NOT NULL
        CONSTRAINT artifact_manifests_tables_check CHECK (json_type(tables) = 'object'),
    CONSTRAINT artifact_manifests_artifact_fkey FOREIGN KEY (workspace_id, artifact_id)
        REFERENCES artifacts (workspace_id, id) ON DELETE CASCADE
) STRICT;
