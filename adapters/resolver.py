"""Name resolution for outbound connections, checked against the endpoint policy by its
callers (contract 13); free of any HTTP library, so PostgreSQL sources and restore
targets use it without the ``s3`` extra."""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence

# ``(host, port) -> addresses``; tests replace it to play a rebinding name server.
Resolver = Callable[[str, int], Sequence[str]]


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to for a TCP connection, in the system's order."""
    answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(answer[4][0]) for answer in answers))
