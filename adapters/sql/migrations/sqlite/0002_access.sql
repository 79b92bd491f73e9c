-- 0002 access: workers get a name and a credential (the table had no rows to keep:
-- workers had no API before), API keys, invitations, and the member list's index.

DROP TABLE workers;

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

CREATE INDEX memberships_by_workspace
    ON memberships (workspace_id, joined_at DESC, user_id DESC);

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
