-- 0015 a backup's body written by the repositories: its API JSON comes from the one wire
-- presenter (Python) when the row is written, and the database no longer renders it. The
-- triggers that filled backups.body and the view they read go; the column and the bodies
-- it holds (byte for byte the presenter's) stay.
DROP TRIGGER backups_body_insert;
DROP TRIGGER backups_body_update;
DROP VIEW backup_bodies;
