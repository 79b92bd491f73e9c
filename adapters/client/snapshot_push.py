"""``strongroom push BACKUP DIR`` on a snapshot backup: the person's identity opens the
backup's sealed repository key and earlier indexes on the service (so the push
deduplicates from any machine); the local cache of the last push of DIR skips unchanged
files; then one snapshot run (see ``snapshot_run``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

from strongroom.client.agent_snapshots import write_private
from strongroom.client.bridge import ClientApi
from strongroom.client.clients import Client
from strongroom.client.resume import key_of, state_home
from strongroom.client.snapshot_remote import Remote
from strongroom.client.snapshot_run import Keys, SnapshotOutcome, Tree, run_snapshot
from strongroom.client.snapshots import Catalog, Identity, LocalCache, RepositoryKey
from strongroom.client.uploads import UploadCancelledError


class NotSnapshotBackupError(ValueError):
    """The backup stores archives: a snapshot push does not apply."""


def cache_file(server: str, backup_id: UUID, root: str) -> Path:
    """Where the local cache of the pushes of ``root`` into the backup is kept."""
    return state_home() / "snapshots" / f"{key_of(server, str(backup_id), root)}.cache"


def push_snapshot(
    client: Client,
    server: str,
    remote: Remote,
    tree: Tree,
    identity: Identity,
    *,
    stop: threading.Event | None = None,
    on_bytes: Callable[[int], None] | None = None,
    on_file: Callable[[str], None] | None = None,
    on_sent: Callable[[int], None] | None = None,
) -> SnapshotOutcome:
    """One snapshot of ``tree`` into ``remote``'s backup, confirmed."""
    if remote.encryption is None or not remote.encryption.recipients:
        raise NotSnapshotBackupError("the backup stores archives, not snapshots")
    key = remote.repository_key(identity)
    catalog = Catalog()
    if key is None:
        key = RepositoryKey.generate()
    else:
        catalog = remote.catalog(key)
    recipients = remote.encryption.recipients
    keys = Keys(key, tuple(recipients), key.seal(recipients))
    where = cache_file(server, remote.backup_id, tree.root)
    cache = LocalCache.from_bytes(where.read_bytes() if where.is_file() else None)
    run = client.start_run(remote.backup_id)
    run_id = str(run.id)
    try:
        outcome = run_snapshot(
            ClientApi(client),
            client.http,
            run_id,
            tree,
            keys,
            catalog,
            remote.packs(),
            cache,
            stop=stop,
            on_bytes=on_bytes,
            on_file=on_file,
            on_sent=on_sent,
        )
    except (Exception, KeyboardInterrupt) as error:
        stopped = isinstance(error, KeyboardInterrupt | UploadCancelledError)
        reason = "interrupted" if stopped else str(error) or type(error).__name__
        with contextlib.suppress(Exception):  # the first error is the one to show
            client.fail_run(run_id, reason[:2000])
        raise
    write_private(where, outcome.cache.to_bytes())
    return outcome
