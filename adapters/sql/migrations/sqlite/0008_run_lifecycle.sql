-- 0008 the run lifecycle (contract 11): which attempt a run is on, the lease of its
-- holder, whether its cancel was requested, and the progress its holder last reported.
-- Runs from before are on their first attempt, hold no lease and report no progress.

ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1
    CONSTRAINT runs_attempt_check CHECK (attempt >= 1);
ALTER TABLE runs ADD COLUMN lease_expires_at TEXT;
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0
    CONSTRAINT runs_cancel_requested_check CHECK (cancel_requested IN (0, 1));
ALTER TABLE runs ADD COLUMN progress TEXT
    CONSTRAINT runs_progress_check CHECK (json_type(progress) = 'object');
