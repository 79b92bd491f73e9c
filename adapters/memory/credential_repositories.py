"""In-memory credentials: workers' and API keys', the built-in identity provider's
accounts and device grants."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection
from datetime import datetime
from uuid import UUID

from attrs import evolve

from strongroom.adapters.memory.tables import MemoryRepository, keyset_page, purge, require
from strongroom.domain.accounts import Account, DeviceGrant
from strongroom.domain.errors import NameTakenError
from strongroom.domain.machines import ApiKey, Worker
from strongroom.domain.names import email_key
from strongroom.domain.pagination import Page, PageRequest

_failure_numbers = itertools.count()


class _Credentials(MemoryRepository):
    """Machine credentials: unique ids and token hashes, scoped to their workspace."""

    usage_field: str

    def _add(self, record: ApiKey | Worker) -> None:
        require(record.workspace_id in self._tx.read("workspaces"), "workspace exists")
        taken = any(r.token_hash == record.token_hash for r in self._tx.read(self.table).values())
        require(not taken, f"a unique {self.table} token hash")
        self._insert(record.id, record)

    def _get(self, workspace_id: UUID, record_id: UUID) -> ApiKey | Worker | None:
        found: ApiKey | Worker | None = self._tx.read(self.table).get(record_id)
        return found if found is not None and found.workspace_id == workspace_id else None

    def _find(self, token_hash: str) -> ApiKey | Worker | None:
        return next(
            (r for r in self._tx.read(self.table).values() if r.token_hash == token_hash), None
        )

    async def touch(self, record_id: UUID, at: datetime, stale_before: datetime) -> None:
        found = self._tx.read(self.table).get(record_id)
        if found is None:
            return
        last = getattr(found, self.usage_field)
        if last is None or last < stale_before:
            self._tx.write(self.table)[record_id] = evolve(found, **{self.usage_field: at})

    async def remove(self, workspace_id: UUID, record_id: UUID) -> None:
        if self._get(workspace_id, record_id) is not None:
            del self._tx.write(self.table)[record_id]

    async def count(self, workspace_id: UUID) -> int:
        return sum(1 for r in self._tx.read(self.table).values() if r.workspace_id == workspace_id)


class MemoryWorkerRepository(_Credentials):
    """Workers."""

    table = "workers"
    usage_field = "last_seen_at"

    async def add(self, worker: Worker) -> None:
        self._add(worker)

    async def exists(self, workspace_id: UUID, worker_id: UUID) -> bool:
        return self._get(workspace_id, worker_id) is not None

    async def get(self, workspace_id: UUID, worker_id: UUID) -> Worker | None:
        found = self._get(workspace_id, worker_id)
        return found if isinstance(found, Worker) else None

    async def find(self, token_hash: str) -> Worker | None:
        found = self._find(token_hash)
        return found if isinstance(found, Worker) else None

    async def find_many(self, token_hashes: Collection[str]) -> dict[str, Worker]:
        wanted = set(token_hashes)
        rows = self._tx.read(self.table).values()
        return {w.token_hash: w for w in rows if isinstance(w, Worker) and w.token_hash in wanted}

    async def touch_many(
        self, worker_ids: Collection[UUID], at: datetime, stale_before: datetime
    ) -> None:
        for worker_id in set(worker_ids):
            await self.touch(worker_id, at, stale_before)

    async def update(self, worker: Worker) -> None:
        stored = await self.get(worker.workspace_id, worker.id)
        require(stored is not None, "update of a missing worker")
        others = (r for r in self._tx.read(self.table).values() if r.id != worker.id)
        require(all(r.token_hash != worker.token_hash for r in others), "unique token hash")
        assert stored is not None
        self._tx.write(self.table)[worker.id] = evolve(worker, created_at=stored.created_at)

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Worker]:
        rows = self._tx.read(self.table).values()
        return keyset_page((w for w in rows if w.workspace_id == workspace_id), page)


class MemoryApiKeyRepository(_Credentials):
    """API keys."""

    table = "api_keys"
    usage_field = "last_used_at"

    async def add(self, key: ApiKey) -> None:
        self._add(key)

    async def get(self, workspace_id: UUID, key_id: UUID) -> ApiKey | None:
        found = self._get(workspace_id, key_id)
        return found if isinstance(found, ApiKey) else None

    async def find(self, token_hash: str) -> ApiKey | None:
        found = self._find(token_hash)
        return found if isinstance(found, ApiKey) else None

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[ApiKey]:
        rows = self._tx.read(self.table).values()
        return keyset_page((k for k in rows if k.workspace_id == workspace_id), page)


class MemoryAccountRepository(MemoryRepository):
    """Local accounts; emails are unique case-insensitively."""

    table = "accounts"

    async def add(self, account: Account) -> None:
        if await self.get_by_email(account.email) is not None:
            raise NameTakenError("an account with this email already exists")
        self._insert(account.id, account)

    async def get(self, account_id: UUID) -> Account | None:
        found: Account | None = self._tx.read(self.table).get(account_id)
        return found

    async def get_by_email(self, email: str) -> Account | None:
        wanted = email_key(email)
        return next(
            (a for a in self._tx.read(self.table).values() if email_key(a.email) == wanted), None
        )

    async def record_failed_login(self, email: str, address: str, at: datetime) -> None:
        failures = self._tx.write("failed_logins")
        # A counter, not len(failures): after a purge len() repeats, and a second failure of
        # the same email and address at the same instant would overwrite the first.
        failures[(email_key(email), address, at, next(_failure_numbers))] = at

    async def recent_failed_logins(
        self, address: str, since: datetime, limit: int, *, email: str | None = None
    ) -> list[datetime]:
        wanted = None if email is None else email_key(email)
        times = [
            at
            for (who, where, at, _n) in self._tx.read("failed_logins")
            if where == address and at >= since and (wanted is None or who == wanted)
        ]
        return sorted(times, reverse=True)[:limit]

    async def purge_failed_logins(self, before: datetime) -> int:
        return purge(self._tx.write("failed_logins"), lambda at: at < before)


class MemoryDeviceGrantRepository(MemoryRepository):
    """Device-code grants."""

    table = "device_grants"

    def _find(self, match: Callable[[DeviceGrant], bool]) -> DeviceGrant | None:
        found = [g for g in self._tx.read(self.table).values() if match(g)]
        # Newest first by (created_at, id), as the SQL adapters order them.
        return max(found, key=lambda g: (g.created_at, g.id)) if found else None

    async def add(self, grant: DeviceGrant) -> None:
        self._insert(grant.id, grant)

    async def get_by_device_code(
        self, device_code_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        return self._find(lambda g: g.device_code_hash == device_code_hash)

    async def get_by_user_code(
        self, user_code: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        return self._find(lambda g: g.user_code == user_code)

    async def get_by_access_token(
        self, access_token_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        return self._find(lambda g: g.access_token_hash == access_token_hash)

    async def update(self, grant: DeviceGrant) -> None:
        self._replace(grant.id, grant)
