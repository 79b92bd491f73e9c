"""Faults over HTTP against PostgreSQL reached through a TCP proxy (issue 3, scope 6).

A database that is down, paused or drops connections gives 502 ``upstream_unavailable``
within a bounded time (never a 500, never a hang), writes nothing partially, turns
``/readyz`` to 503 while ``/healthz`` stays 200, and the service recovers by itself once
the database is back, without a restart.

The service is ``build_app`` over a facade on a ``PostgresDatabase`` with short timeouts
(``Settings`` cannot carry them), its pool opened by the app's lifespan as in production,
served by uvicorn; the database is reached only through the proxy, and looked at directly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from functools import partial
from typing import Any
from uuid import UUID

import attrs
import httpx2
import psycopg
import pytest
from integration_world import (
    Tenant,
    created_events,
    direct,
    error_code,
    expect,
    new_tenant,
    setup_facade,
    stored_backups,
)
from live_server import LiveServer, Timed, all_at_once, client_for, timed

from strongroom.adapters.http.app import build_app
from strongroom.adapters.runtime.blocking import unwrapped
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.ports.driving import Strongroom
from support.postgres import PostgresServer
from support.tcp_proxy import TcpProxy

# The adapter's bounds, kept short so that the suite stays fast.
STATEMENT_TIMEOUT = 0.5  # server side; the client cuts a statement 1 s later
POOL_TIMEOUT = 1.0  # waiting for a pooled connection
CONNECT_TIMEOUT = 2  # each connection attempt (whole seconds, at least 2)
# No request may take longer than this while the database is down, paused or cut.
BOUND = 6.0
# Parallel requests while the database is down or paused (more than the server's threads).
BURST = 50
# Once the database is back, the service must serve again within this (no restart).
RECOVERY = 15.0


@attrs.frozen
class Service:
    """The served app, the proxy in front of its database, and a blocking view of the app's
    own facade (for set-up the API does not offer)."""

    url: str
    proxy: TcpProxy
    conninfo: str
    facade: Strongroom

    def client(self, connections: int = 10) -> httpx2.Client:
        return client_for(self.url, connections)


ServiceFactory = Callable[..., Service]


@pytest.fixture
def proxy(pg_server: PostgresServer) -> Iterator[TcpProxy]:
    """A proxy in front of the session's PostgreSQL server."""
    params = psycopg.conninfo.conninfo_to_dict(pg_server.admin_conninfo)
    upstream = (str(params.get("host") or "127.0.0.1"), int(str(params.get("port") or 5432)))
    with TcpProxy(upstream) as tcp:
        yield tcp


@pytest.fixture
def serve(integration_conninfo: str, proxy: TcpProxy) -> Iterator[ServiceFactory]:
    """Starts the service on the session's database reached through ``proxy``; each is
    shut down (and its pool closed) when the test ends."""
    proxied = psycopg.conninfo.make_conninfo(
        integration_conninfo, host="127.0.0.1", port=proxy.port
    )
    with ExitStack() as stack:

        def start(statement_timeout: float = STATEMENT_TIMEOUT) -> Service:
            database = PostgresDatabase.from_url(
                proxied,
                statement_timeout=statement_timeout,
                timeout=POOL_TIMEOUT,
                connect_timeout=CONNECT_TIMEOUT,
                min_size=1,
                max_size=4,
            )
            facade = setup_facade(database)

            @asynccontextmanager
            async def open_facade() -> AsyncIterator[Strongroom]:
                # Opens the pool of the server's loop; closes it and that of the blocking
                # view's loop (set-up) when the server stops.
                async with database:
                    yield unwrapped(facade)

            server = stack.enter_context(LiveServer(build_app(open_facade)))
            return Service(server.url, proxy, integration_conninfo, facade)

        yield start


def assert_unavailable(answer: Timed, what: str = "the request") -> None:
    """502 ``upstream_unavailable`` in the contract's envelope, within the bound."""
    response = answer.response
    assert response.status_code == 502, f"{what}: {response.text}"
    assert error_code(response) == "upstream_unavailable", what
    assert response.json()["error"]["request_id"] == response.headers["x-request-id"]
    assert answer.seconds < BOUND, f"{what} took {answer.seconds:.1f} s"


def api_calls(tenant: Tenant) -> dict[str, Callable[[httpx2.Client], httpx2.Response]]:
    """A read and a write of the API, each needing the database."""
    return {
        "GET /v1/me": lambda client: client.get("/v1/me", headers=tenant.headers),
        "GET backups": lambda client: client.get(tenant.backups_path, headers=tenant.headers),
        "POST backups": lambda client: tenant.create_backup(client, "during the fault"),
    }


def assert_burst_unavailable(client: httpx2.Client, tenant: Tenant) -> None:
    """``BURST`` parallel creates: each a 502 within the bound, queueing included."""
    burst = all_at_once(
        client, BURST, lambda client, index: tenant.create_backup(client, f"burst {index}")
    )
    for index, answer in enumerate(burst):
        assert_unavailable(answer, f"burst request {index}")


def readiness(client: httpx2.Client) -> Timed:
    """``GET /readyz``, timed."""
    return timed(lambda: client.get("/readyz"))


