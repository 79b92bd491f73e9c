"""The built-in identity provider: accounts, user codes, device-code pacing, failed-approval
limits and access tokens, driven with a manual clock.

The provider's methods are coroutines; ``run`` drives one to completion. ``make_facade``
gives a blocking view of the facade, so the provider is taken from behind it."""

from __future__ import annotations

import asyncio
import functools
import os
import re
import uuid
from collections.abc import Coroutine, Iterator
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from argon2 import PasswordHasher

from strongroom.adapters.identity.builtin import (
    CLIENT_ID,
    USER_CODE_ALPHABET,
    BuiltinIdentityProvider,
    DeviceAuthorization,
    OAuthError,
)
from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.adapters.runtime.blocking import unwrapped
from strongroom.domain.errors import (
    InvalidRequestError,
    NameTakenError,
    NotFoundError,
    RateLimitedError,
    UnauthenticatedError,
)
from strongroom.ports.driving import Strongroom
from support.world import FAST_HASHER, PASSWORD, bearer, make_client, make_facade

EMAIL = "ada@example.com"
OTHER_EMAIL = "grace@example.com"
BASE_URL = "http://testserver"
USER_CODE = re.compile(rf"[{USER_CODE_ALPHABET}]{{4}}-[{USER_CODE_ALPHABET}]{{4}}")
T = TypeVar("T")


def run(call: Coroutine[Any, Any, T]) -> T:
    """The result of one call of the provider, on a fresh event loop."""
    return asyncio.run(call)


def provider_of(facade: Strongroom) -> BuiltinIdentityProvider:
    """The facade's built-in provider itself (not a blocking view of it)."""
    provider = unwrapped(facade).deps.identity
    assert isinstance(provider, BuiltinIdentityProvider)
    return provider


@pytest.fixture
def clock() -> ManualClock:
    """A clock that moves only when a test moves it."""
    return ManualClock()


@pytest.fixture
def facade(clock: ManualClock) -> Strongroom:
    """A Strongroom on ``clock`` with the built-in provider."""
    return make_facade(clock=clock)


@pytest.fixture
def idp(facade: Strongroom) -> BuiltinIdentityProvider:
    """The facade's provider, with two registered people."""
    provider = provider_of(facade)
    run(provider.add_account(EMAIL, PASSWORD, "Ada Lovelace"))
    run(provider.add_account(OTHER_EMAIL, PASSWORD, "Grace Hopper"))
    return provider


def start(idp: BuiltinIdentityProvider) -> DeviceAuthorization:
    """A new device authorization for the CLI."""
    return run(idp.start_device_authorization(CLIENT_ID, BASE_URL))


def oauth_error(idp: BuiltinIdentityProvider, device_code: str, client_id: str = CLIENT_ID) -> str:
    """The OAuth error code a token request gets (the test fails if it gets a token)."""
    with pytest.raises(OAuthError) as raised:
        run(idp.exchange_device_code(device_code, client_id))
    return raised.value.error


ATTACKER, HOME = "203.0.113.7", "198.51.100.20"


def fail(
    idp: BuiltinIdentityProvider, user_code: str, email: str = EMAIL, *, address: str = ""
) -> str:
    """One refused approval (from ``address``); its message."""
    with pytest.raises(InvalidRequestError) as raised:
        run(idp.decide(user_code, email, "wrong password!", approve=True, client_address=address))
    return raised.value.message


def approved_token(idp: BuiltinIdentityProvider, email: str = EMAIL) -> str:
    """An access token of ``email`` through the whole device flow."""
    authorization = start(idp)
    run(idp.decide(authorization.user_code, email, PASSWORD, approve=True))
    return run(idp.exchange_device_code(authorization.device_code, CLIENT_ID)).access_token


class ScriptedIds:
    """Secure ids, except that user-code draws (16 bytes) replay ``draws`` first."""

    def __init__(self, draws: list[bytes]) -> None:
        """Replay ``draws``, in order, for the first user-code draws."""
        self._draws: Iterator[bytes] = iter(draws)

    def new_id(self) -> uuid.UUID:
        """A random UUID."""
        return uuid.uuid4()

    def random_bytes(self, count: int) -> bytes:
        """The next scripted draw for a user code, else secure random bytes."""
        if count == 16:
            scripted = next(self._draws, None)
            if scripted is not None:
                return scripted
        return os.urandom(count)


