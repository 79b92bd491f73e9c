"""Outside systems a workspace is provisioned in: billing and object storage."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID


class Billing(Protocol):
    """The billing system's customer records."""

    async def create_customer(self, workspace_id: UUID, name: str) -> str:
        """Create the workspace's customer record and return its id."""
        ...

    async def delete_customer(self, customer_id: str) -> None:
        """Remove a customer record."""
        ...


class StorageNamespaces(Protocol):
    """Per-workspace namespaces in object storage."""

    async def provision_namespace(self, workspace_id: UUID) -> str:
        """Create the workspace's namespace and return its name."""
        ...

    async def remove_namespace(self, namespace: str) -> None:
        """Remove an (empty or locked-free) namespace."""
        ...

    async def ping(self) -> None:
        """Raise ``UpstreamUnavailableError`` when storage does not answer (readiness)."""
        ...
