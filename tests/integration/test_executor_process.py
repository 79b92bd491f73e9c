"""``strongroom executor`` as a real process (contract 11): killed with SIGKILL in the
middle of a run, the run is requeued when its lease expires and the next executor's
attempt succeeds; SIGTERM stops an executor cleanly (exit 0)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import UUID

from cloud_sources import fill_database, pg_dump_processes, table_locked
from integration_world import SECRET_KEY, postgres_url

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.system import SecureIds, SystemClock
from strongroom.domain.artifacts import ArtifactState
from strongroom.domain.backups import BackupChanges, BackupKind, PostgresSource
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.runs import Run, RunState
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driving import Strongroom
from support.people import retention, workspace_admin
from support.postgres import PostgresServer, scratch_database
from support.serve_process import STRONGROOM, unconfigured_environment
from support.world import FAST_HASHER

LEASE = 3


@contextmanager
def executor_process(
    database_url: str, data_dir: Path, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """``strongroom executor`` on the test's database and data dir, leases of ``LEASE`` s."""
    environment = {
        **unconfigured_environment(),
        "STRONGROOM_DATABASE_URL": database_url,
        "STRONGROOM_SECRET_KEY": SECRET_KEY,
        "STRONGROOM_ENDPOINT_NETWORKS": "127.0.0.0/8",
        "STRONGROOM_EXECUTOR_LEASE": str(LEASE),
        "STRONGROOM_EXECUTOR_POLL": "0.2",
        "STRONGROOM_LOG_FORMAT": "text",
    }
    with log.open("ab") as output:
        process = subprocess.Popen(
            [str(STRONGROOM), "executor", "--data-dir", str(data_dir)],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def executor_facade(database: PostgresDatabase, storage: LocalDiskStorage) -> Strongroom:
    """The test's own facade beside an ``executor_process``: the same database and object
    storage (``data_dir / "objects"``), the built-in identity provider, loopback allowed."""
    identity = BuiltinIdentityProvider(
        uow=database.uow, clock=SystemClock(), ids=SecureIds(), hasher=FAST_HASHER
    )
    return bootstrap(
        uow=database.uow,
        identity=identity,
        secret_key=SECRET_KEY,
        storage=storage,
        endpoint_policy=EndpointPolicy.parse("127.0.0.0/8"),
    )


async def wait_for(
    facade: Strongroom, admin: Caller, run_id: UUID, check: Callable[[Run], bool], what: str
) -> Run:
    """The run once ``check`` holds, expiring leases meanwhile (as a serve's job does)."""
    deadline = time.monotonic() + 60
    while True:
        run = await facade.runs.get(admin, run_id)
        if check(run):
            return run
        assert time.monotonic() < deadline, f"{what}: {run}"
        await facade.leases.expire()  # the lease job of a serve, run here
        await asyncio.sleep(0.2)


def test_a_killed_executor_s_run_is_requeued_and_the_next_attempt_succeeds(
    pg_server: PostgresServer, tmp_path: Path
) -> None:
    """``pg_dump`` waits on a locked table when the first executor is killed; the lease
    runs out, the run is requeued (attempt 2), and a second executor finishes it; its
    SIGTERM then ends it with status 0."""
    data_dir, log = tmp_path / "data", tmp_path / "executor.log"
    with (
        scratch_database(pg_server, "strongroom_exec") as state,
        scratch_database(pg_server, "strongroom_src") as source,
        PostgresDatabase.from_url(state, min_size=0) as database,
    ):
        database.migrate()
        fill_database(source)
        params = dict(part.split("=", 1) for part in source.split())
        storage = LocalDiskStorage(data_dir / "objects", SECRET_KEY.encode())
        facade = executor_facade(database, storage)
        url = postgres_url(state)

        async def scenario() -> None:
            ada, _ = await workspace_admin(facade, "ada@example.com")
            backup = await facade.backups.create(
                ada, ada.scoped_workspace(), "Orders", BackupKind.CLOUD
            )
            changes = BackupChanges(
                source=PostgresSource(params["host"], int(params["port"]), params["dbname"]),
                credentials={"username": params["user"], "password": "unused-with-trust"},
                retention=retention("P30D", "PT0S"),
            )
            await facade.backups.update(ada, backup.id, changes)
            with table_locked(source, "events") as lock:
                run = await facade.runs.trigger(ada, backup.id)
                with executor_process(url, data_dir, log) as first:
                    await wait_for(
                        facade, ada, run.id, lambda r: r.state is RunState.RUNNING, "claimed"
                    )
                    deadline = time.monotonic() + 20
                    while not pg_dump_processes(params["dbname"]):
                        assert time.monotonic() < deadline, log.read_text()
                        await asyncio.sleep(0.1)
                    first.send_signal(signal.SIGKILL)
                    first.wait()
                requeued = await wait_for(
                    facade, ada, run.id, lambda r: r.state is RunState.QUEUED, "requeued"
                )
                assert requeued.attempt == 2
                lock.rollback()  # the orphaned pg_dump goes on, into a closed pipe
            with executor_process(url, data_dir, log) as second:
                done = await wait_for(facade, ada, run.id, lambda r: r.finished, "finished")
                assert done.state is RunState.SUCCEEDED, (done.error, log.read_text())
                assert done.attempt == 2
                second.send_signal(signal.SIGTERM)
                assert second.wait(timeout=15) == 0, log.read_text()
            page = await facade.artifacts.list_in(
                ada, ada.scoped_workspace(), False, PageRequest(5)
            )
            (artifact,) = page.items
            assert artifact.state is ArtifactState.AVAILABLE
            dump = storage.object_path(artifact.object_key)
            listed = subprocess.run(
                ["pg_restore", "--list", str(dump)], check=True, capture_output=True, text=True
            ).stdout
            assert "TABLE DATA public events" in listed

        asyncio.run(scenario())
        deadline = time.monotonic() + 10
        while pg_dump_processes(params["dbname"]):  # the orphan ends on its broken pipe
            assert time.monotonic() < deadline
            time.sleep(0.2)
    assert "executor: stopped" in log.read_text()
