-- 0010 restores (contract 11): the service puts a cloud artifact back into a target.
-- The target (no secret) is JSON; the target's credentials are sealed and erased (NULL)
-- once the restore finishes. A restore goes with its artifact and its workspace.

CREATE TABLE restores (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    artifact_id TEXT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    target TEXT NOT NULL CONSTRAINT restores_target_check CHECK (json_type(target) = 'object'),
    state TEXT NOT NULL
        CONSTRAINT restores_state_check
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
    sealed_credentials BLOB,
    error TEXT,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT
) STRICT;
CREATE INDEX restores_by_workspace ON restores (workspace_id, created_at DESC, id DESC);
CREATE INDEX restores_queued ON restores (created_at, id) WHERE state = 'queued';
CREATE INDEX restores_by_artifact ON restores (artifact_id);
