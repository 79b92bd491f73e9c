"""In-memory adapters of the outside systems: billing, storage namespaces, mail, and a
controllable clock. Thread-safe; they keep what they were asked to keep, so tests can
check that nothing was left behind. The ports' methods are coroutines that never wait (a
lock held for a dict update does not block the event loop); the clock stays synchronous."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from uuid import UUID

import attrs


class MemoryBilling:
    """Customer records kept in a dict (the embedded default has no billing provider)."""

    def __init__(self) -> None:
        self.customers: dict[str, UUID] = {}
        self._lock = threading.Lock()

    async def create_customer(self, workspace_id: UUID, name: str) -> str:
        """Record a customer for ``workspace_id``."""
        with self._lock:
            customer_id = f"cus_{workspace_id.hex}"
            self.customers[customer_id] = workspace_id
            return customer_id

    async def delete_customer(self, customer_id: str) -> None:
        """Forget a customer."""
        with self._lock:
            self.customers.pop(customer_id, None)


class MemoryNamespaces:
    """Storage namespaces kept in a set."""

    def __init__(self) -> None:
        self.namespaces: set[str] = set()
        self._lock = threading.Lock()

    async def provision_namespace(self, workspace_id: UUID) -> str:
        """Create ``ws-<id>``."""
        with self._lock:
            namespace = f"ws-{workspace_id.hex}"
            self.namespaces.add(namespace)
            return namespace

    async def remove_namespace(self, namespace: str) -> None:
        """Drop a namespace."""
        with self._lock:
            self.namespaces.discard(namespace)

    async def ping(self) -> None:
        """Always answers."""


@attrs.frozen
class Message:
    """One message the mailer was asked to send."""

    to: str
    subject: str
    body: str


class OutboxMailer:
    """Keeps every message in ``outbox`` (for tests and embedders)."""

    def __init__(self) -> None:
        self.outbox: list[Message] = []
        self._lock = threading.Lock()

    async def send(self, to: str, subject: str, body: str) -> None:
        """Append the message to the outbox."""
        with self._lock:
            self.outbox.append(Message(to, subject, body))


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The clock's current instant."""
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> None:
        """Move the clock forward."""
        with self._lock:
            self._now += delta
