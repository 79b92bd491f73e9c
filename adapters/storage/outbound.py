"""Connections to customer endpoints that honour the outbound endpoint policy (contract 13).

A PATCH refuses an endpoint naming a disallowed literal address, but a name can resolve to
anything, and to something else on the next look-up (DNS rebinding). So every connection
resolves the name itself, checks every address it gets with ``EndpointPolicy.allows`` and
connects only to a checked address: a name with any disallowed address is refused before a
packet leaves, exactly as an unreachable host is (urllib3's ``NewConnectionError``, retried
and reported like a refused port). TLS still verifies the certificate against the name.
"""

from __future__ import annotations

import socket
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NameResolutionError, NewConnectionError

from strongroom.adapters.resolver import Resolver, system_resolver
from strongroom.domain.endpoints import EndpointPolicy


class _Guard:
    """Resolve, check every address, connect to a checked one (mixed into urllib3's
    connection classes; ``policy`` and ``resolve`` are set by ``guarded_pool_manager``)."""

    policy: EndpointPolicy
    resolve: Resolver

    def _guarded_connection(self, connection: HTTPConnection) -> socket.socket:
        try:
            addresses = type(self).resolve(connection._dns_host, connection.port or 80)
        except socket.gaierror as error:
            raise NameResolutionError(connection.host, connection, error) from error
        if not addresses or not all(self.policy.allows(address) for address in addresses):
            raise NewConnectionError(connection, "Failed to establish a new connection")
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
    policy: EndpointPolicy, resolve: Resolver | None = None, **options: Any
) -> urllib3.PoolManager:
    """A ``PoolManager`` (``options`` as urllib3 takes them) whose every connection goes
    only to addresses ``policy`` allows, checked after each resolution."""
    bound: dict[str, Any] = {
        "policy": policy,
        "resolve": staticmethod(resolve or system_resolver),
    }
    http_connection = type("PolicyHTTPConnection", (_GuardedHTTPConnection,), bound)
    https_connection = type("PolicyHTTPSConnection", (_GuardedHTTPSConnection,), bound)
    http_pool = type("PolicyHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": http_connection})
    https_pool = type(
        "PolicyHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": https_connection}
    )
    manager = urllib3.PoolManager(**options)
    manager.pool_classes_by_scheme = {"http": http_pool, "https": https_pool}
    return manager
