"""The drill runner (contract 16): takes queued drills one at a time, streams each one's
artifact from storage into the service's scratch target, outside any transaction, hashing
it on the way; has the use case judge what was restored and record how it ended."""

from __future__ import annotations

import functools
import logging
import time

import attrs

from strongroom.adapters.runtime.restores import HashingReader
from strongroom.adapters.runtime.threads import run_to_the_end
from strongroom.domain.drills import Drill
from strongroom.domain.errors import StrongroomError
from strongroom.ports.driven.drills import DrillFailedError
from strongroom.ports.driven.storage import ObjectReader
from strongroom.ports.driving.drills import Drills, DrillSource, Outcome, judge

logger = logging.getLogger(__name__)

BATCH = 10
CHUNK = 1024 * 1024
UNEXPECTED = "the drill failed on an unexpected error of the service (logged)"


class DrillRunner:
    """Runs queued drills, one after another."""

    def __init__(self, drills: Drills) -> None:
        self._drills = drills

    async def run_queued(self, limit: int = BATCH) -> list[Drill]:
        """Run queued drills until none is left (at most ``limit``); the finished ones.
        Safe with any number of runners. Drills left running by a runner that stopped are
        failed as interrupted first."""
        await self._drills.expire_stale()
        finished: list[Drill] = []
        for _ in range(limit):
            done = await self.run_next()
            if done is None:
                break
            finished.append(done)
        return finished

    async def run_next(self) -> Drill | None:
        """Take the oldest queued drill, run it and record how it ended; None when none
        is queued."""
        taken = await self._drills.take_next()
        if taken is None:
            return None
        drill, source = taken
        if source is None:
            return drill
        started = time.monotonic()
        outcome = await self._execute(drill, source)
        seconds = time.monotonic() - started
        return await self._drills.finish(drill, attrs.evolve(outcome, seconds=seconds))

    async def _execute(self, drill: Drill, source: DrillSource) -> Outcome:
        artifact = source.artifact
        try:
            opened = await run_to_the_end(
                functools.partial(source.storage.open_object, artifact.object_key),
                _close_if_opened,
            )
            if opened is None:
                return Outcome(error="the artifact's object is missing from storage")
            reader = HashingReader(opened)
            try:
                restored = await source.targets.restore(reader, source.source_type)
                await run_to_the_end(reader.drain)
            finally:
                await run_to_the_end(opened.close)
            manifest = await self._drills.manifest(drill, artifact)
        except DrillFailedError as failed:
            return Outcome(error=str(failed))
        except StrongroomError as failed:
            return Outcome(error=failed.message)
        except Exception:
            logger.exception("drill %s of workspace %s failed", drill.id, drill.workspace_id)
            return Outcome(error=UNEXPECTED)
        problems, checks = judge(artifact, (reader.size, reader.sha256), restored, manifest)
        return Outcome(problems, checks, restored.bytes)


def _close_if_opened(opened: ObjectReader | None) -> None:
    """Close the object a cancelled drill opened after it stopped waiting for it."""
    if opened is not None:
        opened.close()
