-- 0007 artifact verification (contracts 11 and 13): what the last re-read of an
-- artifact's bytes found, and when. Artifacts from before were never verified (NULL).

ALTER TABLE artifacts ADD COLUMN verification text
    CONSTRAINT artifacts_verification_check
    CHECK (verification IN ('pending', 'ok', 'mismatch', 'missing'));
ALTER TABLE artifacts ADD COLUMN verified_at timestamptz;
CREATE INDEX artifacts_by_verification ON artifacts (state, verification, verified_at);
