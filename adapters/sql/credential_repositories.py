"""SQL credentials: workers' and API keys', the built-in identity provider's accounts and
device grants."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from uuid import UUID

from strongroom.adapters.sql import credential_rows
from strongroom.adapters.sql.catalog import Q
from strongroom.adapters.sql.rows import Params
from strongroom.adapters.sql.statements import SqlRepository, count_of, page_params, require
from strongroom.domain.accounts import Account, DeviceGrant
from strongroom.domain.machines import ApiKey, Worker
from strongroom.domain.names import email_key
from strongroom.domain.pagination import Page, PageRequest, page_of


class SqlWorkerRepository(SqlRepository):
    """Workers; token hashes are unique (``workers_token_hash_unique``)."""

    def _key(self, workspace_id: UUID, worker_id: UUID) -> Params:
        return {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(worker_id)}

    async def add(self, worker: Worker) -> None:
        """Store a new worker."""
        await self._db.execute(Q.WORKER_INSERT, credential_rows.worker_params(worker, self._codec))

    async def exists(self, workspace_id: UUID, worker_id: UUID) -> bool:
        """Whether this workspace has this worker."""
        return (
            await self._db.fetch_one(Q.WORKER_EXISTS, self._key(workspace_id, worker_id))
            is not None
        )

    async def get(self, workspace_id: UUID, worker_id: UUID) -> Worker | None:
        """A worker of this workspace."""
        row = await self._db.fetch_one(Q.WORKER_GET, self._key(workspace_id, worker_id))
        return None if row is None else credential_rows.worker_from_row(row, self._codec)

    async def find(self, token_hash: str) -> Worker | None:
        """The worker whose current credential has this hash."""
        row = await self._db.fetch_one(Q.WORKER_FIND, {"token_hash": token_hash})
        return None if row is None else credential_rows.worker_from_row(row, self._codec)

    async def find_many(self, token_hashes: Collection[str]) -> dict[str, Worker]:
        """The workers of these hashes, in one statement whatever their number."""
        wanted = sorted(set(token_hashes))
        if not wanted:
            return {}
        params = {"token_hashes": self._codec.text_list(wanted)}
        found = await self._db.fetch_all(Q.WORKER_FIND_MANY, params)
        workers = (credential_rows.worker_from_row(row, self._codec) for row in found)
        return {worker.token_hash: worker for worker in workers}

    async def update(self, worker: Worker) -> None:
        """Store a changed worker (its creation time never changes)."""
        changed = await self._db.execute(
            Q.WORKER_UPDATE, credential_rows.worker_params(worker, self._codec)
        )
        require(changed == 1, "update of a missing worker")

    async def touch(self, worker_id: UUID, at: datetime, stale_before: datetime) -> None:
        """Record that the worker was seen, unless it was seen since ``stale_before``."""
        await self._db.execute(
            Q.WORKER_TOUCH,
            {
                "id": self._codec.uuid(worker_id),
                "at": self._codec.timestamp(at),
                "stale_before": self._codec.timestamp(stale_before),
            },
        )

    async def touch_many(
        self, worker_ids: Collection[UUID], at: datetime, stale_before: datetime
    ) -> None:
        """``touch`` of every one of ``worker_ids``, in one statement."""
        if not worker_ids:
            return
        ids = self._codec.text_list(sorted({str(worker_id) for worker_id in worker_ids}))
        await self._db.execute(
            Q.WORKER_TOUCH_MANY,
            {
                "ids": ids,
                "at": self._codec.timestamp(at),
                "stale_before": self._codec.timestamp(stale_before),
            },
        )

    async def remove(self, workspace_id: UUID, worker_id: UUID) -> None:
        """Delete a worker of this workspace."""
        await self._db.execute(Q.WORKER_DELETE, self._key(workspace_id, worker_id))

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[Worker]:
        """A workspace's workers, newest first."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        found = await self._db.fetch_all(
            Q.WORKER_LIST, params, filters=[Q.FILTER_WORKER_AFTER] if after else []
        )
        return page_of([credential_rows.worker_from_row(row, self._codec) for row in found], page)

    async def count(self, workspace_id: UUID) -> int:
        """How many workers a workspace has."""
        return count_of(
            await self._db.fetch_one(
                Q.WORKER_COUNT, {"workspace_id": self._codec.uuid(workspace_id)}
            )
        )


