-- The canonical PostgreSQL schema of Strongroom: what applying every migration of
-- migrations/postgres/ in order gives (tests/contract/test_sql_migrations.py checks
-- it). A schema change is a new numbered migration plus the same change here.
--
-- Conventions: ids are uuid, instants timestamptz (UTC, microseconds), nested values of the
-- domain jsonb (json where key order is part of what is shown), sealed secrets bytea.
-- Case-insensitive uniqueness uses a *_key column holding the domain's casefolded form, so
-- that every adapter folds exactly as the domain does (lower() differs from casefold()).
-- Lists are keyset-paginated newest first, each by an index ending in (created_at, id).

CREATE TABLE users (
    id uuid PRIMARY KEY,
    email text NOT NULL,
    name text NOT NULL,
    idp_subject text NOT NULL,
    created_at timestamptz NOT NULL,
    CONSTRAINT users_idp_subject_unique UNIQUE (idp_subject)
);

CREATE TABLE workspaces (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    idp_org_id text NOT NULL,
    customer_id text NOT NULL,
    storage_namespace text NOT NULL,
    created_by uuid NOT NULL REFERENCES users (id),
    billing_state text NOT NULL
        CONSTRAINT workspaces_billing_state_check
        CHECK (billing_state IN ('trial', 'active', 'warned', 'stopped', 'blocked')),
    quota_overrides jsonb NOT NULL
        CONSTRAINT workspaces_quota_overrides_check CHECK (jsonb_typeof(quota_overrides) = 'object'),
    backup_count bigint NOT NULL DEFAULT 0
        CONSTRAINT workspaces_backup_count_check CHECK (backup_count >= 0),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX workspaces_by_creator ON workspaces (created_by);

CREATE TABLE memberships (
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users (id),
    role text NOT NULL,
    joined_at timestamptz NOT NULL,
    -- The workspace's creation time (immutable), copied so that a person's list of
    -- workspaces is one keyset scan of memberships_by_user.
    workspace_created_at timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX memberships_by_user
    ON memberships (user_id, workspace_created_at DESC, workspace_id DESC);
CREATE INDEX memberships_by_workspace
    ON memberships (workspace_id, joined_at DESC, user_id DESC);

CREATE TABLE sessions (
    id uuid PRIMARY KEY,
    token_hash text NOT NULL,
    user_id uuid NOT NULL REFERENCES users (id),
    workspace_id uuid REFERENCES workspaces (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz,
    origin text
);
CREATE INDEX sessions_by_token_hash ON sessions (token_hash);
CREATE INDEX sessions_by_workspace ON sessions (workspace_id) WHERE workspace_id IS NOT NULL;
CREATE INDEX sessions_by_origin ON sessions (origin) WHERE origin IS NOT NULL;

CREATE TABLE workers (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name text NOT NULL,
    token_hash text NOT NULL,
    created_at timestamptz NOT NULL,
    last_seen_at timestamptz,
    CONSTRAINT workers_token_hash_unique UNIQUE (token_hash)
);
CREATE INDEX workers_by_workspace ON workers (workspace_id, created_at DESC, id DESC);

CREATE TABLE api_keys (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name text NOT NULL,
    permissions text[] NOT NULL,
    token_hash text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz,
    last_used_at timestamptz,
    CONSTRAINT api_keys_token_hash_unique UNIQUE (token_hash)
);
CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id, created_at DESC, id DESC);

CREATE TABLE invitations (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email text NOT NULL,
    email_key text NOT NULL,
    role text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    accepted_at timestamptz
);
CREATE INDEX invitations_by_workspace ON invitations (workspace_id, created_at DESC, id DESC);

CREATE TABLE roles (
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    slug text NOT NULL,
    name text NOT NULL,
    permissions text[] NOT NULL,
    PRIMARY KEY (workspace_id, slug)
);

CREATE TABLE backups (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name text NOT NULL,
    name_key text NOT NULL,
    kind text NOT NULL CONSTRAINT backups_kind_check CHECK (kind IN ('local', 'manual', 'cloud')),
    state text NOT NULL CONSTRAINT backups_state_check CHECK (state IN ('draft', 'active')),
    paused boolean NOT NULL,
    source jsonb,
    sealed_credentials bytea,
    schedule_cron text,
    schedule_timezone text,
    worker_id uuid,
    retention_expire_after_seconds bigint,
    retention_lock_for_seconds bigint,
    destination jsonb NOT NULL,
    sealed_destination_credentials bytea,
    next_run_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    -- The API's JSON of the row, from the wire presenter, written with it (0013, 0015).
    body text NOT NULL,
    -- The age recipients of a snapshot backup, a JSON array; NULL for an archive backup (0016).
    encryption jsonb,
    -- The policy's keep rules: NULL when not set (0017).
    retention_keep jsonb
        CONSTRAINT backups_retention_keep_check CHECK (jsonb_typeof(retention_keep) = 'object'),

    -- The recovery point objective (0018).
    freshness_max_age_seconds bigint
        CONSTRAINT backups_freshness_check CHECK (freshness_max_age_seconds > 0),
    -- Scheduled restore drills: the API's drill object, and its next slot while drills are
    -- scheduled (0021).
    drill jsonb CONSTRAINT backups_drill_check CHECK (jsonb_typeof(drill) = 'object'),
    next_drill_at timestamptz,
    CONSTRAINT backups_name_unique UNIQUE (workspace_id, name_key),
    CONSTRAINT backups_workspace_id_unique UNIQUE (workspace_id, id),
    CONSTRAINT backups_schedule_check
        CHECK ((schedule_cron IS NULL) = (schedule_timezone IS NULL)),
    CONSTRAINT backups_retention_check
        CHECK ((retention_expire_after_seconds IS NULL) = (retention_lock_for_seconds IS NULL))
);
CREATE INDEX backups_by_workspace ON backups (workspace_id, created_at DESC, id DESC);
-- The scheduler's look-up of due backups (0009).
CREATE INDEX backups_due ON backups (next_run_at) WHERE next_run_at IS NOT NULL;
-- The drill scheduler's look-up of due drill slots (0021).
CREATE INDEX backups_drill_due ON backups (next_drill_at) WHERE next_drill_at IS NOT NULL;
-- The retention job's backups decided run by run (0023).
CREATE INDEX backups_ruled ON backups (workspace_id, id)
    WHERE retention_keep IS NOT NULL OR encryption IS NOT NULL;

CREATE TABLE audit_events (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    occurred_at timestamptz NOT NULL,
    actor_type text NOT NULL
        CONSTRAINT audit_events_actor_type_check
        CHECK (actor_type IN ('user', 'api_key', 'worker', 'system')),
    actor_id uuid,
    action text NOT NULL,
    target_type text NOT NULL,
    target_id text,
    request_id text,
    outcome text NOT NULL
        CONSTRAINT audit_events_outcome_check CHECK (outcome IN ('success', 'denied')),
    -- json, not jsonb: the fields keep the order in which they were recorded.
    changes json
);
CREATE INDEX audit_events_by_workspace
    ON audit_events (workspace_id, occurred_at DESC, id DESC);
CREATE INDEX audit_events_by_action
    ON audit_events (workspace_id, action, occurred_at DESC, id DESC);
CREATE INDEX audit_events_by_actor
    ON audit_events (workspace_id, actor_id, occurred_at DESC, id DESC);

CREATE TABLE idempotency_keys (
    scope text NOT NULL,
    idempotency_key text NOT NULL,
    fingerprint text NOT NULL,
    created_at timestamptz NOT NULL,
    body text,
    PRIMARY KEY (scope, idempotency_key)
);

CREATE TABLE accounts (
    id uuid PRIMARY KEY,
    email text NOT NULL,
    email_key text NOT NULL,
    name text NOT NULL,
    password_hash text NOT NULL,
    created_at timestamptz NOT NULL,
    CONSTRAINT accounts_email_unique UNIQUE (email_key)
);

CREATE TABLE failed_logins (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email_key text NOT NULL,
    failed_at timestamptz NOT NULL,
    client_address text NOT NULL DEFAULT ''
);
CREATE INDEX failed_logins_by_email_address
    ON failed_logins (email_key, client_address, failed_at);
CREATE INDEX failed_logins_by_address ON failed_logins (client_address, failed_at);

CREATE TABLE device_grants (
    id uuid PRIMARY KEY,
    device_code_hash text NOT NULL,
    user_code text NOT NULL,
    client_id text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    poll_interval integer NOT NULL,
    state text NOT NULL
        CONSTRAINT device_grants_state_check
        CHECK (state IN ('pending', 'approved', 'denied', 'issued')),
    account_id uuid,
    failed_approvals integer NOT NULL,
    last_polled_at timestamptz,
    access_token_hash text,
    access_expires_at timestamptz
);
CREATE INDEX device_grants_by_device_code
    ON device_grants (device_code_hash, created_at DESC, id DESC);
CREATE INDEX device_grants_by_user_code
    ON device_grants (user_code, created_at DESC, id DESC);
CREATE INDEX device_grants_by_access_token
    ON device_grants (access_token_hash, created_at DESC, id DESC)
    WHERE access_token_hash IS NOT NULL;

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
    attempt integer NOT NULL DEFAULT 1 CONSTRAINT runs_attempt_check CHECK (attempt >= 1),
    lease_expires_at timestamptz,
    cancel_requested boolean NOT NULL DEFAULT false,
    progress jsonb CONSTRAINT runs_progress_check CHECK (jsonb_typeof(progress) = 'object'),
    CONSTRAINT runs_lineage_unique UNIQUE (workspace_id, backup_id, id),
    CONSTRAINT runs_backup_fkey FOREIGN KEY (workspace_id, backup_id)
        REFERENCES backups (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX runs_by_backup ON runs (workspace_id, backup_id, created_at DESC, id DESC);
CREATE INDEX runs_queued ON runs (created_at, id) WHERE state = 'queued';
CREATE INDEX runs_open ON runs (workspace_id, backup_id) WHERE state IN ('queued', 'running');
CREATE INDEX runs_running ON runs (lease_expires_at) WHERE state = 'running';

-- Artifacts: a run's files. The foreign key names workspace, backup and run together, so
-- an artifact always belongs to a run of its own backup in its own workspace. Deleted
-- artifacts keep their record (state 'deleted').

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
    verification text
        CONSTRAINT artifacts_verification_check
        CHECK (verification IN ('pending', 'ok', 'mismatch', 'missing')),
    verified_at timestamptz,
    -- Under a legal hold (0017).
    held boolean NOT NULL DEFAULT false,
    CONSTRAINT artifacts_name_unique UNIQUE (run_id, name),
    CONSTRAINT artifacts_run_fkey FOREIGN KEY (workspace_id, backup_id, run_id)
        REFERENCES runs (workspace_id, backup_id, id) ON DELETE CASCADE
);
CREATE INDEX artifacts_by_workspace ON artifacts (workspace_id, created_at DESC, id DESC);
CREATE INDEX artifacts_by_backup ON artifacts (workspace_id, backup_id, state);
CREATE INDEX artifacts_by_verification ON artifacts (state, verification, verified_at);
CREATE INDEX artifacts_by_expiry ON artifacts (expires_at) WHERE state = 'available';

-- The artifacts of earlier runs a snapshot run references (contract 14; 0016, 0017).
CREATE TABLE run_references (
    workspace_id uuid NOT NULL,
    run_id uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    artifact_id uuid NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    PRIMARY KEY (run_id, artifact_id)
);
CREATE INDEX run_references_by_artifact ON run_references (artifact_id);

-- Usage counters (0004): triggers keep workspaces.backup_count exact.
-- Statement-level, over the transition tables: one update per workspace and statement, so
-- a bulk insert of n backups costs one row version of its workspace, not n.
CREATE FUNCTION count_added_backups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE workspaces AS w SET backup_count = w.backup_count + added.n
    FROM (SELECT workspace_id, count(*) AS n FROM added_backups GROUP BY workspace_id) AS added
    WHERE w.id = added.workspace_id;
    RETURN NULL;
END
$$;

CREATE FUNCTION count_removed_backups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE workspaces AS w SET backup_count = w.backup_count - removed.n
    FROM (SELECT workspace_id, count(*) AS n FROM removed_backups GROUP BY workspace_id) AS removed
    WHERE w.id = removed.workspace_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER backups_counted_insert AFTER INSERT ON backups
    REFERENCING NEW TABLE AS added_backups
    FOR EACH STATEMENT EXECUTE FUNCTION count_added_backups();

CREATE TRIGGER backups_counted_delete AFTER DELETE ON backups
    REFERENCING OLD TABLE AS removed_backups
    FOR EACH STATEMENT EXECUTE FUNCTION count_removed_backups();

-- Restores (0010; attempts and leases 0011).
-- A restore's artifact is of its own workspace: the key it references.
CREATE UNIQUE INDEX artifacts_workspace_id ON artifacts (workspace_id, id);
CREATE TABLE restores (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    artifact_id uuid NOT NULL,
    target jsonb NOT NULL CONSTRAINT restores_target_check CHECK (jsonb_typeof(target) = 'object'),
    state text NOT NULL
        CONSTRAINT restores_state_check
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
    sealed_credentials bytea,
    error text,
    created_at timestamptz NOT NULL,
    started_at timestamptz,
    finished_at timestamptz,
    attempt integer NOT NULL DEFAULT 1 CONSTRAINT restores_attempt_check CHECK (attempt >= 1),
    lease_expires_at timestamptz,
    CONSTRAINT restores_artifact_fkey FOREIGN KEY (workspace_id, artifact_id)
        REFERENCES artifacts (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX restores_by_workspace ON restores (workspace_id, created_at DESC, id DESC);
CREATE INDEX restores_queued ON restores (created_at, id) WHERE state = 'queued';
CREATE INDEX restores_by_artifact ON restores (workspace_id, artifact_id);
CREATE INDEX restores_running ON restores (lease_expires_at, id) WHERE state = 'running';
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

-- Assurance (0018): stored health, webhooks and their outbox.
CREATE TABLE backup_health (
    backup_id uuid PRIMARY KEY REFERENCES backups (id) ON DELETE CASCADE,
    workspace_id uuid NOT NULL,
    status text NOT NULL
        CONSTRAINT backup_health_status_check CHECK (status IN ('ok', 'late', 'failing', 'never')),
    changed_at timestamptz NOT NULL,
    mailed_at timestamptz
);

CREATE TABLE webhooks (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    url text NOT NULL,
    events jsonb NOT NULL CONSTRAINT webhooks_events_check CHECK (jsonb_typeof(events) = 'array'),
    sealed_secret bytea NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX webhooks_by_workspace ON webhooks (workspace_id, created_at DESC, id DESC);

CREATE TABLE webhook_deliveries (
    id uuid PRIMARY KEY,
    webhook_id uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    workspace_id uuid NOT NULL,
    event text NOT NULL,
    payload text NOT NULL,
    created_at timestamptz NOT NULL,
    state text NOT NULL
        CONSTRAINT webhook_deliveries_state_check
        CHECK (state IN ('pending', 'succeeded', 'failed')),
    attempts jsonb NOT NULL
        CONSTRAINT webhook_deliveries_attempts_check CHECK (jsonb_typeof(attempts) = 'array'),
    next_attempt_at timestamptz
);
CREATE INDEX webhook_deliveries_by_webhook
    ON webhook_deliveries (webhook_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

-- The commit deadline (0020): every commit the service sends writes its connection's row
-- first; the deferred trigger fails the COMMIT once the server's clock has passed it.
CREATE UNLOGGED TABLE commit_deadlines (
    backend_pid integer PRIMARY KEY,
    commit_by timestamptz NOT NULL
) WITH (fillfactor = 50);

CREATE FUNCTION refuse_late_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF clock_timestamp() >= NEW.commit_by THEN
        RAISE EXCEPTION 'commit deadline passed: the client has given up'
            USING ERRCODE = 'query_canceled';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER commit_deadlines_checked
    AFTER INSERT OR UPDATE ON commit_deadlines
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION refuse_late_commit();
