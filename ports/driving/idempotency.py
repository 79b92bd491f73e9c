"""Idempotency-Key support for creating operations (contract section 8).

The key is reserved inside the transaction that creates, and the response is stored in
that same transaction, so a key either maps to exactly one committed creation or to
nothing. A concurrent request with the same key waits on the reservation (in SQL, on the
unique index) and then replays the first response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Generic, TypeVar

import attrs

from strongroom.domain.errors import IdempotencyConflictError, InvalidRequestError
from strongroom.domain.principals import Caller
from strongroom.ports.driven.identity import Identity
from strongroom.ports.driven.repositories import IdempotencyKeyTakenError, IdempotencyRecord
from strongroom.ports.driven.unit_of_work import UnitOfWork, UnitOfWorkFactory

T = TypeVar("T")

KEY_LIFETIME = timedelta(hours=24)
MAX_KEY_LENGTH = 255

# Whose keys: an authenticated caller, or a person signing in (not yet a caller).
KeyOwner = Caller | Identity


@attrs.frozen
class IdempotencyKey(Generic[T]):
    """A client's Idempotency-Key for one creating request.

    ``route`` and ``fingerprint`` (a digest of the request body) tell a replay from a reuse;
    ``render`` turns the created object into the response body a replay returns.
    """

    key: str
    route: str
    fingerprint: str
    render: Callable[[T], str]
    status: int = 201

    def __attrs_post_init__(self) -> None:
        if not 1 <= len(self.key) <= MAX_KEY_LENGTH:
            raise InvalidRequestError(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters")


class IdempotentReplayError(Exception):
    """Carries the stored response of the first request with the same key and body."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__("idempotent replay")
        self.status = status
        self.body = body


def _scope(owner: KeyOwner, route: str) -> str:
    """Keys are scoped to their owner and the route: nobody else's key ever collides."""
    if isinstance(owner, Identity):
        who = f"identity:{owner.subject}"
    else:
        who = f"{owner.actor.type}:{owner.actor.id}"
    return f"{who} {route}"


async def replay_if_known(
    uow_factory: UnitOfWorkFactory,
    owner: KeyOwner,
    key: IdempotencyKey[T] | None,
    now: datetime,
) -> None:
    """Raise the replay (or the conflict) if this key completed a request in the last 24 h."""
    if key is None:
        return
    async with uow_factory() as uow:
        record = await uow.idempotency.get(_scope(owner, key.route), key.key)
    _raise_for(record, key, now)


def _raise_for(record: IdempotencyRecord | None, key: IdempotencyKey[T], now: datetime) -> None:
    if record is None or record.status is None or record.body is None:
        return
    if record.created_at < now - KEY_LIFETIME:
        return  # expired: the key is free again, and ``reserve`` replaces the record
    if record.fingerprint != key.fingerprint:
        raise IdempotencyConflictError()
    raise IdempotentReplayError(record.status, record.body)


async def reserve(
    uow: UnitOfWork, owner: KeyOwner, key: IdempotencyKey[T] | None, now: datetime
) -> bool:
    """Reserve the key in ``uow``; False if another committed request holds it."""
    if key is None:
        return True
    record = IdempotencyRecord(_scope(owner, key.route), key.key, key.fingerprint, now)
    try:
        await uow.idempotency.reserve(record, expired_before=now - KEY_LIFETIME)
    except IdempotencyKeyTakenError:
        return False
    return True


async def complete(
    uow: UnitOfWork, owner: KeyOwner, key: IdempotencyKey[T] | None, result: T
) -> None:
    """Store the response of the reserved key in ``uow``."""
    if key is not None:
        await uow.idempotency.complete(
            _scope(owner, key.route), key.key, key.status, key.render(result)
        )


async def run_idempotent(
    uow_factory: UnitOfWorkFactory,
    owner: KeyOwner,
    key: IdempotencyKey[T] | None,
    now: datetime,
    create: Callable[[UnitOfWork], Awaitable[T]],
) -> T:
    """Run ``create`` in one unit of work that also reserves and completes ``key``.

    ``create`` must not commit; this commits once everything is recorded.
    """
    await replay_if_known(uow_factory, owner, key, now)
    async with uow_factory() as uow:
        if await reserve(uow, owner, key, now):
            result = await create(uow)
            await complete(uow, owner, key, result)
            await uow.commit()
            return result
    await replay_if_known(uow_factory, owner, key, now)
    raise IdempotencyConflictError()
