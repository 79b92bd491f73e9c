"""The lease job's two look-ups side by side, on PostgreSQL and SQLite.

    .venv/bin/python bench/lease_job.py                     # 20 000 finished runs
    .venv/bin/python bench/lease_job.py --runs 100000 --repeats 50

Each run of the lease job (every ``STRONGROOM_LEASE_INTERVAL`` s in ``serve``) makes two
reads: ``runs.lease_expired`` (claimed runs whose lease ran out; the peer) and, since
issue 27 finding 11, ``runs.left_manual`` (manual runs left with pending uploads, which
looks into their artifacts). One scratch database of each kind (PostgreSQL at
127.0.0.1:5432 as ``postgres``, or ``--postgres CONNINFO``; a SQLite file in a temporary
folder) is filled through the repositories with ``--runs`` finished runs with an artifact
each, 200 claimed runs (half with an expired lease) and 200 running manual runs with two
pending artifacts each (half announced more than a day before the bound). It prints the
median time of each read over ``--repeats`` and the ratio left_manual / lease_expired.
The scratch PostgreSQL database is dropped at the end.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "contract"))

from contract_records import T0, SqlAdapter, at, backup, user, workspace  # noqa: E402
from test_contract_artifacts import artifact  # noqa: E402

from strongroom.adapters.sql.postgres import PostgresDatabase  # noqa: E402
from strongroom.adapters.sql.sqlite import SqliteDatabase  # noqa: E402
from strongroom.domain.artifacts import ArtifactState  # noqa: E402
from strongroom.domain.runs import ABANDON_AFTER, Run, RunTrigger  # noqa: E402
from support.postgres import PostgresServer, scratch_database  # noqa: E402

BATCH = 2_000
DAY = ABANDON_AFTER.total_seconds()


def fill(adapter: SqlAdapter, runs: int) -> None:
    """The data set of the module's description."""
    ada = user()
    target = workspace(ada)
    owners = [backup(target.id) for _ in range(20)]
    adapter.store(ada, target, *owners)
    records: list[object] = []

    def flush() -> None:
        adapter.store(*records)
        records.clear()

    for number in range(runs):
        owner = owners[number % len(owners)]
        done = Run.manual(uuid4(), owner, at(number)).succeeded(1, 1234, at(number + 1))
        records += [done, artifact(done, "a", number, state=ArtifactState.AVAILABLE)]
        if len(records) >= BATCH:
            flush()
    for number in range(200):
        owner = owners[number % len(owners)]
        claimed = Run.queued(uuid4(), owner, RunTrigger.API, T0)
        records.append(claimed.claim(uuid4(), at(DAY + (-100 if number % 2 else 100))))
        manual = Run.manual(uuid4(), owner, at(number))
        announced = number if number % 2 else DAY + number + 1
        records += [manual, artifact(manual, "a", announced), artifact(manual, "b", number)]
    flush()


def median_ms(read: Callable[[], Any], repeats: int) -> tuple[float, int]:
    """The median wall time of ``read`` in ms, and how many rows it gave."""
    times, found = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        found = len(read())
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), found


def measure(adapter: SqlAdapter, runs: int, repeats: int) -> None:
    started = time.perf_counter()
    fill(adapter, runs)
    filled = time.perf_counter() - started
    now = at(DAY * 2)
    with adapter.uow() as uow:
        expired, n_expired = median_ms(lambda: uow.runs.lease_expired(at(DAY), 1_000), repeats)
        left, n_left = median_ms(
            lambda: uow.runs.left_manual(now - timedelta(days=1), 1_000), repeats
        )
    print(
        f"{adapter.name:9} runs={runs} (filled in {filled:.0f} s)"
        f"  lease_expired {expired:.2f} ms ({n_expired} rows)"
        f"  left_manual {left:.2f} ms ({n_left} rows)"
        f"  ratio {left / expired:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument(
        "--postgres", default="host=127.0.0.1 port=5432 user=postgres dbname=postgres"
    )
    options = parser.parse_args()
    server = PostgresServer(options.postgres)
    with (
        scratch_database(server, "strongroom_bench_lease") as conninfo,
        PostgresDatabase.from_url(conninfo, min_size=1) as pg,
    ):
        pg.migrate()
        measure(SqlAdapter("postgres", pg.uow), options.runs, options.repeats)
    with tempfile.TemporaryDirectory() as folder, SqliteDatabase(Path(folder) / "s.db") as db:
        db.migrate()
        measure(SqlAdapter("sqlite", db.uow), options.runs, options.repeats)


if __name__ == "__main__":
    main()
