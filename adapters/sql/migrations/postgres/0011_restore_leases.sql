-- 0011 restore leases (contract 11): which attempt a restore is on and until when its
-- runner holds it. A runner that dies stops renewing; its restore is queued again (up to
-- three attempts), then failed as interrupted. Restores from before are on their first
-- attempt and hold no lease.

ALTER TABLE restores ADD COLUMN attempt integer NOT NULL DEFAULT 1
    CONSTRAINT restores_attempt_check CHECK (attempt >= 1);
ALTER TABLE restores ADD COLUMN lease_expires_at timestamptz;
CREATE INDEX restores_running ON restores (lease_expires_at, id) WHERE state = 'running';
