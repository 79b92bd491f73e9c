"""Schedulers and claimers on one PostgreSQL database, each with its own pool (as separate
processes would have), driven on a clock the test moves: what the scheduler's PostgreSQL
tests and the simulated day share."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import attrs
import psycopg

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.sql.listen import PostgresRunSignals
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.system import SecureIds
from strongroom.domain.backups import BackupChanges, BackupKind, Schedule
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.schedules import next_slot
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driving import Strongroom
from support.people import retention, workspace_admin
from support.world import FAST_HASHER

MINUTE = timedelta(minutes=1)


@asynccontextmanager
async def instances(
    conninfo: str, count: int, clock: ManualClock
) -> AsyncIterator[list[Strongroom]]:
    """``count`` facades on the database, each with its own pool and LISTEN connection
    (the first also serves sign-ins), all on ``clock``."""
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
            facades.append(
                bootstrap(
                    uow=database.uow, clock=clock, ids=ids, identity=identity, signals=signals
                )
            )
        yield facades


@attrs.frozen
class Fleet:
    """A workspace, its worker and its scheduled local backups."""

    admin: Caller
    worker: Caller
    workspace_id: UUID
    backups: dict[UUID, Schedule]


async def fleet(facade: Strongroom, schedules: Sequence[Schedule]) -> Fleet:
    """One active local backup per schedule, all assigned to one worker."""
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
    return Fleet(admin, worker, workspace_id, backups)


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


async def minute_by_minute(
    facades: Sequence[Strongroom], clock: ManualClock, worker: Caller, minutes: int
) -> tuple[int, int]:
    """Each minute: the clock moves on, every facade's scheduler runs at once while every
    facade claims and finishes runs; the runs scheduled and finished."""
    scheduled = finished = 0
    for _ in range(minutes):
        clock.advance(MINUTE)
        scheduling = asyncio.Event()
        claimers = [asyncio.create_task(drain(f, worker, scheduling)) for f in facades]
        reports = await asyncio.gather(*(f.scheduler.run_due() for f in facades))
        scheduling.set()
        finished += sum(await asyncio.gather(*claimers))
        scheduled += sum(report.scheduled for report in reports)
        assert all(report.errors == 0 for report in reports)
    return scheduled, finished


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
    with psycopg.connect(conninfo, autocommit=True) as connection:
        return dict(
            connection.execute(
                "SELECT target_id, count(*) FROM audit_events"
                " WHERE workspace_id = %s AND action = 'run.claim' GROUP BY target_id",
                (workspace_id,),
            )
        )
