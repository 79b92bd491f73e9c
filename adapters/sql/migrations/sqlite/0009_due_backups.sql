-- 0009 the scheduler (contract 11) finds due backups through an index on next_run_at, so
-- its cost grows with the number due, not with the number of backups. Only scheduled
-- backups (active, unpaused, with a schedule) have a next_run_at; the others stay out.

CREATE INDEX backups_due ON backups (next_run_at) WHERE next_run_at IS NOT NULL;
