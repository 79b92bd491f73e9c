-- 0018 assurance (contract 16): a backup's freshness, the health status the evaluator
-- announced last (its compare-and-set keeps one announcement per spell, whatever the
-- number of instances), webhooks and their outbox of deliveries, and when the admins were
-- last mailed about a backup (at most once an hour).
ALTER TABLE backups ADD COLUMN freshness_max_age_seconds bigint
    CONSTRAINT backups_freshness_check CHECK (freshness_max_age_seconds > 0);
-- The stored bodies gain the new field (null: no backup had one).
UPDATE backups SET body = left(body, -1) || ',"freshness":null}';

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
