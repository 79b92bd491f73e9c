-- 0022 a replayed authorization code revokes what was made from it (contract 13, RFC 6749
-- section 4.1.2): a session keeps the identity provider's grant it was made from (and a
-- switched session its predecessor's), NULL for sessions made before and for providers
-- that name no grant.
ALTER TABLE sessions ADD COLUMN origin text;
CREATE INDEX sessions_by_origin ON sessions (origin) WHERE origin IS NOT NULL;
