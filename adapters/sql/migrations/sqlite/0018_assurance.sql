-- 0018 assurance (contract 16): a backup's freshness, the health status the evaluator
-- announced last (its compare-and-set keeps one announcement per spell), webhooks and
-- their outbox of deliveries, and when the admins were last mailed about a backup.
ALTER TABLE backups ADD COLUMN freshness_max_age_seconds INTEGER
    CONSTRAINT backups_freshness_check CHECK (freshness_max_age_seconds > 0);
-- The stored bodies gain the new field (null: no backup had one).
UPDATE backups SET body = substr(body, 1, length(body) - 1) || ',"freshness":null}'
WHERE body IS NOT NULL;

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
