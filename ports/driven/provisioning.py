"""Outside systems a workspace is provisioned in: billing and object storage."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID


class Billing(Protocol):
    """The billing system's customer records."""

    def create_customer(self, workspace_id: UUID, name: str) -> str:
        """Create the workspace's customer record and return its id."""
        ...

    def delete_customer(self, customer_id: str) -> None:
        """Remove a customer record."""
        ...


class StorageNamespaces(Protocol):
    """Per-workspace namespaces in object storage."""

    def provision_namespace(self, workspace_id: UUID) -> str:
        """Create the workspace's namespace and return its name."""
        ...

    def remove_namespace(self, namespace: str) -> None:
        """Remove an (empty or locked-free) namespace."""
        ...

    def ping(self) -> None:
        """Raise ``UpstreamUnavailableError`` when storage does not answer (readiness)."""
        ...
