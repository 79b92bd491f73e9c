-- 0020 a write answered 502 never commits (contract 13): the client's deadline is checked
-- by COMMIT itself. Every commit the service sends (postgres_transaction._commit_guarded)
-- first writes its connection's row here with the latest instant at which it may commit;
-- the deferred constraint trigger runs inside that COMMIT, and fails it (the transaction
-- rolls back) once the server's clock has passed that instant. A table of its own, not a
-- table every write touches: every transaction gets the check, whatever it wrote.
-- Unlogged and one row per server process (updated in place): nothing here outlives the
-- transaction that wrote it, and a crash may empty the table.
CREATE UNLOGGED TABLE commit_deadlines (
    backend_pid integer PRIMARY KEY,
    commit_by timestamptz NOT NULL
) WITH (fillfactor = 50);

CREATE FUNCTION refuse_late_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF clock_timestamp() >= NEW.commit_by THEN
        RAISE EXCEPTION 'commit deadline passed: the client has given up'
            USING ERRCODE = 'query_canceled';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER commit_deadlines_checked
    AFTER INSERT OR UPDATE ON commit_deadlines
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION refuse_late_commit();
