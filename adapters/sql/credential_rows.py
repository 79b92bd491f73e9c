"""Credentials to query parameters and back (see ``rows``): workers, API keys, the
built-in identity provider's accounts and device grants."""

from __future__ import annotations

from strongroom.adapters.sql.rows import (
    Codec,
    Params,
    Row,
    opt_timestamp,
    opt_uuid,
    read_opt_timestamp,
    read_opt_uuid,
    read_permissions,
)
from strongroom.domain.accounts import Account, DeviceGrant, GrantState
from strongroom.domain.machines import ApiKey, Worker, in_catalog_order
from strongroom.domain.names import email_key


def worker_params(worker: Worker, codec: Codec) -> Params:
    """The columns of a worker."""
    return {
        "id": codec.uuid(worker.id),
        "workspace_id": codec.uuid(worker.workspace_id),
        "name": worker.name,
        "token_hash": worker.token_hash,
        "created_at": codec.timestamp(worker.created_at),
        "last_seen_at": opt_timestamp(codec, worker.last_seen_at),
    }


def worker_from_row(row: Row, codec: Codec) -> Worker:
    """A worker from its columns."""
    return Worker(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        name=row["name"],
        token_hash=row["token_hash"],
        created_at=codec.read_timestamp(row["created_at"]),
        last_seen_at=read_opt_timestamp(codec, row["last_seen_at"]),
    )


def api_key_params(key: ApiKey, codec: Codec) -> Params:
    """The columns of an API key (permissions in catalog order)."""
    return {
        "id": codec.uuid(key.id),
        "workspace_id": codec.uuid(key.workspace_id),
        "name": key.name,
        "permissions": codec.text_list([p.value for p in in_catalog_order(key.permissions)]),
        "token_hash": key.token_hash,
        "created_at": codec.timestamp(key.created_at),
        "expires_at": opt_timestamp(codec, key.expires_at),
        "last_used_at": opt_timestamp(codec, key.last_used_at),
    }


def api_key_from_row(row: Row, codec: Codec) -> ApiKey:
    """An API key from its columns."""
    return ApiKey(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        name=row["name"],
        permissions=read_permissions(row["permissions"], codec),
        token_hash=row["token_hash"],
        created_at=codec.read_timestamp(row["created_at"]),
        expires_at=read_opt_timestamp(codec, row["expires_at"]),
        last_used_at=read_opt_timestamp(codec, row["last_used_at"]),
    )


def account_params(account: Account, codec: Codec) -> Params:
    """The columns of a local account."""
    return {
        "id": codec.uuid(account.id),
        "email": account.email,
        "email_key": email_key(account.email),
        "name": account.name,
        "password_hash": account.password_hash,
        "created_at": codec.timestamp(account.created_at),
    }


def account_from_row(row: Row, codec: Codec) -> Account:
    """A local account from its columns."""
    return Account(
        id=codec.read_uuid(row["id"]),
        email=row["email"],
        name=row["name"],
        password_hash=row["password_hash"],
        created_at=codec.read_timestamp(row["created_at"]),
    )


def device_grant_params(grant: DeviceGrant, codec: Codec) -> Params:
    """The columns of a device-code grant."""
    return {
        "id": codec.uuid(grant.id),
        "device_code_hash": grant.device_code_hash,
        "user_code": grant.user_code,
        "client_id": grant.client_id,
        "created_at": codec.timestamp(grant.created_at),
        "expires_at": codec.timestamp(grant.expires_at),
        "poll_interval": grant.interval,
        "state": grant.state.value,
        "account_id": opt_uuid(codec, grant.account_id),
        "failed_approvals": grant.failed_approvals,
        "last_polled_at": opt_timestamp(codec, grant.last_polled_at),
        "access_token_hash": grant.access_token_hash,
        "access_expires_at": opt_timestamp(codec, grant.access_expires_at),
    }


def device_grant_from_row(row: Row, codec: Codec) -> DeviceGrant:
    """A device-code grant from its columns."""
    return DeviceGrant(
        id=codec.read_uuid(row["id"]),
        device_code_hash=row["device_code_hash"],
        user_code=row["user_code"],
        client_id=row["client_id"],
        created_at=codec.read_timestamp(row["created_at"]),
        expires_at=codec.read_timestamp(row["expires_at"]),
        interval=row["poll_interval"],
        state=GrantState(row["state"]),
        account_id=read_opt_uuid(codec, row["account_id"]),
        failed_approvals=row["failed_approvals"],
        last_polled_at=read_opt_timestamp(codec, row["last_polled_at"]),
        access_token_hash=row["access_token_hash"],
        access_expires_at=read_opt_timestamp(codec, row["access_expires_at"]),
    )
