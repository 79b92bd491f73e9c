-- The canonical SQLite schema of Strongroom: what applying every migration of
-- migrations/sqlite/ in order gives (tests/contract/test_sql_migrations.py checks
-- it). A schema change is a new numbered migration plus the same change here.
--
-- Conventions: STRICT tables; ids are canonical lowercase UUID text; instants are UTC text
-- of fixed width, 'YYYY-MM-DDTHH:MM:SS.ffffffZ', so that text order is time order; nested
-- values of the domain are JSON text; sealed secrets are BLOBs; booleans 0 or 1.
-- Case-insensitive uniqueness uses a *_key column holding the domain's casefolded form.
-- Lists are keyset-paginated newest first, each by an index ending in (created_at, id).

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    name TEXT NOT NULL,
    idp_subject TEXT NOT NULL,
    created_at TEXT NOT NULL,
    CONSTRAINT users_idp_subject_unique UNIQUE (idp_subject)
) STRICT;

CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    idp_org_id TEXT NOT NULL,
    customer_id TEXT NOT NULL,
    storage_namespace TEXT NOT NULL,
    created_by TEXT NOT NULL REFERENCES users (id),
    billing_state TEXT NOT NULL
        CONSTRAINT workspaces_billing_state_check
        CHECK (billing_state IN ('trial', 'active', 'warned', 'stopped', 'blocked')),
    quota_overrides TEXT NOT NULL
        CONSTRAINT workspaces_quota_overrides_check CHECK (json_type(quota_overrides) = 'object'),
    backup_count INTEGER NOT NULL DEFAULT 0
        CONSTRAINT workspaces_backup_count_check CHECK (backup_count >= 0),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX workspaces_by_creator ON workspaces (created_by);

CREATE TABLE memberships (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id),
    role TEXT NOT NULL,
    joined_at TEXT NOT NULL,
    -- The workspace's creation time (immutable), copied so that a person's list of
    -- workspaces is one keyset scan of memberships_by_user.
    workspace_created_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
) STRICT;
CREATE INDEX memberships_by_user
    ON memberships (user_id, workspace_created_at DESC, workspace_id DESC);
CREATE INDEX memberships_by_workspace
    ON memberships (workspace_id, joined_at DESC, user_id DESC);

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id),
    workspace_id TEXT REFERENCES workspaces (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    revoked_at TEXT,
    origin TEXT
) STRICT;
CREATE INDEX sessions_by_token_hash ON sessions (token_hash);
CREATE INDEX sessions_by_workspace ON sessions (workspace_id) WHERE workspace_id IS NOT NULL;
CREATE INDEX sessions_by_origin ON sessions (origin) WHERE origin IS NOT NULL;

CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_seen_at TEXT,
    CONSTRAINT workers_token_hash_unique UNIQUE (token_hash)
) STRICT;
CREATE INDEX workers_by_workspace ON workers (workspace_id, created_at DESC, id DESC);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    permissions TEXT NOT NULL
        CONSTRAINT api_keys_permissions_check CHECK (json_type(permissions) = 'array'),
    token_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    last_used_at TEXT,
    CONSTRAINT api_keys_token_hash_unique UNIQUE (token_hash)
) STRICT;
CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id, created_at DESC, id DESC);

CREATE TABLE invitations (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    accepted_at TEXT
) STRICT;
CREATE INDEX invitations_by_workspace ON invitations (workspace_id, created_at DESC, id DESC);

CREATE TABLE roles (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    name TEXT NOT NULL,
    permissions TEXT NOT NULL
        CONSTRAINT roles_permissions_check CHECK (json_type(permissions) = 'array'),
    PRIMARY KEY (workspace_id, slug)
) STRICT;

