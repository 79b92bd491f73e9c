"""The restore runner (contract 11): takes queued restores one at a time and streams each
artifact from storage into its target, outside any transaction, renewing the restore's
lease every quarter of it; then records how it ended (``Restores.finish``). A runner that
finds on renewal that its restore was taken from it stops streaming and records nothing;
one cancelled (the service stopping) records the restore as interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
from datetime import timedelta

from strongroom.adapters.runtime.threads import run_to_the_end
from strongroom.domain.errors import StrongroomError
from strongroom.domain.restores import INTERRUPTED, RESTORE_LEASE, Restore
from strongroom.ports.driven.restore_targets import RestoreFailedError
from strongroom.ports.driven.signals import Wakeup
from strongroom.ports.driven.storage import ObjectReader
from strongroom.ports.driving.restores import Restores, RestoreSource

logger = logging.getLogger(__name__)

# Restores one call of the runner takes at most.
BATCH = 10
CHUNK = 1024 * 1024
UNEXPECTED = "the restore failed on an unexpected error of the service (logged)"


class HashingReader:
    """An object stream that counts and hashes what is read through it."""

    def __init__(self, inner: ObjectReader) -> None:
        self._inner = inner
        self._digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._inner.read(size)
        self._digest.update(data)
        self.size += len(data)
        return data

    def close(self) -> None:
        """Closing is the runner's (after ``drain``)."""

    def drain(self) -> None:
        """Read what the target left unread (an archive's end padding)."""
        while self.read(CHUNK):
            pass

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()


class RestoreRunner:
    """Runs the queued restores of ``restores``; any number of runners may share a
    database (each restore is taken by exactly one)."""

    def __init__(self, restores: Restores) -> None:
        self._restores = restores

    def wakeup(self) -> Wakeup:
        """A ticket for the next announcement of queued work (``Restores.wakeup``)."""
        return self._restores.wakeup()

    async def run_queued(
        self, limit: int = BATCH, lease: timedelta = RESTORE_LEASE
    ) -> list[Restore]:
        """Requeue (or fail) restores whose runner died (``expire_leases``), then run
        queued restores one after another until none is left (at most ``limit``), each
        held on ``lease``; the finished restores."""
        await self._restores.expire_leases()
        finished: list[Restore] = []
        for _ in range(limit):
            done = await self.run_next(lease)
            if done is None:
                break
            finished.append(done)
        return finished

    async def run_next(self, lease: timedelta = RESTORE_LEASE) -> Restore | None:
        """Take the oldest queued restore, run it (renewing its lease every quarter of
        ``lease``) and record how it ended; None when none is queued. A restore taken
        from this runner meanwhile (its lease ran out) is returned as it now is."""
        running = await self._restores.take_next(lease)
        if running is None:
            return None
        work = asyncio.ensure_future(self._execute(running))
        try:
            while True:
                done, _ = await asyncio.wait({work}, timeout=lease.total_seconds() / 4)
                if done:
                    break
                current = await self._renew(running, lease)
                if current is not None and not current.holds(running):
                    logger.warning("restore %s was taken from this runner", running.id)
                    work.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await work
                    return current
        except asyncio.CancelledError:
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
            # The service is stopping: record why, so the restore is not left running.
            await asyncio.shield(self._restores.finish(running, INTERRUPTED))
            raise
        return await self._restores.finish(running, work.result())

    async def _renew(self, running: Restore, lease: timedelta) -> Restore | None:
        """The restore as it now is after renewing its lease (None when it went away, or
        when the renewal itself failed: it tries again)."""
        try:
            return await self._restores.renew(running, lease)
        except Exception:
            logger.exception("renewing the lease of restore %s failed", running.id)
            return None

    async def _execute(self, restore: Restore) -> str | None:
        """Do the restore; None when it succeeded, else why it failed (no secret)."""
        try:
            source = await self._restores.source(restore)
            if isinstance(source, str):
                return source
            await _stream(source, restore)
        except RestoreFailedError as error:
            return str(error)
        except StrongroomError as error:
            return error.message
        except Exception:
            logger.exception("restore %s of workspace %s failed", restore.id, restore.workspace_id)
            return UNEXPECTED
        return None


async def _stream(source: RestoreSource, restore: Restore) -> None:
    """Stream the artifact into the target, hashing what is read: bytes that are not the
    artifact's recorded size and sha256 (changed in storage) fail the restore."""
    artifact = source.artifact
    opened = await run_to_the_end(
        functools.partial(source.storage.open_object, artifact.object_key), _close_if_opened
    )
    if opened is None:
        raise RestoreFailedError("the artifact's object is missing from storage")
    reader = HashingReader(opened)
    try:
        await source.targets.restore(reader, restore.target, source.credentials)
        await asyncio.to_thread(reader.drain)
    finally:
        await run_to_the_end(opened.close)
    if (reader.size, reader.sha256) != (artifact.size, artifact.sha256):
        raise RestoreFailedError(
            "the artifact's bytes in storage do not match its recorded size and sha256 "
            "(damaged in storage): what was written to the target cannot be trusted"
        )


def _close_if_opened(opened: ObjectReader | None) -> None:
    """Close the object a cancelled restore opened after it stopped waiting for it."""
    if opened is not None:
        opened.close()
