-- 0010 restores (contract 11): the service puts a cloud artifact back into a target.
-- The target (no secret) is JSON; the target's credentials are sealed and erased (NULL)
-- once the restore finishes. A restore goes with its artifact and its workspace.

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
    CONSTRAINT restores_artifact_fkey FOREIGN KEY (workspace_id, artifact_id)
        REFERENCES artifacts (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX restores_by_workspace ON restores (workspace_id, created_at DESC, id DESC);
CREATE INDEX restores_queued ON restores (created_at, id) WHERE state = 'queued';
CREATE INDEX restores_by_artifact ON restores (workspace_id, artifact_id);
