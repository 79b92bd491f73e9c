"""A complete in-memory Strongroom for tests, and helpers to sign people in.

Everything is real: the built-in identity provider, the in-memory unit of work and the
facade; only argon2 is tuned down so that tests sign people in quickly.
"""

from __future__ import annotations

from functools import partial
from typing import Any
from uuid import UUID

from argon2 import PasswordHasher
from starlette.testclient import TestClient

from strongroom.adapters.http.app import app_for
from strongroom.adapters.identity.builtin import CLIENT_ID, BuiltinIdentityProvider
from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.adapters.runtime.blocking import blocking, blocking_call, unwrapped
from strongroom.adapters.system import SecureIds, SystemClock
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driven.clock import Clock
from strongroom.ports.driving import Strongroom

PASSWORD = "correct horse battery staple"
FAST_HASHER = PasswordHasher(time_cost=1, memory_cost=64, parallelism=1)


def memory_facade(clock: Clock | None = None, **overrides: Any) -> Strongroom:
    """The async facade on a fresh in-memory store (or the given ``uow``) with the built-in
    identity provider (``overrides`` replace any adapter, as ``bootstrap`` takes them)."""
    uow = overrides.pop("uow", None) or partial(MemoryUnitOfWork, MemoryStore())
    clock = unwrapped(clock) or SystemClock()
    ids = SecureIds()
    identity = BuiltinIdentityProvider(uow=uow, clock=clock, ids=ids, hasher=FAST_HASHER)
    settings: dict[str, Any] = {"uow": uow, "clock": clock, "ids": ids, "identity": identity}
    settings.update({name: unwrapped(value) for name, value in overrides.items()})
    return bootstrap(**settings)


def make_facade(clock: Clock | None = None, **overrides: Any) -> Any:
    """A blocking view of ``memory_facade``: tests call its use cases as plain functions,
    and ``app_for`` serves the async facade behind it."""
    return blocking(memory_facade(clock, **overrides))


def idp_of(facade: Strongroom) -> BuiltinIdentityProvider:
    """The facade's built-in identity provider."""
    identity = facade.deps.identity
    assert isinstance(identity, BuiltinIdentityProvider)
    return identity


async def idp_token(facade: Strongroom, email: str, name: str | None = None) -> str:
    """Register ``email`` (once) and run the device flow to an identity-provider token."""
    idp = idp_of(facade)
    if await idp.account_id(email) is None:
        await idp.add_account(email, PASSWORD, name or email.partition("@")[0])
    authorization = await idp.start_device_authorization(CLIENT_ID, "http://testserver")
    await idp.decide(authorization.user_code, email, PASSWORD, approve=True)
    return (await idp.exchange_device_code(authorization.device_code, CLIENT_ID)).access_token


def idp_access_token(facade: Strongroom, email: str, name: str | None = None) -> str:
    """``idp_token`` for a blocking view of a facade."""
    return blocking_call(idp_token(unwrapped(facade), email, name))


def session_token(facade: Strongroom, email: str) -> str:
    """An unscoped session token for ``email``."""
    return facade.sessions.sign_in(idp_access_token(facade, email)).token


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


class Api:
    """A test client for one facade, with shortcuts for common set-up over HTTP."""

    def __init__(self, facade: Strongroom, client: TestClient) -> None:
        self.facade = facade
        self.client = client

    def person(self, email: str) -> str:
        """An unscoped session token for ``email``."""
        return session_token(self.facade, email)

    def workspace_admin(self, email: str, name: str = "Acme") -> tuple[str, UUID]:
        """A session of ``email`` scoped to a new workspace they administer, and its id."""
        token = self.person(email)
        created = self.client.post("/v1/workspaces", json={"name": name}, headers=bearer(token))
        assert created.status_code == 201, created.text
        workspace_id = UUID(created.json()["id"])
        return self.switch(token, workspace_id), workspace_id

    def switch(self, token: str, workspace_id: UUID) -> str:
        """A session scoped to ``workspace_id`` (the given one is revoked)."""
        switched = self.client.post(
            "/v1/auth/switch", json={"workspace_id": str(workspace_id)}, headers=bearer(token)
        )
        assert switched.status_code == 201, switched.text
        token_: str = switched.json()["token"]
        return token_


def make_client(facade: Strongroom, **options: Any) -> TestClient:
    """A TestClient over the app of ``facade`` (enter it to run the lifespan)."""
    return TestClient(app_for(facade, **options), raise_server_exceptions=False)
