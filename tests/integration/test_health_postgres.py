"""Two service instances on one PostgreSQL database (contract 16): their evaluators run
at the same moment over a backup gone late, and exactly one ``backup.late`` is queued
(the stored status's compare-and-set); their senders take the due deliveries at the same
moment, and no delivery is taken by both (``SKIP LOCKED`` and the lease)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import attrs

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.system import SecureIds
from strongroom.domain.backups import BackupChanges, Freshness
from strongroom.domain.durations import Duration
from strongroom.domain.freshness import Announcement
from strongroom.domain.pagination import PageRequest
from strongroom.domain.runs import Run, RunState
from strongroom.ports.driving import Strongroom
from support.people import active_manual, workspace_admin
from support.postgres import PostgresServer, scratch_database
from support.world import FAST_HASHER, memory_facade

BACKUPS = 8
SHARED_SECRET = "one service, two instances"


def facade_on(database: PostgresDatabase, clock: ManualClock) -> Strongroom:
    identity = BuiltinIdentityProvider(
        uow=database.uow, clock=clock, ids=SecureIds(), hasher=FAST_HASHER
    )
    # Instances of one service share its secret key: either may open a webhook's secret.
    return memory_facade(clock, uow=database.uow, identity=identity, secret_key=SHARED_SECRET)


def test_two_instances_announce_once_and_never_send_one_delivery_twice(
    pg_server: PostgresServer,
) -> None:
    clock = ManualClock(datetime(2030, 1, 2, 12, 0, tzinfo=UTC))
    with (
        scratch_database(pg_server, "strongroom_health") as conninfo,
        PostgresDatabase.from_url(conninfo, min_size=0) as first_pool,
        PostgresDatabase.from_url(conninfo, min_size=0) as second_pool,
    ):
        first_pool.migrate()
        one, two = facade_on(first_pool, clock), facade_on(second_pool, clock)

        async def scenario() -> tuple[int, int, list[int], int]:
            ada, wid = await workspace_admin(one, "ada@example.com")
            hook = await one.webhooks.create(
                ada, wid, "https://hooks.example.com/", ["backup.late"]
            )
            for index in range(BACKUPS):
                backup_id = await active_manual(one, ada, f"B{index}")
                await one.backups.update(
                    ada, backup_id, BackupChanges(freshness=Freshness(Duration(3600)))
                )
                backup = await one.backups.get(ada, backup_id)
                run = Run.manual(uuid4(), backup, clock.now())
                async with one.deps.uow() as uow:
                    await uow.runs.add(
                        attrs.evolve(run, state=RunState.SUCCEEDED, finished_at=clock.now())
                    )
                    await uow.commit()
            first = await asyncio.gather(one.health.evaluate(), two.health.evaluate())
            clock.advance(timedelta(hours=2))
            late = 0
            for _ in range(3):
                passes = await asyncio.gather(one.health.evaluate(), two.health.evaluate())
                late += sum(
                    1 for p in passes for _, said in p.announced if said is Announcement.LATE
                )
            taken = await asyncio.gather(one.webhooks.take_due(), two.webhooks.take_due())
            log = await one.webhooks.deliveries(ada, hook.webhook.id, PageRequest(100))
            return (
                sum(len(p.announced) for p in first),
                late,
                [len(t) for t in taken] + [len({d.delivery.id for t in taken for d in t})],
                len(log.items),
            )

        announced_while_fresh, late, taken, logged = asyncio.run(scenario())
    assert announced_while_fresh == 0
    assert late == BACKUPS
    assert logged == BACKUPS
    assert sum(taken[:2]) == taken[2] == BACKUPS