class SqlApiKeyRepository(SqlRepository):
    """API keys; token hashes are unique (``api_keys_token_hash_unique``)."""

    def _key(self, workspace_id: UUID, key_id: UUID) -> Params:
        return {"workspace_id": self._codec.uuid(workspace_id), "id": self._codec.uuid(key_id)}

    async def add(self, key: ApiKey) -> None:
        """Store a new key."""
        await self._db.execute(Q.API_KEY_INSERT, credential_rows.api_key_params(key, self._codec))

    async def get(self, workspace_id: UUID, key_id: UUID) -> ApiKey | None:
        """A key of this workspace."""
        row = await self._db.fetch_one(Q.API_KEY_GET, self._key(workspace_id, key_id))
        return None if row is None else credential_rows.api_key_from_row(row, self._codec)

    async def find(self, token_hash: str) -> ApiKey | None:
        """The key whose token has this hash."""
        row = await self._db.fetch_one(Q.API_KEY_FIND, {"token_hash": token_hash})
        return None if row is None else credential_rows.api_key_from_row(row, self._codec)

    async def touch(self, key_id: UUID, at: datetime, stale_before: datetime) -> None:
        """Record that the key was used, unless it was used since ``stale_before``."""
        await self._db.execute(
            Q.API_KEY_TOUCH,
            {
                "id": self._codec.uuid(key_id),
                "at": self._codec.timestamp(at),
                "stale_before": self._codec.timestamp(stale_before),
            },
        )

    async def remove(self, workspace_id: UUID, key_id: UUID) -> None:
        """Delete a key of this workspace."""
        await self._db.execute(Q.API_KEY_DELETE, self._key(workspace_id, key_id))

    async def list(self, workspace_id: UUID, page: PageRequest) -> Page[ApiKey]:
        """A workspace's keys, newest first."""
        params, after = page_params(page, self._codec)
        params["workspace_id"] = self._codec.uuid(workspace_id)
        found = await self._db.fetch_all(
            Q.API_KEY_LIST, params, filters=[Q.FILTER_API_KEY_AFTER] if after else []
        )
        return page_of([credential_rows.api_key_from_row(row, self._codec) for row in found], page)

    async def count(self, workspace_id: UUID) -> int:
        """How many keys a workspace has."""
        return count_of(
            await self._db.fetch_one(
                Q.API_KEY_COUNT, {"workspace_id": self._codec.uuid(workspace_id)}
            )
        )


class SqlAccountRepository(SqlRepository):
    """Local accounts; emails are unique case-insensitively (``accounts_email_unique``)."""

    async def add(self, account: Account) -> None:
        """Store an account; ``NameTakenError`` if the email is taken."""
        await self._db.execute(
            Q.ACCOUNT_INSERT, credential_rows.account_params(account, self._codec)
        )

    async def get(self, account_id: UUID) -> Account | None:
        """An account by id."""
        row = await self._db.fetch_one(Q.ACCOUNT_GET, {"id": self._codec.uuid(account_id)})
        return None if row is None else credential_rows.account_from_row(row, self._codec)

    async def get_by_email(self, email: str) -> Account | None:
        """An account by email, case-insensitively."""
        row = await self._db.fetch_one(Q.ACCOUNT_GET_BY_EMAIL, {"email_key": email_key(email)})
        return None if row is None else credential_rows.account_from_row(row, self._codec)

    async def record_failed_login(self, email: str, address: str, at: datetime) -> None:
        """Remember a failed approval for ``email`` from the client ``address``."""
        await self._db.execute(
            Q.FAILED_LOGIN_INSERT,
            {
                "email_key": email_key(email),
                "client_address": address,
                "failed_at": self._codec.timestamp(at),
            },
        )

    async def recent_failed_logins(
        self, address: str, since: datetime, limit: int, *, email: str | None = None
    ) -> list[datetime]:
        """The latest ``limit`` failed approvals from ``address`` (and ``email``), newest
        first."""
        parameters = {
            "client_address": address,
            "since": self._codec.timestamp(since),
            "limit": limit,
        }
        if email is None:
            found = await self._db.fetch_all(Q.FAILED_LOGIN_RECENT_BY_ADDRESS, parameters)
        else:
            parameters["email_key"] = email_key(email)
            found = await self._db.fetch_all(Q.FAILED_LOGIN_RECENT, parameters)
        return [self._codec.read_timestamp(row["failed_at"]) for row in found]

    async def purge_failed_logins(self, before: datetime) -> int:
        """Forget the failed approvals that happened before ``before``; how many went."""
        return await self._db.execute(
            Q.FAILED_LOGIN_PURGE, {"before": self._codec.timestamp(before)}
        )


class SqlDeviceGrantRepository(SqlRepository):
    """Device-code grants; each look-up gives the newest matching grant."""

    async def _find(self, query: Q, column: str, value: str, lock: bool) -> DeviceGrant | None:
        row = await self._db.fetch_one(query, {column: value}, writes=lock)
        return None if row is None else credential_rows.device_grant_from_row(row, self._codec)

    async def add(self, grant: DeviceGrant) -> None:
        """Store a new grant."""
        await self._db.execute(
            Q.DEVICE_GRANT_INSERT, credential_rows.device_grant_params(grant, self._codec)
        )

    async def get_by_device_code(
        self, device_code_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """A grant by the hash of its device code (``for_update``: locked until the unit of
        work ends)."""
        return await self._find(
            Q.DEVICE_GRANT_BY_DEVICE_CODE, "device_code_hash", device_code_hash, for_update
        )

    async def get_by_user_code(
        self, user_code: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """The newest grant with this user code (``for_update``: locked until the unit of
        work ends)."""
        return await self._find(Q.DEVICE_GRANT_BY_USER_CODE, "user_code", user_code, for_update)

    async def get_by_access_token(
        self, access_token_hash: str, *, for_update: bool = False
    ) -> DeviceGrant | None:
        """The grant that issued this access token (``for_update``: locked until the unit
        of work ends)."""
        return await self._find(
            Q.DEVICE_GRANT_BY_ACCESS_TOKEN, "access_token_hash", access_token_hash, for_update
        )

    async def update(self, grant: DeviceGrant) -> None:
        """Store a changed grant."""
        changed = await self._db.execute(
            Q.DEVICE_GRANT_UPDATE, credential_rows.device_grant_params(grant, self._codec)
        )
        require(changed == 1, "update of a missing device_grants row")