def scripted_idp(draws: list[bytes]) -> BuiltinIdentityProvider:
    """A provider on a fresh store whose user-code randomness is scripted."""
    return BuiltinIdentityProvider(
        uow=functools.partial(MemoryUnitOfWork, MemoryStore()),
        clock=ManualClock(),
        ids=ScriptedIds(draws),
        hasher=FAST_HASHER,
    )


class TestUserCodes:
    """User codes: what people read off a device and type into the approval page."""

    def test_eight_letters_from_a_twenty_letter_alphabet_shown_as_xxxx_xxxx(
        self, idp: BuiltinIdentityProvider
    ) -> None:
        """Every code is two groups of four letters from the 20-letter, vowel-free alphabet."""
        assert len(set(USER_CODE_ALPHABET)) == 20
        assert not set(USER_CODE_ALPHABET) & set("AEIOUY")
        codes = [start(idp).user_code for _ in range(50)]
        assert all(USER_CODE.fullmatch(code) for code in codes), codes
        assert len(set(codes)) == len(codes)

    @pytest.mark.parametrize(
        "typed",
        [
            pytest.param(str.lower, id="lower case"),
            pytest.param(lambda code: code.replace("-", ""), id="without dash"),
            pytest.param(lambda code: f"  {code.lower().replace('-', ' ')} ", id="spaces"),
        ],
    )
    def test_codes_are_accepted_in_lower_case_and_without_the_dash(
        self, idp: BuiltinIdentityProvider, typed: object
    ) -> None:
        """A code typed in lower case, without the dash or with spaces still names the grant."""
        assert callable(typed)
        authorization = start(idp)
        run(idp.decide(typed(authorization.user_code), EMAIL, PASSWORD, approve=True))
        token = run(idp.exchange_device_code(authorization.device_code, CLIENT_ID))
        assert token.access_token.startswith("bki_")

    def test_bytes_that_would_bias_the_alphabet_are_discarded(self) -> None:
        """Random bytes of 240 and above (where ``byte % 20`` favours early letters) are
        skipped, so every letter is equally likely."""
        idp = scripted_idp(
            [bytes([240, 250, 255, 0, 1, 2, 245, 3, 4, 5, 6, 7, 248, 249, 241, 242])]
        )
        assert start(idp).user_code == "BCDF-GHJK"

    def test_a_code_held_by_a_pending_grant_is_never_issued_twice(self) -> None:
        """When a draw repeats the code of a live, undecided grant, another code is drawn."""
        same = bytes(range(16))
        idp = scripted_idp([same, same, bytes(range(8, 24))])
        first, second = start(idp), start(idp)
        assert first.user_code == "BCDF-GHJK"
        assert second.user_code == "LMNP-QRST"

    def test_codes_and_urls_in_the_authorization(self, idp: BuiltinIdentityProvider) -> None:
        """The answer carries absolute URLs under the base URL, 600 s of life and 5 s polls."""
        authorization = start(idp)
        assert authorization.verification_uri == f"{BASE_URL}/idp/device"
        assert authorization.verification_uri_complete == (
            f"{BASE_URL}/idp/device?user_code={authorization.user_code}"
        )
        assert authorization.expires_in == 600
        assert authorization.interval == 5
        assert authorization.device_code.startswith("bkd_")

    def test_an_unknown_client_cannot_start(self, idp: BuiltinIdentityProvider) -> None:
        """Only the CLI's client id may start a device authorization: ``invalid_client``."""
        with pytest.raises(OAuthError) as raised:
            run(idp.start_device_authorization("someone-else", BASE_URL))
        assert raised.value.error == "invalid_client"