def assert_not_ready(client: httpx2.Client) -> None:
    """``/readyz`` is 503 naming the database; ``/healthz`` stays 200."""
    ready = readiness(client)
    assert ready.seconds < BOUND, f"{ready.seconds:.1f} s"
    assert ready.response.status_code == 503, ready.response.text
    assert ready.response.json() == {
        "status": "unavailable",
        "checks": {"database": "unavailable", "storage": "ok"},
    }
    health = timed(lambda: client.get("/healthz"))
    assert health.response.status_code == 200
    assert health.response.json() == {"status": "ok"}
    assert health.seconds < 1.0


def wait_until_ready(client: httpx2.Client, within: float = RECOVERY) -> float:
    """Poll ``/readyz`` until it is 200; how long that took."""
    started = time.monotonic()
    while True:
        ready = readiness(client)
        assert ready.response.status_code in (200, 503), ready.response.text
        if ready.response.status_code == 200:
            return time.monotonic() - started
        assert time.monotonic() - started < within, "the service did not recover by itself"
        time.sleep(0.1)


def assert_serves(client: httpx2.Client, tenant: Tenant, name: str) -> None:
    """Reads and writes succeed: the service is back without a restart."""
    assert expect(client.get("/readyz"), 200) == {
        "status": "ok",
        "checks": {"database": "ok", "storage": "ok"},
    }
    expect(client.get("/v1/me", headers=tenant.headers), 200)
    expect(tenant.create_backup(client, name), 201)
    assert name in tenant.backup_names(client)


def assert_unavailable_then_serves(
    service: Service, fault: Callable[[], None], cure: Callable[[], None], after: str
) -> None:
    """While ``fault`` holds every API call is a bounded 502, alone or in a burst, and
    readiness says why; after ``cure`` the same process serves reads and writes again, and
    none of the refused writes was stored."""
    with service.client(BURST) as client:
        tenant = new_tenant(client, service.facade)
        fault()
        try:
            for name, call in api_calls(tenant).items():
                assert_unavailable(timed(partial(call, client)), name)
            assert_not_ready(client)
            assert_burst_unavailable(client, tenant)
        finally:
            cure()
        wait_until_ready(client)
        assert_serves(client, tenant, after)
    stored = stored_backups(service.conninfo, tenant.workspace_id)
    assert not [name for name in stored if "fault" in name or "burst" in name], stored


class TestDatabaseDown:
    """Every connection refused, as when the database process is stopped."""

    def test_api_calls_are_502_readyz_503_healthz_200_then_it_recovers(
        self, serve: ServiceFactory
    ) -> None:
        """Each call is a bounded 502, alone or in a burst; readiness says why; once the
        database is back the same process serves reads and writes again."""
        service = serve()
        assert_unavailable_then_serves(
            service, service.proxy.go_down, service.proxy.come_back, "after the outage"
        )

    @pytest.mark.slow
    def test_recovery_does_not_wait_out_the_length_of_the_outage(
        self, serve: ServiceFactory
    ) -> None:
        """After a 9.6 s outage the service serves again within 2.5 s of the database's
        return (the pool's timeout and a connection attempt), not ~15 s after it began."""
        service = serve()
        with service.client() as client:
            tenant = new_tenant(client, service.facade)
            service.proxy.go_down()
            outage_began = time.monotonic()
            try:
                # Finds every pooled connection dead: the pool starts reconnecting now.
                assert_not_ready(client)
                time.sleep(max(0.0, outage_began + 9.6 - time.monotonic()))
            finally:
                service.proxy.come_back()
            wait_until_ready(client, within=2.5)
            assert_serves(client, tenant, "after a long outage")


class TestDatabasePaused:
    """Nothing forwarded either way, as with a stopped (SIGSTOP) server or a silent network."""

    def test_api_calls_are_502_within_the_bound_then_it_recovers(
        self, serve: ServiceFactory
    ) -> None:
        """Statements and connection attempts are cut at their deadlines: 502, not a hang,
        alone or in a burst; readiness says why; then the same process serves again."""
        service = serve()
        assert_unavailable_then_serves(
            service, service.proxy.pause, service.proxy.resume, "after the pause"
        )


