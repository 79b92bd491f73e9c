"""Idempotency-Key support for creating operations (contract section 8).

The key is reserved inside the transaction that creates, and the use case's result is
stored in that same transaction, so a key either maps to exactly one committed creation or
to nothing. A concurrent request with the same key waits on the reservation (in SQL, on the
unique index) and then gets the first result back. The result is kept in the core's own
form (``snapshots``), never as a driving adapter's rendering: a replay returns the same
domain object, and the adapter presents it as it presented the first answer.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import attrs

import strongroom.ports.driving.snapshots as snapshots
from strongroom.domain.errors import IdempotencyConflictError, InvalidRequestError
from strongroom.domain.principals import Caller
from strongroom.ports.driven.identity import Identity
from strongroom.ports.driven.repositories import IdempotencyKeyTakenError, IdempotencyRecord
from strongroom.ports.driven.secrets import SecretBox
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.dependencies import Dependencies

T = TypeVar("T")

KEY_LIFETIME = timedelta(hours=24)
MAX_KEY_LENGTH = 255
_SEALED = "sealed_token"

# Whose keys: an authenticated caller, or a person signing in (not yet a caller).
KeyOwner = Caller | Identity


@attrs.frozen
class IdempotencyKey:
    """A client's Idempotency-Key for one creating request.

    ``route`` and ``fingerprint`` (a digest of the request) tell a replay from a reuse.
    """

    key: str
    route: str
    fingerprint: str

    def __attrs_post_init__(self) -> None:
        if not 1 <= len(self.key) <= MAX_KEY_LENGTH:
            raise InvalidRequestError(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters")


@attrs.frozen
class ResultForm(Generic[T]):
    """How a use case's result is kept for replays.

    ``sealed`` names the field holding a credential's token: it is stored sealed with the
    secret key, never in clear, and a replay whose seal no longer opens (the secret key
    was replaced) gets ``None`` there. ``withheld`` names fields that are not kept at all
    (a secret that must not outlive its own record, such as a restore's sealed target
    credentials); a replay gets their defaults.
    """

    cls: type[T]
    sealed: str | None = None
    withheld: tuple[str, ...] = ()

    def dump(self, result: T, box: SecretBox) -> str:
        """The stored text of ``result``."""
        data = snapshots.snapshot(result)
        for name in self.withheld:
            data.pop(name)
        if self.sealed is not None:
            token = data.pop(self.sealed)
            data[_SEALED] = base64.b64encode(box.seal({"token": token})).decode()
        return snapshots.dumps(data)

    def load(self, text: str, box: SecretBox) -> T:
        """The result ``dump`` stored."""
        data: dict[str, Any] = snapshots.loads(text)
        if self.sealed is not None:
            data[self.sealed] = _opened(data.pop(_SEALED), box)
        return snapshots.restore(data, self.cls)


def _opened(sealed: str, box: SecretBox) -> str | None:
    try:
        return box.open(base64.b64decode(sealed))["token"]
    except Exception:
        return None  # sealed under another secret key: shown no more


def _scope(owner: KeyOwner, route: str) -> str:
    """Keys are scoped to their owner and the route: nobody else's key ever collides."""
    if isinstance(owner, Identity):
        who = f"identity:{owner.subject}"
    else:
        who = f"{owner.actor.type}:{owner.actor.id}"
    return f"{who} {route}"


async def replay_if_known(
    deps: Dependencies,
    owner: KeyOwner,
    key: IdempotencyKey | None,
    now: datetime,
    form: ResultForm[T],
) -> T | None:
    """The first result if this key completed a request in the last 24 h (the conflict if
    that request was a different one); None if the key is free."""
    if key is None:
        return None
    async with deps.uow() as uow:
        record = await uow.idempotency.get(_scope(owner, key.route), key.key)
    if record is None or record.body is None:
        return None
    if record.created_at < now - KEY_LIFETIME:
        return None  # expired: the key is free again, and ``reserve`` replaces the record
    if record.fingerprint != key.fingerprint:
        raise IdempotencyConflictError()
    return form.load(record.body, deps.secrets)


async def _reserve(uow: UnitOfWork, owner: KeyOwner, key: IdempotencyKey, now: datetime) -> bool:
    """Reserve the key in ``uow``; False if another committed request holds it."""
    record = IdempotencyRecord(_scope(owner, key.route), key.key, key.fingerprint, now)
    try:
        await uow.idempotency.reserve(record, expired_before=now - KEY_LIFETIME)
    except IdempotencyKeyTakenError:
        return False
    return True


async def run_idempotent(
    deps: Dependencies,
    owner: KeyOwner,
    key: IdempotencyKey | None,
    now: datetime,
    create: Callable[[UnitOfWork], Awaitable[T]],
    form: ResultForm[T],
) -> T:
    """Run ``create`` in one unit of work that also reserves ``key`` and keeps the result,
    or return the result of the first request with this key and request.

    ``create`` must not commit; this commits once everything is recorded.
    """
    if (first := await replay_if_known(deps, owner, key, now, form)) is not None:
        return first
    async with deps.uow() as uow:
        if key is None or await _reserve(uow, owner, key, now):
            result = await create(uow)
            if key is not None:
                stored = form.dump(result, deps.secrets)
                await uow.idempotency.complete(_scope(owner, key.route), key.key, stored)
            await uow.commit()
            return result
    if (first := await replay_if_known(deps, owner, key, now, form)) is not None:
        return first
    raise IdempotencyConflictError()


async def remember(
    deps: Dependencies,
    owner: KeyOwner,
    key: IdempotencyKey | None,
    now: datetime,
    result: T,
    form: ResultForm[T],
) -> None:
    """Keep ``result`` as the answer to ``key`` of ``owner`` too (a second owner of one
    request: ``replay_if_known`` then finds it under either); nothing if the key is taken."""
    if key is None:
        return
    async with deps.uow() as uow:
        if await _reserve(uow, owner, key, now):
            await uow.idempotency.complete(
                _scope(owner, key.route), key.key, form.dump(result, deps.secrets)
            )
            await uow.commit()
