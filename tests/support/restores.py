"""Cloud backups with confirmed artifacts, made through the facade's own use cases (the
backup configured, a run triggered, the artifact announced, uploaded and confirmed): what
the restore tests start from; and a recording restore target for the use-case layer."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.artifacts import Artifact
from strongroom.domain.backups import Backup, BackupChanges, BackupKind, Source
from strongroom.domain.principals import Caller
from strongroom.domain.restores import RestoreTarget
from strongroom.ports.driven.restore_targets import RestoreFailedError
from strongroom.ports.driven.storage import ObjectReader
from strongroom.ports.driving import Strongroom
from support.people import put_presigned, retention

SOURCE_CREDENTIALS = {
    "s3": {"access_key_id": "source-key", "secret_access_key": "source-secret"},
    "postgres": {"username": "dumper", "password": "source-password"},
}


async def cloud_backup(
    facade: Strongroom, admin: Caller, source: Source, name: str = "Cloud"
) -> Backup:
    """An active cloud backup of ``source`` in the admin's workspace."""
    backup = await facade.backups.create(admin, admin.scoped_workspace(), name, BackupKind.CLOUD)
    changes = BackupChanges(
        source=source,
        credentials=SOURCE_CREDENTIALS[source.type],
        retention=retention("P30D", "PT0S"),
    )
    return await facade.backups.update(admin, backup.id, changes)


async def confirmed_artifact(
    facade: Strongroom,
    admin: Caller,
    backup_id: UUID,
    content: bytes,
    *,
    put: Any = None,
    name: str = "artifact",
) -> Artifact:
    """An artifact of a triggered run of the backup, uploaded and confirmed (``put``
    sends the bytes to the presigned request; default: the local-disk storage of the
    facade)."""
    run = await facade.runs.trigger(admin, backup_id)
    plan = await facade.artifacts.upload_url(
        admin, run.id, name, len(content), hashlib.sha256(content).hexdigest()
    )
    if plan.request is not None:
        if put is None:
            storage = facade.storage
            assert isinstance(storage, LocalDiskStorage)
            put_presigned(storage, plan.request, content)
        else:
            put(plan.request, content)
    else:
        assert put is not None, "a multipart artifact needs a put for its parts"
        for part in plan.parts:
            start = (part.number - 1) * (plan.part_size or 0)
            put(part.request, content[start : start + part.size])
    await facade.artifacts.confirm(admin, run.id)
    return plan.artifact


class RecordingTargets:
    """A restore target that keeps what it was given (the bytes read to the end), or
    refuses with ``failure``: the use-case layer's stand-in for buckets and databases."""

    def __init__(self) -> None:
        self.restored: list[tuple[RestoreTarget, bytes, dict[str, str]]] = []
        self.failure: str | None = None
        # When set, a restore waits for it (a long restore the test interrupts).
        self.hold: asyncio.Event | None = None
        self.started = asyncio.Event()

    async def restore(
        self, artifact: ObjectReader, target: RestoreTarget, credentials: Mapping[str, str]
    ) -> None:
        data = artifact.read()
        self.started.set()
        if self.hold is not None:
            await self.hold.wait()
        if self.failure is not None:
            raise RestoreFailedError(self.failure)
        self.restored.append((target, data, dict(credentials)))
