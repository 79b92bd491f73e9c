"""Schedulers, claimers and service executors on one PostgreSQL database, each instance
with its own pool (as separate processes would have), driven on a clock the test moves:
what the scheduler's PostgreSQL tests and the simulated day share."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs
import psycopg

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.runtime.executor import Executor
from strongroom.adapters.sql.listen import PostgresRunSignals
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.system import SecureIds
from strongroom.domain.backups import BackupChanges, BackupKind, PostgresSource, S3Source, Schedule
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.schedules import next_slot
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driving import Strongroom
from support.people import retention, workspace_admin
from support.world import FAST_HASHER

MINUTE = timedelta(minutes=1)
# Simulated minutes between two vacuums of a long simulation (see ``vacuumed``).
VACUUM_EVERY = 60
# Every instance is configured alike, as separate processes would be: one secret key (a
# backup's credentials sealed on one instance are opened on another), one object store.
SECRET_KEY = "scheduling-world-secret-key-0123456789abcdef"
SOURCE_ENDPOINT = "https://s3.example.com"
SOURCE_CREDENTIALS = {"access_key_id": "day", "secret_access_key": "day-secret"}


@asynccontextmanager
async def instances(
    conninfo: str, count: int, clock: ManualClock, objects: Path | None = None
) -> AsyncIterator[list[Strongroom]]:
    """``count`` facades on the database, each with its own pool and LISTEN connection
    (the first also serves sign-ins), all on ``clock`` and one secret key; with
    ``objects``, their service storage is that one local-disk directory."""
    async with AsyncExitStack() as stack:
        facades = []
        for number in range(count):
            database = PostgresDatabase.from_url(conninfo, min_size=1, max_size=4)
            await database.open()
            stack.push_async_callback(database.aclose)
            signals = PostgresRunSignals.for_database(database)
            stack.push_async_callback(signals.aclose)
            ids = SecureIds()
            identity = (
                BuiltinIdentityProvider(uow=database.uow, clock=clock, ids=ids, hasher=FAST_HASHER)
                if number == 0
                else None
            )
            storage = (
                None
                if objects is None
                else LocalDiskStorage(objects, SECRET_KEY.encode(), clock=clock.now)
            )
            facades.append(
                bootstrap(
                    uow=database.uow,
                    clock=clock,
                    ids=ids,
                    identity=identity,
                    signals=signals,
                    secret_key=SECRET_KEY,
                    storage=storage,
                )
            )
        yield facades


@attrs.frozen
class Fleet:
    """A workspace, its worker, its scheduled backups (local ones assigned to the worker,
    cloud ones executed by the service) and which of them are cloud backups."""

    admin: Caller
    worker: Caller
    workspace_id: UUID
    backups: dict[UUID, Schedule]
    cloud: frozenset[UUID] = frozenset()


async def fleet(
    facade: Strongroom, schedules: Sequence[Schedule], cloud: Sequence[Schedule] = ()
) -> Fleet:
    """One active local backup per schedule, all assigned to one worker, and one active
    cloud backup per ``cloud`` schedule, each reading the S3 prefix named by its id."""
    admin, workspace_id = await workspace_admin(facade, "ops@example.com")
    await facade.workspaces.set_quota(workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 0)
    issued = await facade.workers.create(admin, "rack")
    worker = await facade.access.authenticate(issued.token)
    backups = {}
    for number, schedule in enumerate(schedules):
        created = await facade.backups.create(admin, workspace_id, f"B{number}", BackupKind.LOCAL)
        changes = BackupChanges(
            worker_id=worker.worker_id, retention=retention("P30D", "PT0S"), schedule=schedule
        )
        await facade.backups.update(admin, created.id, changes)
        backups[created.id] = schedule
    clouds = set()
    for number, schedule in enumerate(cloud):
        created = await facade.backups.create(admin, workspace_id, f"C{number}", BackupKind.CLOUD)
        changes = BackupChanges(
            source=S3Source(SOURCE_ENDPOINT, "day", f"{created.id}/"),
            credentials=SOURCE_CREDENTIALS,
            retention=retention("P30D", "PT0S"),
            schedule=schedule,
        )
        await facade.backups.update(admin, created.id, changes)
        backups[created.id] = schedule
        clouds.add(created.id)
    return Fleet(admin, worker, workspace_id, backups, frozenset(clouds))


class CountingReaders:
    """A source port for the simulation: each S3 source (one per backup, its prefix the
    backup's id) yields a few bytes and counts every read by backup and by the clock's
    minute, which is the slot of the run being executed (the test's clock moves only
    between minutes, once every run of the minute ended). The backups in ``pausing``
    pause mid-stream for ``pause`` seconds, long enough for heartbeats."""

    def __init__(
        self, clock: ManualClock, pausing: frozenset[UUID] = frozenset(), pause: float = 0.0
    ) -> None:
        self._clock = clock
        self.pausing = pausing
        self.pause = pause
        self.reads: Counter[tuple[UUID, datetime]] = Counter()

    @property
    def total(self) -> int:
        """Every read so far."""
        return self.reads.total()

    def read(
        self, source: S3Source | PostgresSource, credentials: Mapping[str, str]
    ) -> AsyncIterator[bytes]:
        """The source's few bytes; counted now, as the executor opens the stream."""
        assert isinstance(source, S3Source)
        assert source.prefix is not None
        backup_id = UUID(source.prefix.rstrip("/"))
        slot = self._clock.now()
        self.reads[(backup_id, slot)] += 1
        # Opened by the executor of another instance than the one that sealed them.
        assert dict(credentials) == SOURCE_CREDENTIALS
        return self._stream(backup_id, slot)

    async def _stream(self, backup_id: UUID, slot: datetime) -> AsyncIterator[bytes]:
        yield f"{backup_id} ".encode()
        if backup_id in self.pausing:
            await asyncio.sleep(self.pause)
        yield f"{slot:%Y-%m-%dT%H:%M}\n".encode()


def slots(schedule: Schedule, after: datetime, until: datetime) -> list[datetime]:
    """Every slot of ``schedule`` in ``(after, until]``."""
    found = []
    moment = after
    while (moment := next_slot(schedule.cron, schedule.timezone, moment)) <= until:
        found.append(moment)
    return found


async def drain(facade: Strongroom, worker: Caller, scheduling: asyncio.Event) -> int:
    """Claim and finish (confirm, no artifacts) queued runs until none is left once the
    schedulers are done; how many."""
    done = 0
    while True:
        claimed = await facade.claims.claim(worker)
        if claimed is None:
            if scheduling.is_set():
                return done
            await asyncio.sleep(0.002)
            continue
        await facade.artifacts.confirm(worker, claimed.run.id)
        done += 1


@attrs.frozen
class Executors:
    """The service executors of the simulation (one per instance) and the source they
    all read."""

    executors: list[Executor]
    readers: CountingReaders
    running: list[asyncio.Task[None]]

    async def settled(self, expected: int, timeout: float = 120) -> None:
        """Wait until ``expected`` reads in all were made and no executor holds a run."""
        deadline = time.monotonic() + timeout
        while self.readers.total < expected or any(e.active for e in self.executors):
            for task in self.running:
                assert not task.done(), f"an executor stopped: {task}"
            assert time.monotonic() < deadline, (
                f"the executors never settled: {self.readers.total} of {expected} reads,"
                f" {[e.active for e in self.executors]} runs in flight"
            )
            await asyncio.sleep(0.002)


@asynccontextmanager
async def executing(
    facades: Sequence[Strongroom], readers: CountingReaders, concurrency: int, heartbeat: float
) -> AsyncIterator[Executors]:
    """One running ``Executor`` per facade (``concurrency`` runs at once, a heartbeat
    every ``heartbeat`` seconds), all reading ``readers``; stopped on leaving."""
    executors = [
        Executor(f.service_runs, readers, concurrency=concurrency, heartbeat_every=heartbeat)
        for f in facades
    ]
    stop = asyncio.Event()
    running = [asyncio.create_task(e.run(stop)) for e in executors]
    try:
        yield Executors(executors, readers, running)
    finally:
        stop.set()
        await asyncio.gather(*running)


async def minute_by_minute(
    facades: Sequence[Strongroom],
    clock: ManualClock,
    worker: Caller,
    minutes: int,
    executors: Executors | None = None,
    report_every: int = 0,
    vacuum: str | None = None,
) -> tuple[int, int]:
    """Each minute: the clock moves on, every facade's scheduler runs at once while every
    facade claims and finishes its worker's runs and the ``executors`` (running all along)
    execute the cloud ones; the minute ends when every run of it ended. The runs scheduled
    and finished (a cloud run counts as finished by its source's reads). Every
    ``report_every`` minutes, prints how far it got and how long the stretch took (a cost
    that grows with the runs made shows there). With ``vacuum`` (the database), every
    ``VACUUM_EVERY`` minutes, vacuums and analyzes it as autovacuum would."""
    scheduled = finished = 0
    began = stretch = time.monotonic()
    for minute in range(1, minutes + 1):
        clock.advance(MINUTE)
        read = 0 if executors is None else executors.readers.total
        scheduling = asyncio.Event()
        claimers = [asyncio.create_task(drain(f, worker, scheduling)) for f in facades]
        reports = await asyncio.gather(*(f.scheduler.run_due() for f in facades))
        scheduling.set()
        finished += sum(await asyncio.gather(*claimers))
        scheduled += sum(report.scheduled for report in reports)
        assert all(report.errors == 0 for report in reports)
        if executors is not None:
            await executors.settled(read + scheduled - finished)
            finished += executors.readers.total - read
        if vacuum is not None and minute % VACUUM_EVERY == 0:
            await vacuumed(vacuum)
        if report_every and minute % report_every == 0:
            now = time.monotonic()
            print(
                f"minute {minute} ({clock.now():%H:%M} UTC): {finished} runs,"
                f" {now - began:.0f} s, the last {report_every} minutes {now - stretch:.1f} s",
                flush=True,
            )
            stretch = now
    return scheduled, finished


async def vacuumed(conninfo: str) -> None:
    """``VACUUM (ANALYZE)`` the database: what autovacuum does on an operated server, which
    a test server may run without (``autovacuum = off``). Without it, a day of minute
    schedules leaves every backup row with a dead version a minute and every run with
    three, and each look at them wades through those."""
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as connection:
        await connection.execute("VACUUM (ANALYZE)")


def stored_runs(conninfo: str, workspace_id: UUID) -> dict[UUID, list[tuple[Any, ...]]]:
    """Every run of the workspace by backup, oldest first: (created_at, state, attempt)."""
    by_backup: dict[UUID, list[tuple[Any, ...]]] = {}
    with psycopg.connect(conninfo, autocommit=True) as connection:
        for backup_id, created_at, state, attempt in connection.execute(
            "SELECT backup_id, created_at, state, attempt FROM runs WHERE workspace_id = %s"
            " ORDER BY created_at, id",
            (workspace_id,),
        ):
            by_backup.setdefault(backup_id, []).append((created_at, state, attempt))
    return by_backup


def claims_per_run(conninfo: str, workspace_id: UUID) -> dict[str, int]:
    """How many ``run.claim`` events each run has."""
    return events_per_run(conninfo, workspace_id, "run.claim")


def events_per_run(conninfo: str, workspace_id: UUID, action: str) -> dict[str, int]:
    """How many ``action`` events each run (or other target) has."""
    with psycopg.connect(conninfo, autocommit=True) as connection:
        return dict(
            connection.execute(
                "SELECT target_id, count(*) FROM audit_events"
                " WHERE workspace_id = %s AND action = %s GROUP BY target_id",
                (workspace_id, action),
            )
        )
