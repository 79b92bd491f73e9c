-- 0008 the run lifecycle (contract 11): which attempt a run is on, the lease of its
-- holder, whether its cancel was requested, and the progress its holder last reported.
-- Runs from before are on their first attempt, hold no lease and report no progress.

ALTER TABLE runs ADD COLUMN attempt integer NOT NULL DEFAULT 1
    CONSTRAINT runs_attempt_check CHECK (attempt >= 1);
ALTER TABLE runs ADD COLUMN lease_expires_at timestamptz;
ALTER TABLE runs ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
ALTER TABLE runs ADD COLUMN progress jsonb
    CONSTRAINT runs_progress_check CHECK (jsonb_typeof(progress) = 'object');
