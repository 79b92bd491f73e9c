"""Concurrent first sign-ins of one person, on every adapter."""

from __future__ import annotations

import threading

import pytest
from contract_records import Adapter  # type: ignore[import-not-found]

from strongroom.adapters.identity.builtin import CLIENT_ID, BuiltinIdentityProvider, OAuthError
from strongroom.adapters.runtime.blocking import blocking
from strongroom.adapters.system import SecureIds, SystemClock
from strongroom.domain.errors import UnauthenticatedError
from strongroom.entrypoints.bootstrap import bootstrap
from support.world import FAST_HASHER, PASSWORD


def test_racing_first_sign_ins_of_one_person_both_succeed_as_one_user(adapter: Adapter) -> None:
    """Eight simultaneous first sign-ins of the same person all get a session, of one user."""
    clock, ids = SystemClock(), SecureIds()
    provider = BuiltinIdentityProvider(
        uow=adapter.async_uow, clock=clock, ids=ids, hasher=FAST_HASHER
    )
    facade = blocking(bootstrap(uow=adapter.async_uow, clock=clock, ids=ids, identity=provider))
    idp = blocking(provider)
    idp.add_account("ada@example.com", PASSWORD, "Ada")
    tokens = []
    for _ in range(8):
        code = idp.start_device_authorization(CLIENT_ID, "http://testserver")
        idp.decide(code.user_code, "ada@example.com", PASSWORD, approve=True)
        tokens.append(idp.exchange_device_code(code.device_code, CLIENT_ID).access_token)
    start = threading.Barrier(len(tokens))
    users: list[str] = []
    failures: list[BaseException] = []

    def sign_in(token: str) -> None:
        start.wait()
        try:
            users.append(str(facade.sessions.sign_in(token).user.id))
        except BaseException as error:  # collected and asserted below
            failures.append(error)

    threads = [threading.Thread(target=sign_in, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(users) == 8
    assert len(set(users)) == 1


def test_racing_exchanges_of_one_approved_code_issue_exactly_one_token(adapter: Adapter) -> None:
    """Eight simultaneous token requests for one approved device code: one access token,
    the rest invalid_grant (the code is single-use even under a race)."""
    clock, ids = SystemClock(), SecureIds()
    idp = blocking(
        BuiltinIdentityProvider(uow=adapter.async_uow, clock=clock, ids=ids, hasher=FAST_HASHER)
    )
    idp.add_account("ada@example.com", PASSWORD, "Ada")
    code = idp.start_device_authorization(CLIENT_ID, "http://testserver")
    idp.decide(code.user_code, "ada@example.com", PASSWORD, approve=True)
    start = threading.Barrier(8)
    outcomes: list[str] = []

    def exchange() -> None:
        start.wait()
        try:
            idp.exchange_device_code(code.device_code, CLIENT_ID)
            outcomes.append("token")
        except OAuthError as error:
            outcomes.append(error.error)

    threads = [threading.Thread(target=exchange) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["invalid_grant"] * 7 + ["token"]


def test_racing_exchanges_of_one_access_token_open_exactly_one_session(adapter: Adapter) -> None:
    """Eight simultaneous sign-ins with one provider access token: one session, seven 401s
    (the token is single-use even under a race), and a later sign-in is refused too."""
    clock, ids = SystemClock(), SecureIds()
    provider = BuiltinIdentityProvider(
        uow=adapter.async_uow, clock=clock, ids=ids, hasher=FAST_HASHER
    )
    facade = blocking(bootstrap(uow=adapter.async_uow, clock=clock, ids=ids, identity=provider))
    idp = blocking(provider)
    idp.add_account("ada@example.com", PASSWORD, "Ada")
    code = idp.start_device_authorization(CLIENT_ID, "http://testserver")
    idp.decide(code.user_code, "ada@example.com", PASSWORD, approve=True)
    token = idp.exchange_device_code(code.device_code, CLIENT_ID).access_token
    start = threading.Barrier(8)
    outcomes: list[str] = []

    def sign_in() -> None:
        start.wait()
        try:
            facade.sessions.sign_in(token)
            outcomes.append("session")
        except UnauthenticatedError:
            outcomes.append("refused")

    threads = [threading.Thread(target=sign_in) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused"] * 7 + ["session"]
    with pytest.raises(UnauthenticatedError):
        facade.sessions.sign_in(token)
