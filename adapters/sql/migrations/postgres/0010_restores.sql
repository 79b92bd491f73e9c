-- 0010 restores (contract 11): the service puts a cloud artifact back into a target.
-- The target (no secret) is JSON; the target's credentials are sealed and erased (NULL)
-- once the restore finishes. A restore goes with its artifact and its workspace.

CREATE TABLE restores (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    artifact_id uuid NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    target jsonb NOT NULL CONSTRAINT restores_target_check CHECK (jsonb_typeof(target) = 'object'),
    state text NOT NULL
        CONSTRAINT restores_state_check
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
    sealed_credentials bytea,
    error text,
    created_at timestamptz NOT NULL,
    started_at timestamptz,
    finished_at timestamptz
);
CREATE INDEX restores_by_workspace ON restores (workspace_id, created_at DESC, id DESC);
CREATE INDEX restores_queued ON restores (created_at, id) WHERE state = 'queued';
CREATE INDEX restores_by_artifact ON restores (artifact_id);
