-- 0019 restore drills (contract 16): a backup's newest copy restored into a scratch target
-- the service owns and checked; and what a source recorded of an artifact when it was made
-- (a PostgreSQL dump's tables: rows and checksum), for its drills to check against. Both go
-- with their backup or artifact and their workspace.
CREATE TABLE drills (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    backup_id uuid NOT NULL,
    run_id uuid,
    state text NOT NULL
        CONSTRAINT drills_state_check
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
    created_at timestamptz NOT NULL,
    started_at timestamptz,
    finished_at timestamptz,
    restore_seconds double precision,
    bytes bigint,
    checks jsonb NOT NULL CONSTRAINT drills_checks_check CHECK (jsonb_typeof(checks) = 'object'),
    error text,
    CONSTRAINT drills_backup_fkey FOREIGN KEY (workspace_id, backup_id)
        REFERENCES backups (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX drills_by_backup ON drills (workspace_id, backup_id, created_at DESC, id DESC);
CREATE INDEX drills_queued ON drills (created_at, id) WHERE state = 'queued';
CREATE INDEX drills_running ON drills (started_at, id) WHERE state = 'running';
CREATE TABLE artifact_manifests (
    artifact_id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL,
    tables jsonb NOT NULL
        CONSTRAINT artifact_manifests_tables_check CHECK (jsonb_typeof(tables) = 'object'),
    CONSTRAINT artifact_manifests_artifact_fkey FOREIGN KEY (workspace_id, artifact_id)
        REFERENCES artifacts (workspace_id, id) ON DELETE CASCADE
);
