"""The retention job purges what nothing reads any more: idempotency keys past their 24 h
lifetime and failed approvals older than the 15-minute rate-limit window."""

from __future__ import annotations

from datetime import timedelta

import pytest

from strongroom.adapters.identity.builtin import CLIENT_ID
from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.principals import Caller
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.idempotency import IdempotencyKey
from support.world import PASSWORD, idp_of, make_facade, session_token


def fail_an_approval(facade: Strongroom, email: str, address: str) -> None:
    """One approval with a wrong password from ``address``."""
    idp = idp_of(facade)
    grant = idp.start_device_authorization(CLIENT_ID, "http://localhost")
    with pytest.raises(InvalidRequestError):
        idp.decide(grant.user_code, email, "not the password", approve=True, client_address=address)


ROUTE = "POST /v1/workspaces"


def create_with_key(facade: Strongroom, caller: Caller, key: str, name: str) -> None:
    """Create a workspace under an Idempotency-Key, as ``POST /v1/workspaces`` does."""
    idempotency = IdempotencyKey(key, ROUTE, fingerprint=name)
    facade.workspaces.create(caller, name, idempotency=idempotency)


class TestRetentionPurges:
    """What each run purges, counted in its report."""

    def test_expired_keys_and_old_failures_go_recent_ones_stay(self) -> None:
        """A key of 25 h ago and two failures of 20 minutes ago go; a key of an hour ago
        and a failure of a minute ago stay (a second run purges nothing)."""
        clock = ManualClock()
        facade = make_facade(clock=clock)
        caller = facade.access.authenticate(session_token(facade, "ada@example.com"))
        scope = f"{caller.actor.type}:{caller.actor.id} {ROUTE}"
        create_with_key(facade, caller, "old-key", "Old")
        fail_an_approval(facade, "ada@example.com", "10.0.0.1")
        fail_an_approval(facade, "ada@example.com", "10.0.0.2")
        clock.advance(timedelta(hours=24))
        create_with_key(facade, caller, "new-key", "New")
        clock.advance(timedelta(minutes=59))
        fail_an_approval(facade, "ada@example.com", "10.0.0.1")
        clock.advance(timedelta(minutes=1, seconds=1))
        report = facade.retention.run()
        assert (report.purged_idempotency_keys, report.purged_failed_logins) == (1, 2)
        with facade.deps.uow() as uow:
            kept = [key for key in ("old-key", "new-key") if uow.idempotency.get(scope, key)]
            long_ago = clock.now() - timedelta(days=2)
            failures = [
                len(uow.accounts.recent_failed_logins(address, long_ago, 9))
                for address in ("10.0.0.1", "10.0.0.2")
            ]
        assert kept == ["new-key"]
        assert failures == [1, 0]
        again = facade.retention.run()
        assert (again.purged_idempotency_keys, again.purged_failed_logins) == (0, 0)
        # The account still signs in: nothing of it was purged.
        grant = idp_of(facade).start_device_authorization(CLIENT_ID, "http://localhost")
        idp_of(facade).decide(grant.user_code, "ada@example.com", PASSWORD, approve=True)
