"""A write answered 502 was not committed (issue 27, finding 4; contract section 13).

Twenty writers create backups while every process of a throwaway PostgreSQL cluster is
stopped with SIGSTOP and later continued: the creates whose statements were in the
server's socket when it stopped reach it only when it continues, after their requests have
been answered 502. Without a key, each 502 must be a backup that does not exist afterwards
(and each 201 one that does); with a key, retrying each create until it is answered gives
exactly one backup per key, the one the answers name.

The service is ``build_app`` over a ``PostgresDatabase`` with a short statement timeout
(``Settings`` cannot carry it), served by uvicorn in this process, as in
``test_faults_postgres``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

import attrs
import httpx2
import pytest
from integration_world import Tenant, error_code, new_tenant, setup_facade, stored_backups
from live_server import LiveServer, client_for

from strongroom.adapters.http.app import build_app
from strongroom.adapters.runtime.blocking import unwrapped
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.domain.quotas import QuotaResource
from strongroom.ports.driving import Strongroom
from support.postgres import PostgresServer, StoppedCluster, scratch_database, throwaway_cluster

STATEMENT_TIMEOUT = 0.5  # the client cuts a statement 1 s later
WRITERS = 20
WRITING_BEFORE = 0.5  # seconds of writes before the pause, so that some are in flight
PAUSE = 3.0  # longer than any request's bound: every write in flight is answered 502
PAUSES = 2  # each pause catches the writes in flight at its start
WRITING_AFTER = 1.0  # seconds of writes after each pause
RETRY_FOR = 30.0  # a keyed create is retried until answered, at most this long


@attrs.frozen
class Service:
    url: str
    conninfo: str
    cluster: StoppedCluster
    tenant: Tenant


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[PostgresServer]:
    """A cluster of this module's own, which the tests stop with SIGSTOP."""
    with throwaway_cluster() as server:
        yield server


@pytest.fixture
def service(own_cluster: PostgresServer) -> Iterator[Service]:
    assert own_cluster.data_dir is not None
    cluster = StoppedCluster(own_cluster.data_dir)
    with scratch_database(own_cluster, prefix="strongroom_uncommitted") as conninfo:
        with PostgresDatabase.from_url(conninfo, min_size=0) as migrating:
            migrating.migrate()
        database = PostgresDatabase.from_url(
            conninfo,
            statement_timeout=STATEMENT_TIMEOUT,
            timeout=1.0,
            connect_timeout=2,
            min_size=1,
            max_size=4,
        )
        facade = setup_facade(database)

        @asynccontextmanager
        async def open_facade() -> AsyncIterator[Strongroom]:
            async with database:
                yield unwrapped(facade)

        try:
            with LiveServer(build_app(open_facade)) as server, server.client() as client:
                tenant = new_tenant(client, facade)
                facade.workspaces.set_quota(
                    tenant.workspace_id, QuotaResource.BACKUPS_PER_WORKSPACE, 0
                )
                yield Service(server.url, conninfo, cluster, tenant)
        finally:
            cluster.resume()  # never leave the cluster stopped, whatever the test did
            database.close()


def writing_through_a_pause(
    service: Service, write: Callable[[httpx2.Client, int, threading.Event], None]
) -> None:
    """``write(client, writer, stop)`` on ``WRITERS`` threads while the cluster is
    stopped for ``PAUSE`` seconds and continued, ``PAUSES`` times; returns once every
    writer has finished."""
    stop = threading.Event()
    with (
        client_for(service.url, WRITERS) as client,
        ThreadPoolExecutor(max_workers=WRITERS) as pool,
    ):
        writers = [pool.submit(write, client, index, stop) for index in range(WRITERS)]
        time.sleep(WRITING_BEFORE)
        for _ in range(PAUSES):
            service.cluster.pause()
            try:
                time.sleep(PAUSE)
            finally:
                service.cluster.resume()
            time.sleep(WRITING_AFTER)
        stop.set()
        for writer in writers:
            writer.result()


def test_no_create_answered_502_exists_afterwards(service: Service) -> None:
    """Every create answered 502 is absent afterwards, every one answered 201 present."""
    answered: dict[str, int] = {}
    lock = threading.Lock()

    def write(client: httpx2.Client, writer: int, stop: threading.Event) -> None:
        count = 0
        while not stop.is_set():
            name = f"writer {writer} create {count}"
            response = service.tenant.create_backup(client, name)
            assert response.status_code in (201, 502), response.text
            if response.status_code == 502:
                assert error_code(response) == "upstream_unavailable"
            with lock:
                answered[name] = response.status_code
            count += 1

    writing_through_a_pause(service, write)
    failed = {name for name, status in answered.items() if status == 502}
    created = {name for name, status in answered.items() if status == 201}
    assert failed, "no create was answered 502: the pause caught nothing in flight"
    stored = set(stored_backups(service.conninfo, service.tenant.workspace_id))
    assert stored & failed == set(), "creates answered 502 were committed"
    assert stored == created


def test_keyed_creates_retried_until_answered_converge(service: Service) -> None:
    """Each keyed create retried through the pause is answered 201 once settled, and the
    workspace holds exactly one backup per key: the one its answers name."""
    answers: dict[str, str] = {}
    retried: list[str] = []
    lock = threading.Lock()

    def write(client: httpx2.Client, writer: int, stop: threading.Event) -> None:
        count = 0
        while not stop.is_set():
            name = f"keyed writer {writer} create {count}"
            headers = {"Idempotency-Key": f"key-{writer}-{count}"}
            deadline = time.monotonic() + RETRY_FOR
            while (
                response := service.tenant.create_backup(client, name, headers)
            ).status_code == 502:
                assert time.monotonic() < deadline, "the create never got through"
                with lock:
                    retried.append(name)
                time.sleep(0.1)
            assert response.status_code == 201, response.text
            with lock:
                answers[name] = response.json()["id"]
            count += 1

    writing_through_a_pause(service, write)
    assert retried, "no create needed a retry: the pause caught nothing in flight"
    stored = stored_backups(service.conninfo, service.tenant.workspace_id)
    assert {name: str(id_) for name, id_ in stored.items()} == answers