class TestDeviceCodeLifetime:
    """Device codes live ten minutes."""

    def test_a_code_expires_after_ten_minutes(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """At 9:59 the client is still waiting; at 10:04 the code has expired."""
        authorization = start(idp)
        clock.advance(timedelta(minutes=9, seconds=59))
        assert oauth_error(idp, authorization.device_code) == "authorization_pending"
        clock.advance(timedelta(seconds=5))
        assert oauth_error(idp, authorization.device_code) == "expired_token"

    def test_expiry_wins_over_pacing(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """A poll right after the deadline hears ``expired_token``, not ``slow_down``."""
        authorization = start(idp)
        clock.advance(timedelta(minutes=10) - timedelta(seconds=1))
        assert oauth_error(idp, authorization.device_code) == "authorization_pending"
        clock.advance(timedelta(seconds=1))
        assert oauth_error(idp, authorization.device_code) == "expired_token"

    def test_an_expired_code_cannot_be_approved(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """Approving at exactly ten minutes is refused as an unknown or expired code."""
        authorization = start(idp)
        clock.advance(timedelta(minutes=10))
        with pytest.raises(InvalidRequestError, match="unknown or expired code"):
            run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=True))

    @pytest.mark.parametrize(
        ("user_code", "email", "message"),
        [
            ("BCDF\x00GHJK", EMAIL, "unknown or expired code"),
            ("BCDFGHJ", EMAIL, "unknown or expired code"),
            ("AEIOU123", EMAIL, "unknown or expired code"),
            (None, "ada\x00@example.com", "wrong email or password"),
        ],
    )
    def test_text_no_code_or_account_can_hold_is_refused_before_any_look_up(
        self, idp: BuiltinIdentityProvider, user_code: str | None, email: str, message: str
    ) -> None:
        """A NUL (which PostgreSQL text cannot hold: it answered 500) or a code outside the
        alphabet or length is refused as unknown; the real code stays usable."""
        authorization = start(idp)
        with pytest.raises(InvalidRequestError, match=message):
            run(idp.decide(user_code or authorization.user_code, email, PASSWORD, approve=True))
        run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=True))

    def test_an_approved_code_not_exchanged_in_time_expires(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """Approval does not extend the code's life."""
        authorization = start(idp)
        run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=True))
        clock.advance(timedelta(minutes=10))
        assert oauth_error(idp, authorization.device_code) == "expired_token"


class TestPolling:
    """The token request: pacing and answers by the grant's state."""

    def test_the_first_poll_is_never_slowed_down(self, idp: BuiltinIdentityProvider) -> None:
        """A client polling at once hears ``authorization_pending``."""
        authorization = start(idp)
        assert oauth_error(idp, authorization.device_code) == "authorization_pending"

    def test_polling_at_the_interval_is_fine(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """Polls exactly five seconds apart are all answered ``authorization_pending``."""
        authorization = start(idp)
        for _ in range(3):
            assert oauth_error(idp, authorization.device_code) == "authorization_pending"
            clock.advance(timedelta(seconds=5))

    def test_polling_sooner_than_the_interval_slows_down_by_five_seconds(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """Too soon: ``slow_down``, and from then on the interval is 5 s longer each time."""
        authorization = start(idp)
        code = authorization.device_code
        assert oauth_error(idp, code) == "authorization_pending"
        clock.advance(timedelta(seconds=4))
        with pytest.raises(OAuthError) as raised:
            run(idp.exchange_device_code(code, CLIENT_ID))
        assert raised.value.error == "slow_down"
        assert "10 seconds" in raised.value.description
        clock.advance(timedelta(seconds=9))
        assert oauth_error(idp, code) == "slow_down"  # 9 s < 10 s; now 15 s
        clock.advance(timedelta(seconds=14))
        assert oauth_error(idp, code) == "slow_down"  # 14 s < 15 s; now 20 s
        clock.advance(timedelta(seconds=20))
        assert oauth_error(idp, code) == "authorization_pending"

    def test_pacing_is_per_device_code(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """One client polling too fast does not slow another down."""
        fast, calm = start(idp), start(idp)
        assert oauth_error(idp, fast.device_code) == "authorization_pending"
        clock.advance(timedelta(seconds=1))
        assert oauth_error(idp, fast.device_code) == "slow_down"
        assert oauth_error(idp, calm.device_code) == "authorization_pending"

    def test_an_approved_code_gives_a_bearer_token(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """After approval the token request returns a Bearer access token for 600 s."""
        authorization = start(idp)
        assert oauth_error(idp, authorization.device_code) == "authorization_pending"
        run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=True))
        clock.advance(timedelta(seconds=5))
        issued = run(idp.exchange_device_code(authorization.device_code, CLIENT_ID))
        assert issued.token_type == "Bearer"
        assert issued.expires_in == 600
        assert run(idp.verify_access_token(issued.access_token)).email == EMAIL

    def test_a_denied_code_gives_access_denied(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """After the person denies, the client hears ``access_denied``, even when polling
        too soon, and can never get a token."""
        authorization = start(idp)
        assert oauth_error(idp, authorization.device_code) == "authorization_pending"
        run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=False))
        assert oauth_error(idp, authorization.device_code) == "access_denied"
        clock.advance(timedelta(seconds=30))
        assert oauth_error(idp, authorization.device_code) == "access_denied"

    def test_a_decided_code_cannot_be_decided_again(self, idp: BuiltinIdentityProvider) -> None:
        """Once approved or denied, the user code is no longer accepted."""
        for approve in (True, False):
            authorization = start(idp)
            run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=approve))
            with pytest.raises(InvalidRequestError, match="unknown or expired code"):
                run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=not approve))

    def test_a_device_code_is_exchanged_once(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """A second token request with the same code is ``invalid_grant``, at once or later."""
        authorization = start(idp)
        run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=True))
        run(idp.exchange_device_code(authorization.device_code, CLIENT_ID))
        assert oauth_error(idp, authorization.device_code) == "invalid_grant"
        clock.advance(timedelta(seconds=30))
        assert oauth_error(idp, authorization.device_code) == "invalid_grant"

    def test_an_unknown_device_code_is_invalid_grant(self, idp: BuiltinIdentityProvider) -> None:
        """A device code the provider never issued is ``invalid_grant``."""
        start(idp)
        assert oauth_error(idp, "bkd_not-a-real-code") == "invalid_grant"

    def test_another_client_id_is_invalid_client(self, idp: BuiltinIdentityProvider) -> None:
        """A token request naming an unknown client is ``invalid_client``."""
        authorization = start(idp)
        assert oauth_error(idp, authorization.device_code, "someone-else") == "invalid_client"


