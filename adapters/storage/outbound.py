"""urllib3 connections that follow the outbound policy (contract 13,
``strongroom.adapters.outbound``).

A PATCH refuses an endpoint naming a disallowed literal address, but a name can resolve to
anything, and to something else on the next look-up (DNS rebinding). So every connection
resolves the name itself within the policy's budget, checks every address it gets and
connects only to a checked one: a name with any disallowed address is refused before a
packet leaves, exactly as an unreachable host is (urllib3's ``NewConnectionError``). TLS
still verifies the certificate against the name.
"""

from __future__ import annotations

import socket
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError

from strongroom.adapters.outbound.policy import Outbound, UnreachableError, outbound_for
from strongroom.adapters.resolver import Resolver
from strongroom.domain.endpoints import EndpointPolicy


class _Guard:
    """Resolve, check every address, connect to a checked one (mixed into urllib3's
    connection classes; ``outbound`` is set by ``guarded_pool_manager``)."""

    outbound: Outbound

    def _guarded_connection(self, connection: HTTPConnection) -> socket.socket:
        try:
            addresses = self.outbound.addresses(connection._dns_host, connection.port or 80)
        except UnreachableError:
            raise NewConnectionError(connection, "Failed to establish a new connection") from None
        failure: Exception | None = None
        name = connection._dns_host
        for address in addresses:
            # The parent's ``_new_conn`` connects to ``_dns_host``: give it the checked
            # address (a literal: no second look-up), then the name back.
            connection._dns_host = address
            try:
                sock: socket.socket = HTTPConnection._new_conn(connection)
                return sock
            except NewConnectionError as error:
                failure = error
            finally:
                connection._dns_host = name
        assert failure is not None
        raise failure


class _GuardedHTTPConnection(_Guard, HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return self._guarded_connection(self)


class _GuardedHTTPSConnection(_Guard, HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        return self._guarded_connection(self)


def guarded_pool_manager(
    policy: EndpointPolicy | Outbound, resolve: Resolver | None = None, **options: Any
) -> urllib3.PoolManager:
    """A ``PoolManager`` (``options`` as urllib3 takes them) whose every connection goes
    only to addresses ``policy`` allows, checked after each resolution."""
    bound: dict[str, Any] = {"outbound": outbound_for(policy, resolve)}
    http_connection = type("PolicyHTTPConnection", (_GuardedHTTPConnection,), bound)
    https_connection = type("PolicyHTTPSConnection", (_GuardedHTTPSConnection,), bound)
    http_pool = type("PolicyHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": http_connection})
    https_pool = type(
        "PolicyHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": https_connection}
    )
    manager = urllib3.PoolManager(**options)
    manager.pool_classes_by_scheme = {"http": http_pool, "https": https_pool}
    return manager
