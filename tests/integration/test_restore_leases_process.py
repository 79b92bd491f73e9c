"""A restore whose ``strongroom executor`` is killed (SIGKILL) mid-restore (contract 11):
its lease runs out, the next executor's restore runner queues it again as attempt 2 and
finishes it; the target bucket then holds every object byte for byte (the first attempt's
partial writes are simply overwritten).

The target is reached through a TCP proxy that is paused while the first executor holds
the restore, so the kill lands mid-restore every time."""

from __future__ import annotations

import asyncio
import secrets
import signal
import time
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

from integration_world import SECRET_KEY, postgres_url
from test_executor_process import executor_facade, executor_process
from test_restores_real import archive_bucket, bucket_contents, client_of, fill_source_bucket

from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.domain.backups import S3Source
from strongroom.domain.principals import Caller
from strongroom.domain.restores import Restore, RestoreState
from support.people import workspace_admin
from support.postgres import PostgresServer, scratch_database
from support.restores import cloud_backup, confirmed_artifact
from support.seaweed import SeaweedServer
from support.tcp_proxy import TcpProxy


def test_a_killed_executor_s_restore_runs_again_and_succeeds(
    pg_server: PostgresServer, seaweed: SeaweedServer, tmp_path: Path
) -> None:
    """Killed while its restore hangs on the paused target: the restore stays ``running``
    until its lease (3 s) runs out, then a second executor restores it as attempt 2."""
    data_dir, log = tmp_path / "data", tmp_path / "executor.log"
    client = client_of(seaweed)
    source_bucket = "src-" + secrets.token_hex(4)
    objects = fill_source_bucket(client, source_bucket)
    archive = archive_bucket(client, source_bucket, "data/")
    upstream = seaweed.endpoint.removeprefix("http://").split(":")
    with (
        scratch_database(pg_server, "strongroom_restore_kill") as state,
        PostgresDatabase.from_url(state, min_size=0) as database,
        TcpProxy((upstream[0], int(upstream[1]))) as proxy,
    ):
        database.migrate()
        storage = LocalDiskStorage(data_dir / "objects", SECRET_KEY.encode())
        facade = executor_facade(database, storage)
        url = postgres_url(state)
        keys = {"access_key_id": seaweed.access_key, "secret_access_key": seaweed.secret_key}
        target_bucket = "restored-" + secrets.token_hex(4)

        async def until(
            ada: Caller, restore_id: UUID, check: Callable[[Restore], bool], what: str
        ) -> Restore:
            deadline = time.monotonic() + 60
            while True:
                found = await facade.restores.get(ada, restore_id)
                if check(found):
                    return found
                assert time.monotonic() < deadline, f"{what}: {found}\n{log.read_text()}"
                await asyncio.sleep(0.1)

        async def scenario() -> None:
            ada, _ = await workspace_admin(facade, "ada@example.com")
            backup = await cloud_backup(
                facade, ada, S3Source(seaweed.endpoint, source_bucket, "data/")
            )
            # The backup's source credentials are placeholders: the restore carries the
            # target's real ones.
            artifact = await confirmed_artifact(facade, ada, backup.id, archive)
            target = S3Source(f"http://127.0.0.1:{proxy.port}", target_bucket, "again/")
            proxy.pause()
            restore = await facade.restores.create(ada, artifact.id, target, keys)
            with executor_process(url, data_dir, log) as first:
                taken = await until(
                    ada, restore.id, lambda r: r.state is RestoreState.RUNNING, "taken"
                )
                assert taken.attempt == 1
                await asyncio.sleep(0.5)  # it hangs on the paused target
                first.send_signal(signal.SIGKILL)
                first.wait()
            proxy.resume()
            still = await facade.restores.get(ada, restore.id)
            assert (still.state, still.attempt) == (RestoreState.RUNNING, 1)
            with executor_process(url, data_dir, log) as second:
                done = await until(ada, restore.id, lambda r: r.finished, "finished")
                second.send_signal(signal.SIGTERM)
                assert second.wait(timeout=15) == 0, log.read_text()
            assert (done.state, done.error, done.attempt) == (RestoreState.SUCCEEDED, None, 2)
            assert done.sealed_credentials is None

        asyncio.run(scenario())
    restored = bucket_contents(client, target_bucket, "again/")
    assert restored.keys() == objects.keys()
    for key, data in objects.items():
        assert restored[key] == data, key
    assert "its runner stopped renewing its lease" in log.read_text()