CREATE TABLE backups (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    kind TEXT NOT NULL CONSTRAINT backups_kind_check CHECK (kind IN ('local', 'manual', 'cloud')),
    state TEXT NOT NULL CONSTRAINT backups_state_check CHECK (state IN ('draft', 'active')),
    paused INTEGER NOT NULL CONSTRAINT backups_paused_check CHECK (paused IN (0, 1)),
    source TEXT CONSTRAINT backups_source_check CHECK (json_type(source) = 'object'),
    sealed_credentials BLOB,
    schedule_cron TEXT,
    schedule_timezone TEXT,
    worker_id TEXT,
    retention_expire_after_seconds INTEGER,
    retention_lock_for_seconds INTEGER,
    destination TEXT NOT NULL
        CONSTRAINT backups_destination_check CHECK (json_type(destination) = 'object'),
    sealed_destination_credentials BLOB,
    next_run_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    -- The API's JSON of the backup, from the wire presenter, written with it (0014, 0015).
    body TEXT,
    -- The age recipients of a snapshot backup, a JSON array; NULL for an archive backup (0016).
    encryption TEXT
        CONSTRAINT backups_encryption_check CHECK (json_type(encryption) = 'array'),
    -- The policy's keep rules: NULL when not set (0017).
    retention_keep TEXT
        CONSTRAINT backups_retention_keep_check CHECK (json_type(retention_keep) = 'object'),

    -- The recovery point objective (0018).
    freshness_max_age_seconds INTEGER
        CONSTRAINT backups_freshness_check CHECK (freshness_max_age_seconds > 0),
    -- Scheduled restore drills: the API's drill object, and its next slot while drills are
    -- scheduled (0021).
    drill TEXT CONSTRAINT backups_drill_check CHECK (json_type(drill) = 'object'),
    next_drill_at TEXT,
    CONSTRAINT backups_name_unique UNIQUE (workspace_id, name_key),
    CONSTRAINT backups_schedule_check
        CHECK ((schedule_cron IS NULL) = (schedule_timezone IS NULL)),
    CONSTRAINT backups_retention_check
        CHECK ((retention_expire_after_seconds IS NULL) = (retention_lock_for_seconds IS NULL))
) STRICT;
CREATE INDEX backups_by_workspace ON backups (workspace_id, created_at DESC, id DESC);
-- The scheduler's look-up of due backups (0009).
CREATE INDEX backups_due ON backups (next_run_at) WHERE next_run_at IS NOT NULL;
-- The drill scheduler's look-up of due drill slots (0021).
CREATE INDEX backups_drill_due ON backups (next_drill_at) WHERE next_drill_at IS NOT NULL;
-- The retention job's backups decided run by run (0023).
CREATE INDEX backups_ruled ON backups (workspace_id, id)
    WHERE retention_keep IS NOT NULL OR encryption IS NOT NULL;

CREATE TABLE audit_events (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    occurred_at TEXT NOT NULL,
    actor_type TEXT NOT NULL
        CONSTRAINT audit_events_actor_type_check
        CHECK (actor_type IN ('user', 'api_key', 'worker', 'system')),
    actor_id TEXT,
    action TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id TEXT,
    request_id TEXT,
    outcome TEXT NOT NULL
        CONSTRAINT audit_events_outcome_check CHECK (outcome IN ('success', 'denied')),
    changes TEXT CONSTRAINT audit_events_changes_check CHECK (json_type(changes) = 'object')
) STRICT;
CREATE INDEX audit_events_by_workspace
    ON audit_events (workspace_id, occurred_at DESC, id DESC);
CREATE INDEX audit_events_by_action
    ON audit_events (workspace_id, action, occurred_at DESC, id DESC);
CREATE INDEX audit_events_by_actor
    ON audit_events (workspace_id, actor_id, occurred_at DESC, id DESC);

CREATE TABLE idempotency_keys (
    scope TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body TEXT,
    PRIMARY KEY (scope, idempotency_key)
) STRICT;

CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL,
    name TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    CONSTRAINT accounts_email_unique UNIQUE (email_key)
) STRICT;

