-- 0005 failed sign-ins by client address (contract 13): failed approvals are limited per
-- email and client address, and per client address, so failures from one address never
-- lock a person out at another. Rows from before carry an empty address.

ALTER TABLE failed_logins ADD COLUMN client_address text NOT NULL DEFAULT '';
DROP INDEX failed_logins_by_email;
CREATE INDEX failed_logins_by_email_address
    ON failed_logins (email_key, client_address, failed_at);
CREATE INDEX failed_logins_by_address ON failed_logins (client_address, failed_at);
