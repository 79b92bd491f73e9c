-- 0006 an Idempotency-Key keeps the use case's result in the core's own form, not an HTTP
-- response: the status column goes, and responses stored in the old form (at most 24 hours
-- of keys) are forgotten, so those keys create again.

DELETE FROM idempotency_keys WHERE body IS NOT NULL;
ALTER TABLE idempotency_keys DROP COLUMN status;