class TestConnectionsDropped:
    """Connections cut (a restart, a network reset), between or in the middle of requests."""

    def test_a_cut_between_requests_costs_no_request(self, serve: ServiceFactory) -> None:
        """Every pooled connection dies; the next requests reconnect and succeed."""
        service = serve()
        with service.client() as client:
            tenant = new_tenant(client, service.facade)
            service.proxy.cut()
            expect(client.get("/v1/me", headers=tenant.headers), 200)
            service.proxy.cut()
            expect(tenant.create_backup(client, "after a restart"), 201)
            service.proxy.cut()
            expect(client.get("/readyz"), 200)

    def test_a_connection_dropped_mid_request_writes_nothing(self, serve: ServiceFactory) -> None:
        """The connection is cut after the backup row is written and before its audit
        event: 502, and neither exists; the same create then succeeds with its event."""
        service = serve(statement_timeout=10.0)  # the cut, not a timeout, must end it
        with service.client() as client:
            tenant = new_tenant(client, service.facade)
            with audit_table_locked(service.conninfo):
                request = in_background(lambda: tenant.create_backup(client, "Nightly"))
                wait_for_insert_waiting_on_lock(service.conninfo, "audit_events")
                service.proxy.cut()
                assert_unavailable(request.result())
            wait_until_no_server_session_waits(service.conninfo)
            assert stored_backups(service.conninfo, tenant.workspace_id) == {}
            assert created_events(service.conninfo, tenant.workspace_id) == []
            created = expect(tenant.create_backup(client, "Nightly"), 201)
        assert stored_backups(service.conninfo, tenant.workspace_id) == {
            "Nightly": UUID(created["id"])
        }
        assert created_events(service.conninfo, tenant.workspace_id) == [UUID(created["id"])]

    def test_cuts_during_concurrent_creates_never_leave_a_partial_write(
        self, serve: ServiceFactory
    ) -> None:
        """Creators keep creating while the proxy cuts every connection again and again:
        each answer is 201 or a bounded 502 (never a 500); every 201 is stored; every
        stored backup has exactly its one audit event and every event its backup."""
        service = serve()
        creators, creates_each = 4, 12
        with service.client(creators) as client:
            tenant = new_tenant(client, service.facade)
            stop_cutting = threading.Event()

            def keep_cutting() -> None:
                while not stop_cutting.wait(0.03):
                    service.proxy.cut()

            cutter = threading.Thread(target=keep_cutting, name="cutter")
            cutter.start()
            try:
                answers = run_creators(client, tenant, creators, creates_each)
            finally:
                stop_cutting.set()
                cutter.join()
            wait_until_ready(client)
        statuses = {answer.response.status_code for answer in answers}
        assert statuses <= {201, 502}, statuses
        for answer in answers:
            if answer.response.status_code == 502:
                assert_unavailable(answer)
        stored = stored_backups(service.conninfo, tenant.workspace_id)
        created = {
            answer.response.json()["name"]: UUID(answer.response.json()["id"])
            for answer in answers
            if answer.response.status_code == 201
        }
        assert created.items() <= stored.items()
        assert sorted(created_events(service.conninfo, tenant.workspace_id)) == sorted(
            stored.values()
        )


def run_creators(
    client: httpx2.Client, tenant: Tenant, creators: int, creates_each: int
) -> list[Timed]:
    """``creators`` threads each creating ``creates_each`` backups one after another."""
    answers: list[Timed] = []
    lock = threading.Lock()

    def create_some(creator: int) -> None:
        for index in range(creates_each):
            name = f"creator {creator} backup {index}"
            answer = timed(partial(tenant.create_backup, client, name))
            with lock:
                answers.append(answer)

    threads = [threading.Thread(target=create_some, args=(n,)) for n in range(creators)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == creators * creates_each
    return answers


class Background:
    """A call running on a thread of its own."""

    def __init__(self, call: Callable[[], httpx2.Response]) -> None:
        self._call = call
        self._answer: Timed | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="request")
        self._thread.start()

    def _run(self) -> None:
        try:
            self._answer = timed(self._call)
        except BaseException as error:  # handed to the test thread by ``result``
            self._error = error

    def result(self) -> Timed:
        """The timed answer, once the call has returned."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._answer is not None
        return self._answer


def in_background(call: Callable[[], httpx2.Response]) -> Background:
    """Start ``call`` on another thread."""
    return Background(call)


@contextmanager
def audit_table_locked(conninfo: str) -> Iterator[None]:
    """Hold a lock that makes every insert into ``audit_events`` wait (reads go on)."""
    with direct(conninfo) as connection, connection.transaction():
        connection.execute("LOCK TABLE audit_events IN SHARE MODE")
        yield


def _waiting_inserts(connection: psycopg.Connection[Any], table: str) -> int:
    row = connection.execute(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND application_name = 'strongroom'"
        " AND wait_event_type = 'Lock' AND query ILIKE %s",
        (f"%INSERT INTO {table}%",),
    ).fetchone()
    assert row is not None
    count: int = row[0]
    return count


def wait_for_insert_waiting_on_lock(conninfo: str, table: str, within: float = 5.0) -> None:
    """Until one of the service's sessions waits for a lock to insert into ``table``."""
    deadline = time.monotonic() + within
    with direct(conninfo) as connection:
        while _waiting_inserts(connection, table) == 0:
            assert time.monotonic() < deadline, f"no insert into {table} started waiting"
            time.sleep(0.01)


def wait_until_no_server_session_waits(conninfo: str, within: float = 5.0) -> None:
    """Until no session of the service is left inside a transaction (the one whose client
    went away has been rolled back by the server)."""
    deadline = time.monotonic() + within
    with direct(conninfo) as connection:
        while True:
            row = connection.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = 'strongroom'"
                " AND xact_start IS NOT NULL"
            ).fetchone()
            assert row is not None
            if row[0] == 0:
                return
            assert time.monotonic() < deadline, "a transaction of the service is still open"
            time.sleep(0.01)
