"""PostgreSQL fixtures shared by the suites that need a server (contract, integration).

Import ``pg_server`` into a ``conftest.py``. Each conftest that imports it gets a fixture
of its own, so the server itself is kept once per test process in the pytest config's
stash and stopped when the session ends: a throwaway cluster is started at most once.
With no PostgreSQL to be had the fixture raises and the tests that need it fail (see
``support.postgres``).
"""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from support.postgres import PostgresServer, postgres_server

_SERVER = pytest.StashKey[PostgresServer]()


@pytest.fixture(scope="session")
def pg_server(request: pytest.FixtureRequest) -> PostgresServer:
    """The test session's PostgreSQL server (the same one for every suite)."""
    config = request.config
    server = config.stash.get(_SERVER, None)
    if server is None:
        stack = ExitStack()
        config.add_cleanup(stack.close)
        server = stack.enter_context(postgres_server())
        config.stash[_SERVER] = server
    return server
