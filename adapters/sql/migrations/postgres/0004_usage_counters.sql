-- 0004 usage counters: a workspace counts its backups, so that a quota check reads one
-- row instead of counting (create stays as fast at 100 000 backups as at none).
--
-- Triggers keep the count exact on every path that adds or removes a backup, in the same
-- transaction; the row update they make also serialises concurrent creates of a workspace.

ALTER TABLE workspaces ADD COLUMN backup_count bigint NOT NULL DEFAULT 0
    CONSTRAINT workspaces_backup_count_check CHECK (backup_count >= 0);

UPDATE workspaces AS w
SET backup_count = (SELECT count(*) FROM backups AS b WHERE b.workspace_id = w.id);

CREATE FUNCTION count_backups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE workspaces SET backup_count = backup_count + 1 WHERE id = NEW.workspace_id;
    ELSE
        UPDATE workspaces SET backup_count = backup_count - 1 WHERE id = OLD.workspace_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER backups_counted AFTER INSERT OR DELETE ON backups
    FOR EACH ROW EXECUTE FUNCTION count_backups();
