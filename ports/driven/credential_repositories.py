"""Repository ports of credentials: workers' and API keys' (machine callers), and the
built-in identity provider's accounts and device grants; errors as in ``repositories``."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol
from uuid import UUID

from strongroom.domain.accounts import Account, DeviceGrant
from strongroom.domain.machines import ApiKey, Worker
from strongroom.domain.pagination import Page, PageRequest


class WorkerRepository(Protocol):
    """Machine executors of local backups."""

    async def add(self, worker: Worker) -> None:
        """Store a new worker."""
        ...

    async def exists(self, workspace_id: UUID, worker_id: UUID) -> bool:
        """Whether this workspace has this worker."""
        ...

    async def get(self, workspace_id: UUID, worker_id: UUID) -> Worker | None:
        """A worker of this workspace."""
        ...

    async def find(self, token_hash: str) -> Worker | None:
        """The worker whose current credential has this hash."""
        ...

    async def find_many(self, token_hashes: Collection[str]) -> dict[str, Worker]:
        """The workers whose current credentials have these hashes, by hash (a hash of no
        worker is left out): the credentials of many concurrent requests in one look."""
        ...

    async def update(self, worker: Worker) -> None:
        """Store a changed worker (a rotated credential)."""
        ...

    async def touch(self, worker_id: UUID, at: datetime, stale_before: datetime) -> None:
        """Set ``last_seen_at`` to ``at`` unless it is already at or after ``stale_before``."""
        ...

    async def touch_many(
        self, worker_ids: Collection[UUID], at: datetime, stale_before: datetime
    ) -> None:
        """``touch`` of each of ``worker_ids``, in one write."""
        ...

    async def remove(self, workspace_id: UUID, worker_id: UUID) -> None:
        """Delete a worker of this workspace (nothing happens when there is none)."""
        ...

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Worker]:
        """A workspace's workers, newest first."""
        ...

    async def count(self, workspace_id: UUID) -> int:
        """How many workers a workspace has."""
        ...


class ApiKeyRepository(Protocol):
    """API keys, always looked up inside one workspace (or by their token's hash)."""

    async def add(self, key: ApiKey) -> None:
        """Store a new key."""
        ...

    async def get(self, workspace_id: UUID, key_id: UUID) -> ApiKey | None:
        """A key of this workspace."""
        ...

    async def find(self, token_hash: str) -> ApiKey | None:
        """The key whose token has this hash."""
        ...

    async def touch(self, key_id: UUID, at: datetime, stale_before: datetime) -> None:
        """Set ``last_used_at`` to ``at`` unless it is already at or after ``stale_before``."""
        ...

    async def remove(self, workspace_id: UUID, key_id: UUID) -> None:
        """Delete a key of this workspace (nothing happens when there is none)."""
        ...

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[ApiKey]:
        """A workspace's keys, newest first."""
        ...

    async def count(self, workspace_id: UUID) -> int:
        """How many keys a workspace has."""
        ...


class AccountRepository(Protocol):
    """Local accounts of the built-in identity provider."""

    async def add(self, account: Account) -> None:
        """Store an account; ``NameTakenError`` if the email is taken (case-insensitively)."""
        ...

    async def get(self, account_id: UUID) -> Account | None:
        """An account by id."""
        ...

    async def get_by_email(self, email: str) -> Account | None:
        """An account by email, case-insensitively."""
        ...

    async def record_failed_login(self, email: str, address: str, at: datetime) -> None:
        """Remember a failed approval for ``email`` from the client ``address``."""
        ...

    async def recent_failed_logins(
        self, address: str, since: datetime, limit: int, *, email: str | None = None
    ) -> list[datetime]:
        """When the latest ``limit`` failed approvals from ``address`` (for ``email`` only,
        case-insensitively, when given) since ``since`` happened, newest first."""
        ...

    async def purge_failed_logins(self, before: datetime) -> int:
        """Forget the failed approvals that happened before ``before``; how many went."""
        ...


class DeviceGrantRepository(Protocol):
    """Device-code grants of the built-in identity provider."""

    async def add(self, grant: DeviceGrant) -> None:
        """Store a new grant."""
        ...

    async def get_by_device_code(
        self, device_code_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """A grant by the hash of its device code; ``for_update`` locks it until the unit
        of work ends (the grant is about to change: two exchanges of one code must not both
        get a token)."""
        ...

    async def get_by_user_code(
        self, user_code: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """The newest grant with this user code; ``for_update`` locks it until the unit of
        work ends (failed approvals are counted exactly under concurrent attempts)."""
        ...

    async def get_by_access_token(
        self, access_token_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """The grant that issued this access token; ``for_update`` locks it until the unit
        of work ends (the token is about to be spent: two exchanges of one token must not
        both open a session)."""
        ...

    async def update(self, grant: DeviceGrant) -> None:
        """Store a changed grant."""
        ...