class TestFailedApprovals:
    """Failed approvals are limited per user code, per email and address, and per address,
    never globally (contract 13)."""

    def test_a_wrong_password_or_unknown_email_is_refused_alike(
        self, idp: BuiltinIdentityProvider
    ) -> None:
        """Whether the email is unknown or the password wrong, the message is the same."""
        authorization = start(idp)
        assert fail(idp, authorization.user_code) == "wrong email or password"
        assert fail(idp, authorization.user_code, "nobody@example.com") == (
            "wrong email or password"
        )
        with pytest.raises(InvalidRequestError, match="wrong email or password"):
            run(
                idp.decide(
                    authorization.user_code, "nobody@example.com", "decoy password", approve=True
                )
            )

    def test_four_failures_leave_the_code_usable(self, idp: BuiltinIdentityProvider) -> None:
        """After four wrong passwords the right one still approves the code."""
        authorization = start(idp)
        for _ in range(4):
            fail(idp, authorization.user_code)
        run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=True))
        assert run(idp.exchange_device_code(authorization.device_code, CLIENT_ID)).access_token

    def test_five_failures_kill_the_code(self, idp: BuiltinIdentityProvider) -> None:
        """The fifth wrong password kills the code: the right password is then refused and
        the waiting client hears ``access_denied``."""
        authorization = start(idp)
        for _ in range(5):
            assert fail(idp, authorization.user_code) == "wrong email or password"
        with pytest.raises(InvalidRequestError, match="unknown or expired code"):
            run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=True))
        assert oauth_error(idp, authorization.device_code) == "access_denied"

    def test_failures_on_one_code_do_not_affect_another(self, idp: BuiltinIdentityProvider) -> None:
        """Killing one code leaves other codes approvable."""
        dead, alive = start(idp), start(idp)
        for _ in range(5):
            fail(idp, dead.user_code, OTHER_EMAIL)
        run(idp.decide(alive.user_code, EMAIL, PASSWORD, approve=True))

    def test_ten_failures_for_an_email_refuse_it_for_fifteen_minutes(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """After ten failures in 15 minutes (over several codes) even the right password is
        refused for that email; other emails still sign in; after the window it works."""
        for _ in range(5):
            authorization = start(idp)
            fail(idp, authorization.user_code)
            fail(idp, authorization.user_code)
        fresh = start(idp)
        with pytest.raises(RateLimitedError, match="too many failed attempts"):
            run(idp.decide(fresh.user_code, EMAIL, PASSWORD, approve=True))
        run(idp.decide(fresh.user_code, OTHER_EMAIL, PASSWORD, approve=True))
        assert run(idp.exchange_device_code(fresh.device_code, CLIENT_ID)).access_token

        clock.advance(timedelta(minutes=15, seconds=1))
        later = start(idp)
        run(idp.decide(later.user_code, EMAIL, PASSWORD, approve=True))
        assert run(idp.exchange_device_code(later.device_code, CLIENT_ID)).access_token

    def test_refusals_for_the_email_limit_do_not_count_against_the_code(
        self, idp: BuiltinIdentityProvider
    ) -> None:
        """A code tried by a locked-out email stays usable by someone else."""
        for _ in range(5):
            authorization = start(idp)
            fail(idp, authorization.user_code)
            fail(idp, authorization.user_code)
        shared = start(idp)
        for _ in range(6):
            with pytest.raises(RateLimitedError, match="too many failed attempts"):
                run(idp.decide(shared.user_code, EMAIL, PASSWORD, approve=True))
        run(idp.decide(shared.user_code, OTHER_EMAIL, PASSWORD, approve=True))

    def test_the_email_limit_ignores_case_and_padding(self, idp: BuiltinIdentityProvider) -> None:
        """``ADA@example.com`` and `` ada@example.com `` count against the same email."""
        spellings = [EMAIL, EMAIL.upper(), f" {EMAIL} ", EMAIL.title(), f"\t{EMAIL}"]
        for spelling in spellings * 2:
            authorization = start(idp)
            fail(idp, authorization.user_code, spelling)
        fresh = start(idp)
        with pytest.raises(RateLimitedError, match="too many failed attempts"):
            run(idp.decide(fresh.user_code, f"  {EMAIL.upper()}", PASSWORD, approve=True))

    def test_failures_from_one_address_never_refuse_another(
        self, idp: BuiltinIdentityProvider
    ) -> None:
        """Ten failures for an email from one address: that address is refused (429), the
        right password from another address signs in (issue 12, finding 10)."""
        for _ in range(5):
            authorization = start(idp)
            fail(idp, authorization.user_code, address=ATTACKER)
            fail(idp, authorization.user_code, address=ATTACKER)
        fresh = start(idp)
        with pytest.raises(RateLimitedError):
            run(idp.decide(fresh.user_code, EMAIL, PASSWORD, approve=True, client_address=ATTACKER))
        run(idp.decide(fresh.user_code, EMAIL, PASSWORD, approve=True, client_address=HOME))
        assert run(idp.exchange_device_code(fresh.device_code, CLIENT_ID)).access_token

    def test_retry_after_is_when_the_oldest_counted_failure_leaves_the_window(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """Failures at 0 and then 5 minutes later: refused 10 minutes after the first
        with ``retry_after`` 301 s (the window includes its start); accepted then."""
        authorization = start(idp)
        fail(idp, authorization.user_code, address=ATTACKER)
        clock.advance(timedelta(minutes=5))
        for _ in range(9):
            if _ % 4 == 0:
                authorization = start(idp)
            fail(idp, authorization.user_code, address=ATTACKER)
        clock.advance(timedelta(minutes=5))
        fresh = start(idp)
        with pytest.raises(RateLimitedError) as refused:
            run(idp.decide(fresh.user_code, EMAIL, PASSWORD, approve=True, client_address=ATTACKER))
        assert refused.value.retry_after == 301
        clock.advance(timedelta(seconds=300))
        with pytest.raises(RateLimitedError):
            run(idp.decide(fresh.user_code, EMAIL, PASSWORD, approve=True, client_address=ATTACKER))
        clock.advance(timedelta(seconds=1))
        run(idp.decide(fresh.user_code, EMAIL, PASSWORD, approve=True, client_address=ATTACKER))

    def test_a_hundred_failures_from_an_address_refuse_it_for_every_email(
        self, idp: BuiltinIdentityProvider
    ) -> None:
        """Spraying many emails from one address: after 100 failures in 15 minutes that
        address is refused (429) whoever signs in; other addresses are not."""
        authorization = start(idp)
        for number in range(100):
            if number % 4 == 0:
                authorization = start(idp)
            fail(idp, authorization.user_code, f"user{number}@example.com", address=ATTACKER)
        fresh = start(idp)
        with pytest.raises(RateLimitedError, match="from this address"):
            run(idp.decide(fresh.user_code, EMAIL, PASSWORD, approve=True, client_address=ATTACKER))
        run(idp.decide(fresh.user_code, EMAIL, PASSWORD, approve=True, client_address=HOME))

    def test_the_window_slides(self, idp: BuiltinIdentityProvider, clock: ManualClock) -> None:
        """Failures older than 15 minutes no longer count."""
        authorization = start(idp)
        for _ in range(4):
            fail(idp, authorization.user_code)
        clock.advance(timedelta(minutes=8))
        for _ in range(3):
            authorization = start(idp)
            for _ in range(2):
                fail(idp, authorization.user_code)
        locked = start(idp)
        with pytest.raises(RateLimitedError, match="too many failed attempts"):
            run(idp.decide(locked.user_code, EMAIL, PASSWORD, approve=True))
        clock.advance(timedelta(minutes=7, seconds=1))  # the first four fell out
        fresh = start(idp)
        run(idp.decide(fresh.user_code, EMAIL, PASSWORD, approve=True))


class TestAccessTokens:
    """Access tokens of the provider: verified, expiring, and only for sign-in."""

    def test_a_token_names_the_person(self, idp: BuiltinIdentityProvider) -> None:
        """The identity behind a token is the account's id, email and name."""
        identity = run(idp.verify_access_token(approved_token(idp)))
        assert identity.email == EMAIL
        assert identity.name == "Ada Lovelace"
        assert identity.subject == str(run(idp.account_id(EMAIL)))

    def test_a_token_expires_after_ten_minutes(
        self, idp: BuiltinIdentityProvider, clock: ManualClock
    ) -> None:
        """Valid for just under ten minutes, refused from then on."""
        token, late = approved_token(idp), approved_token(idp)
        clock.advance(timedelta(minutes=10) - timedelta(seconds=1))
        assert run(idp.verify_access_token(token)).email == EMAIL
        clock.advance(timedelta(seconds=1))
        with pytest.raises(UnauthenticatedError, match="expired"):
            run(idp.verify_access_token(late))

    def test_a_token_verifies_once(self, idp: BuiltinIdentityProvider) -> None:
        """Verifying spends the token (contract 13): a second verification is refused."""
        token = approved_token(idp)
        assert run(idp.verify_access_token(token)).email == EMAIL
        with pytest.raises(UnauthenticatedError, match="already used"):
            run(idp.verify_access_token(token))

    @pytest.mark.parametrize(
        "token",
        [
            pytest.param("", id="empty"),
            pytest.param("bki_garbage", id="malformed"),
            pytest.param("bki_" + "A" * 43 + "000000", id="bad checksum"),
        ],
    )
    def test_a_malformed_token_is_refused(self, idp: BuiltinIdentityProvider, token: str) -> None:
        """Anything that is not a well-formed access token is refused."""
        with pytest.raises(UnauthenticatedError):
            run(idp.verify_access_token(token))

    def test_a_device_code_is_not_an_access_token(self, idp: BuiltinIdentityProvider) -> None:
        """The device code of an approved grant does not verify as an access token."""
        authorization = start(idp)
        run(idp.decide(authorization.user_code, EMAIL, PASSWORD, approve=True))
        with pytest.raises(UnauthenticatedError):
            run(idp.verify_access_token(authorization.device_code))

    def test_an_unknown_well_formed_token_is_refused(self, idp: BuiltinIdentityProvider) -> None:
        """A well-formed token of another provider instance is unknown here."""
        token = approved_token(make_idp_with_account())
        with pytest.raises(UnauthenticatedError, match="unknown"):
            run(idp.verify_access_token(token))

    def test_the_token_is_refused_as_a_v1_bearer_but_opens_a_session(
        self, facade: Strongroom, idp: BuiltinIdentityProvider
    ) -> None:
        """``GET /v1/me`` refuses the provider's token (401); ``POST /v1/auth/sessions``
        exchanges it for a session that ``/v1/me`` accepts."""
        token = approved_token(idp)
        with make_client(facade) as client:
            refused = client.get("/v1/me", headers=bearer(token))
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == "unauthenticated"
            created = client.post("/v1/auth/sessions", headers=bearer(token))
            assert created.status_code == 201, created.text
            assert created.json()["user"]["email"] == EMAIL
            me = client.get("/v1/me", headers=bearer(created.json()["token"]))
            assert me.status_code == 200
            assert me.json()["principal"]["type"] == "user"


def make_idp_with_account() -> BuiltinIdentityProvider:
    """A second, independent provider with the usual account."""
    provider = provider_of(make_facade())
    run(provider.add_account(EMAIL, PASSWORD, "Ada Lovelace"))
    return provider


class TestAccounts:
    """Local accounts and their passwords."""

    def test_passwords_are_stored_only_as_argon2_hashes(self, facade: Strongroom) -> None:
        """The stored account holds an argon2id hash of the password, and the password (like
        device codes and access tokens) appears nowhere in the store."""
        provider = provider_of(facade)
        secret = "a very particular passphrase"
        account = run(provider.add_account("linus@example.com", secret, "Linus"))
        assert account.password_hash.startswith("$argon2id$")
        assert PasswordHasher().verify(account.password_hash, secret)
        authorization = run(provider.start_device_authorization(CLIENT_ID, BASE_URL))
        run(provider.decide(authorization.user_code, "linus@example.com", secret, approve=True))
        token = run(
            provider.exchange_device_code(authorization.device_code, CLIENT_ID)
        ).access_token

        uow_factory = unwrapped(facade).deps.uow
        assert isinstance(uow_factory, functools.partial)
        store = uow_factory.args[0]
        assert isinstance(store, MemoryStore)
        dump = repr(store.tables)
        assert account.password_hash in dump
        for plain in (secret, authorization.device_code, token):
            assert plain not in dump

    def test_emails_are_unique_case_insensitively(self, idp: BuiltinIdentityProvider) -> None:
        """Registering an existing email in other case is ``name_taken``."""
        with pytest.raises(NameTakenError):
            run(idp.add_account(EMAIL.upper(), PASSWORD, "Someone"))

    @pytest.mark.parametrize(
        ("email", "password", "name"),
        [
            pytest.param("not-an-email", PASSWORD, "A", id="email"),
            pytest.param("a@example.com", "short", "A", id="password under 8"),
            pytest.param("a@example.com", "x" * 1025, "A", id="password over 1024"),
            pytest.param("a@example.com", PASSWORD, "   ", id="blank name"),
        ],
    )
    def test_malformed_accounts_are_refused(
        self, idp: BuiltinIdentityProvider, email: str, password: str, name: str
    ) -> None:
        """A bad email, a password outside 8..1024 characters or a blank name is refused."""
        with pytest.raises(InvalidRequestError):
            run(idp.add_account(email, password, name))

    def test_an_eight_character_password_is_enough(self, idp: BuiltinIdentityProvider) -> None:
        """Exactly eight characters is accepted, and the email is stored trimmed."""
        account = run(idp.add_account("  eight@example.com ", "12345678", "Eight"))
        assert account.email == "eight@example.com"

    def test_organizations_are_identifiers_only(self, idp: BuiltinIdentityProvider) -> None:
        """Each workspace gets a distinct ``org_`` id; deleting one is a harmless no-op."""
        first, second = run(idp.create_organization("Acme")), run(idp.create_organization("Acme"))
        assert re.fullmatch(r"org_[0-9a-f]{32}", first)
        assert first != second
        run(idp.delete_organization(first))
        run(idp.delete_organization("org_never_created"))

    def test_sign_up_can_be_turned_off(self, idp: BuiltinIdentityProvider) -> None:
        """With sign-up off, self-service registration is not found; operators still add."""
        idp.signup_enabled = False
        with pytest.raises(NotFoundError):
            run(idp.sign_up("new@example.com", PASSWORD, "New"))
        assert run(idp.add_account("new@example.com", PASSWORD, "New")).email == "new@example.com"
