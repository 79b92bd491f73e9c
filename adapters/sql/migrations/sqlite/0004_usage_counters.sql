-- 0004 usage counters: a workspace counts its backups, so that a quota check reads one
-- row instead of counting (create stays as fast at 100 000 backups as at none).
--
-- Triggers keep the count exact on every path that adds or removes a backup, in the same
-- transaction.

ALTER TABLE workspaces ADD COLUMN backup_count INTEGER NOT NULL DEFAULT 0
    CONSTRAINT workspaces_backup_count_check CHECK (backup_count >= 0);

UPDATE workspaces
SET backup_count = (SELECT count(*) FROM backups WHERE backups.workspace_id = workspaces.id);

CREATE TRIGGER backups_counted_insert AFTER INSERT ON backups
BEGIN
    UPDATE workspaces SET backup_count = backup_count + 1 WHERE id = NEW.workspace_id;
END;

CREATE TRIGGER backups_counted_delete AFTER DELETE ON backups
BEGIN
    UPDATE workspaces SET backup_count = backup_count - 1 WHERE id = OLD.workspace_id;
END;
