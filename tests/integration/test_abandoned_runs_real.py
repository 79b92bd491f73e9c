"""Manual runs left by their client, on real parts (contract 13, issue 27 finding 11):
PostgreSQL for the records, SeaweedFS for the objects. A client announces a multipart
upload into a manual run and goes away; a day later the lease job fails the run
("abandoned"), the unfinished multipart upload is aborted in the store, and the bytes it
reserved against the workspace's storage quota are free again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.runtime.blocking import blocking_call
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.runs import ABANDON_AFTER, RunState
from strongroom.ports.driving.leases import LeaseReport
from support.people import active_manual, workspace_admin
from support.postgres import PostgresServer, scratch_database
from support.seaweed import SeaweedServer, s3_storage
from support.world import memory_facade

MIB = 1024 * 1024
SIZE = 20 * MIB  # above the threshold below: a multipart upload in the store
SHA256 = "ab" * 32


def test_a_left_manual_run_releases_its_reservation_and_its_upload(
    pg_server: PostgresServer, seaweed: SeaweedServer
) -> None:
    storage = s3_storage(seaweed)
    clock = ManualClock(datetime.now(UTC))
    with (
        scratch_database(pg_server, "strongroom_abandon") as conninfo,
        PostgresDatabase.from_url(conninfo, min_size=1) as pg,
    ):
        pg.migrate()
        facade = memory_facade(clock, uow=pg.uow, storage=storage, multipart_threshold=MIB)

        async def scenario() -> None:
            ada, wid = await workspace_admin(facade, "ada@example.com")
            await facade.workspaces.set_quota(wid, QuotaResource.STORAGE_BYTES, SIZE)
            backup = await active_manual(facade, ada)
            left = await facade.runs.start(ada, backup)
            plan = await facade.artifacts.upload_url(ada, left.id, "db.dump", SIZE, SHA256)
            assert plan.artifact.upload_id is not None
            soon = datetime.now(UTC) + timedelta(hours=1)
            uploads = {u.upload_id for u in await storage.pending_uploads(soon)}
            assert plan.artifact.upload_id in uploads
            later = await facade.runs.start(ada, backup)

            clock.advance(ABANDON_AFTER - timedelta(seconds=1))
            assert await facade.leases.expire() == LeaseReport()
            clock.advance(timedelta(seconds=1))
            assert await facade.leases.expire() == LeaseReport(abandoned=1)

            ended = await facade.runs.get(ada, left.id)
            assert (ended.state, ended.error) == (RunState.FAILED, "abandoned")
            uploads = {u.upload_id for u in await storage.pending_uploads(soon)}
            assert plan.artifact.upload_id not in uploads
            # The whole quota is free again for the client that came back.
            await facade.artifacts.upload_url(ada, later.id, "db.dump", SIZE, SHA256)

        blocking_call(scenario())
