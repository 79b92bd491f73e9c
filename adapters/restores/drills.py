"""The scratch targets of restore drills (the ``DrillTargets`` port): a database created
and dropped on the service's drill server for ``postgres``, a directory of the service's
data dir for ``s3``. The blocking work runs in a worker thread."""

from __future__ import annotations

import asyncio
from pathlib import Path

from strongroom.ports.driven.drills import DrillFailedError, Restored
from strongroom.ports.driven.storage import ObjectReader


class ServiceDrillTargets:
    """Scratch restores on what the service owns; ``database_url`` unset means
    ``postgres`` drills fail saying so."""

    def __init__(self, scratch_dir: Path, database_url: str | None = None) -> None:
        self._scratch_dir = scratch_dir
        self._database_url = database_url

    async def restore(self, artifact: ObjectReader, source_type: str) -> Restored:
        """Restore ``artifact`` into scratch and read back what it holds (see the port)."""
        if source_type == "s3":
            from strongroom.adapters.restores.scratch_s3 import drill_s3  # noqa: PLC0415

            objects = await asyncio.to_thread(drill_s3, artifact, self._scratch_dir)
            return Restored(objects.bytes, objects=objects.found, listed=objects.listed)
        if source_type == "postgres":
            if not self._database_url:
                raise DrillFailedError(
                    "the service has no drill database server (STRONGROOM_DRILL_DATABASE_URL)"
                )
            from strongroom.adapters.restores.scratch_postgres import (  # noqa: PLC0415
                drill_postgres,
            )

            counted = _Counted(artifact)
            tables = await asyncio.to_thread(drill_postgres, counted, self._database_url)
            return Restored(counted.size, tables=tables)
        raise DrillFailedError(f"drills of {source_type} sources are not supported")


class _Counted:
    """An object stream that counts what is read through it."""

    def __init__(self, inner: ObjectReader) -> None:
        self._inner = inner
        self.size = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._inner.read(size)
        self.size += len(data)
        return data

    def close(self) -> None:
        self._inner.close()
