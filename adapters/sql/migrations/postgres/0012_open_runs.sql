-- 0012 open runs (contract 11): the claim, the scheduler's overlap check and lease expiry
-- look only at queued or running runs, a handful at any time, among every run ever made.
-- Without these partial indexes each of them read all of a workspace's (or every
-- workspace's) runs, so a minute schedule got slower with every run it had made.
CREATE INDEX runs_queued ON runs (created_at, id) WHERE state = 'queued';
CREATE INDEX runs_open ON runs (workspace_id, backup_id) WHERE state IN ('queued', 'running');
CREATE INDEX runs_running ON runs (lease_expires_at) WHERE state = 'running';