CREATE TABLE failed_logins (
    id INTEGER PRIMARY KEY,
    email_key TEXT NOT NULL,
    failed_at TEXT NOT NULL,
    client_address TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX failed_logins_by_email_address
    ON failed_logins (email_key, client_address, failed_at);
CREATE INDEX failed_logins_by_address ON failed_logins (client_address, failed_at);

CREATE TABLE device_grants (
    id TEXT PRIMARY KEY,
    device_code_hash TEXT NOT NULL,
    user_code TEXT NOT NULL,
    client_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    poll_interval INTEGER NOT NULL,
    state TEXT NOT NULL
        CONSTRAINT device_grants_state_check
        CHECK (state IN ('pending', 'approved', 'denied', 'issued')),
    account_id TEXT,
    failed_approvals INTEGER NOT NULL,
    last_polled_at TEXT,
    access_token_hash TEXT,
    access_expires_at TEXT
) STRICT;
CREATE INDEX device_grants_by_device_code
    ON device_grants (device_code_hash, created_at DESC, id DESC);
CREATE INDEX device_grants_by_user_code
    ON device_grants (user_code, created_at DESC, id DESC);
CREATE INDEX device_grants_by_access_token
    ON device_grants (access_token_hash, created_at DESC, id DESC)
    WHERE access_token_hash IS NOT NULL;

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
    attempt INTEGER NOT NULL DEFAULT 1 CONSTRAINT runs_attempt_check CHECK (attempt >= 1),
    lease_expires_at TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0
        CONSTRAINT runs_cancel_requested_check CHECK (cancel_requested IN (0, 1)),
    progress TEXT CONSTRAINT runs_progress_check CHECK (json_type(progress) = 'object'),
    CONSTRAINT runs_backup_fkey FOREIGN KEY (workspace_id, backup_id)
        REFERENCES backups (workspace_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX runs_by_backup ON runs (workspace_id, backup_id, created_at DESC, id DESC);
CREATE INDEX runs_queued ON runs (created_at, id) WHERE state = 'queued';
CREATE INDEX runs_open ON runs (workspace_id, backup_id) WHERE state IN ('queued', 'running');
CREATE INDEX runs_running ON runs (lease_expires_at) WHERE state = 'running';

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
    verification TEXT
        CONSTRAINT artifacts_verification_check
        CHECK (verification IN ('pending', 'ok', 'mismatch', 'missing')),
    verified_at TEXT,
    -- Under a legal hold (0017).
    held INTEGER NOT NULL DEFAULT 0 CONSTRAINT artifacts_held_check CHECK (held IN (0, 1)),
    CONSTRAINT artifacts_name_unique UNIQUE (run_id, name),
    CONSTRAINT artifacts_run_fkey FOREIGN KEY (workspace_id, backup_id, run_id)
        REFERENCES runs (workspace_id, backup_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX artifacts_by_workspace ON artifacts (workspace_id, created_at DESC, id DESC);
CREATE INDEX artifacts_by_backup ON artifacts (workspace_id, backup_id, state);
CREATE INDEX artifacts_by_verification ON artifacts (state, verification, verified_at);
CREATE INDEX artifacts_by_expiry ON artifacts (expires_at) WHERE state = 'available';

-- The artifacts of earlier runs a snapshot run references (contract 14; 0016, 0017).
CREATE TABLE run_references (
    workspace_id TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    artifact_id TEXT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    PRIMARY KEY (run_id, artifact_id)
) STRICT;
CREATE INDEX run_references_by_artifact ON run_references (artifact_id);

-- Usage counters (0004): triggers keep workspaces.backup_count exact.
CREATE TRIGGER backups_counted_insert AFTER INSERT ON backups
BEGIN
    UPDATE workspaces SET backup_count = backup_count + 1 WHERE id = NEW.workspace_id;
END;

CREATE TRIGGER backups_counted_delete AFTER DELETE ON backups
BEGIN
    UPDATE workspaces SET backup_count = backup_count - 1 WHERE id = OLD.workspace_id;
END;

-- Restores (0010; attempts and leases 0011).
-- A restore's artifact is of its own workspace: the key it references.
CREATE UNIQUE INDEX artifacts_workspace_id ON artifacts (workspace_id, id);
CREATE TABLE restores (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    artifact_id TEXT NOT NULL,
    target TEXT NOT NULL CONSTRAINT restores_target_check CHECK (json_type(target) = 'object'),
    state TEXT NOT NULL
        CONSTRAINT restores_state_check
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
    sealed_credentials BLOB,
    error TEXT,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    attempt INTEGER NOT NULL DEFAULT 1 CONSTRAINT restores_attempt_check CHECK (attempt >= 1),
    lease_expires_at TEXT,
    CONSTRAINT restores_artifact_fkey FOREIGN KEY (workspace_id, artifact_id)
        REFERENCES artifacts (workspace_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX restores_by_workspace ON restores (workspace_id, created_at DESC, id DESC);
CREATE INDEX restores_queued ON restores (created_at, id) WHERE state = 'queued';
CREATE INDEX restores_by_artifact ON restores (workspace_id, artifact_id);
CREATE INDEX restores_running ON restores (lease_expires_at, id) WHERE state = 'running';
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

-- Assurance (0018): stored health, webhooks and their outbox.
CREATE TABLE backup_health (
    backup_id TEXT PRIMARY KEY REFERENCES backups (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    status TEXT NOT NULL
        CONSTRAINT backup_health_status_check CHECK (status IN ('ok', 'late', 'failing', 'never')),
    changed_at TEXT NOT NULL,
    mailed_at TEXT
) STRICT;

CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    events TEXT NOT NULL CONSTRAINT webhooks_events_check CHECK (json_type(events) = 'array'),
    sealed_secret BLOB NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE INDEX webhooks_by_workspace ON webhooks (workspace_id, created_at DESC, id DESC);

CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    event TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL,
    state TEXT NOT NULL
        CONSTRAINT webhook_deliveries_state_check
        CHECK (state IN ('pending', 'succeeded', 'failed')),
    attempts TEXT NOT NULL
        CONSTRAINT webhook_deliveries_attempts_check CHECK (json_type(attempts) = 'array'),
    next_attempt_at TEXT
) STRICT;
CREATE INDEX webhook_deliveries_by_webhook
    ON webhook_deliveries (webhook_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
