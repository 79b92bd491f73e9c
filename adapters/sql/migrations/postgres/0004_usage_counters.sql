-- 0004 usage counters: a workspace counts its backups, so that a quota check reads one
-- row instead of counting (create stays as fast at 100 000 backups as at none).
--
-- Triggers keep the count exact on every path that adds or removes a backup, in the same
-- transaction; the row update they make also serialises concurrent creates of a workspace.

ALTER TABLE workspaces ADD COLUMN backup_count bigint NOT NULL DEFAULT 0
    CONSTRAINT workspaces_backup_count_check CHECK (backup_count >= 0);

UPDATE workspaces AS w
SET backup_count = (SELECT count(*) FROM backups AS b WHERE b.workspace_id = w.id);

-- Statement-level, over the transition tables: one update per workspace and statement, so
-- a bulk insert of n backups costs one row version of its workspace, not n.
CREATE FUNCTION count_added_backups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE workspaces AS w SET backup_count = w.backup_count + added.n
    FROM (SELECT workspace_id, count(*) AS n FROM added_backups GROUP BY workspace_id) AS added
    WHERE w.id = added.workspace_id;
    RETURN NULL;
END
$$;

CREATE FUNCTION count_removed_backups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE workspaces AS w SET backup_count = w.backup_count - removed.n
    FROM (SELECT workspace_id, count(*) AS n FROM removed_backups GROUP BY workspace_id) AS removed
    WHERE w.id = removed.workspace_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER backups_counted_insert AFTER INSERT ON backups
    REFERENCING NEW TABLE AS added_backups
    FOR EACH STATEMENT EXECUTE FUNCTION count_added_backups();

CREATE TRIGGER backups_counted_delete AFTER DELETE ON backups
    REFERENCING OLD TABLE AS removed_backups
    FOR EACH STATEMENT EXECUTE FUNCTION count_removed_backups();
