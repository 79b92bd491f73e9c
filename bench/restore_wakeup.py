"""Latency from a restore's 202 to its ``running`` state, in process.

    .venv/bin/python bench/restore_wakeup.py                  # 12 restores, poll 2 s
    .venv/bin/python bench/restore_wakeup.py -n 20 --poll 5

One in-memory Strongroom (local-disk storage in a temporary folder, a restore target that
only notes when it is reached) with the restore runner of ``serve``
(``run_restores_every``, ``STRONGROOM_RESTORE_POLL`` = ``--poll``) running on the same
event loop. Each restore is asked for at a random moment of the runner's cycle; the figure
is the wall time from the create's return (the 202) to the runner taking the restore
(marked ``running`` and committed, the target reached). It prints the median, the mean
and the largest. The set-up reuses the tests' helpers (``tests/support``).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from strongroom.adapters.runtime.restores import RestoreRunner  # noqa: E402
from strongroom.adapters.storage.local import LocalDiskStorage  # noqa: E402
from strongroom.domain.backups import S3Source  # noqa: E402
from strongroom.domain.restores import RestoreTarget  # noqa: E402
from strongroom.entrypoints.service import run_restores_every  # noqa: E402
from strongroom.ports.driven.storage import ObjectReader  # noqa: E402
from support.people import workspace_admin  # noqa: E402
from support.restores import cloud_backup, confirmed_artifact  # noqa: E402
from support.world import memory_facade  # noqa: E402

SOURCE = S3Source(endpoint="https://s3.example.com", bucket="source")
TARGET = S3Source(endpoint="https://s3.example.net", bucket="restored")
KEYS = {"access_key_id": "bench", "secret_access_key": "bench-secret"}


class Reached:
    """A restore target that notes when the runner reaches it and reads the artifact."""

    def __init__(self) -> None:
        self.reached: asyncio.Queue[float] = asyncio.Queue()

    async def restore(
        self, artifact: ObjectReader, target: RestoreTarget, credentials: Mapping[str, str]
    ) -> None:
        self.reached.put_nowait(time.perf_counter())
        artifact.read()


async def measure(count: int, poll: float) -> list[float]:
    """``count`` latencies (seconds) from a create's return to its runner reaching it."""
    with tempfile.TemporaryDirectory() as folder:
        storage = LocalDiskStorage(Path(folder), b"bench")
        targets = Reached()
        facade = memory_facade(storage=storage, restore_targets=targets)
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await cloud_backup(facade, ada, SOURCE)
        artifact = await confirmed_artifact(facade, ada, backup.id, b"archive bytes")
        runner = asyncio.create_task(run_restores_every(RestoreRunner(facade.restores), poll))
        latencies = []
        try:
            for _ in range(count):
                await asyncio.sleep(random.uniform(0, poll))
                await facade.restores.create(ada, artifact.id, TARGET, KEYS)
                answered = time.perf_counter()
                reached = await asyncio.wait_for(targets.reached.get(), poll * 3 + 10)
                latencies.append(reached - answered)
            await asyncio.sleep(0.2)  # the last restore records its end
        finally:
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
        return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=12, help="restores to time")
    parser.add_argument("--poll", type=float, default=2.0, help="STRONGROOM_RESTORE_POLL")
    options = parser.parse_args()
    latencies = asyncio.run(measure(options.n, options.poll))
    milliseconds = [latency * 1000 for latency in latencies]
    print(
        f"202 -> running, {options.n} restores, poll {options.poll:g} s: "
        f"median {statistics.median(milliseconds):.1f} ms, "
        f"mean {statistics.fmean(milliseconds):.1f} ms, max {max(milliseconds):.1f} ms"
    )


if __name__ == "__main__":
    main()
