-- 0002 access: workers get a name and a credential (the table had no rows to keep:
-- workers had no API before), API keys, invitations, and the member list's index.

DROP TABLE workers;

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

CREATE INDEX memberships_by_workspace
    ON memberships (workspace_id, joined_at DESC, user_id DESC);

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
