"""The built-in identity provider: local accounts (argon2 passwords) and the OAuth 2.0
Device Authorization Grant (RFC 8628), stored through the unit of work.

Device codes live 10 minutes; clients poll every 5 s (``slow_down`` adds 5 s and is only
given to a client that polls sooner than its interval). Failed approvals are limited per
user code (5, then the code is dead), per email and client address (10 per 15 minutes) and
per client address (100 per 15 minutes), never globally (contract 13): failures from one
address never refuse a correct password from another.

Everything that reads or writes the store is a coroutine. argon2 hashing and verifying
burn tens of milliseconds of CPU each, so they run in a pool of their own
(``HASHING_THREADS``, half the CPUs) and never hold up the event loop, nor take every CPU
and every shared worker thread when sign-ups flood in (contract 13); sign-ups are limited
per client address (``signup_limit``).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import math
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TypeVar
from uuid import UUID

import attrs
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from strongroom.adapters.identity.signup_limit import SignupLimiter
from strongroom.domain.accounts import FAILED_LOGIN_WINDOW, Account, DeviceGrant, GrantState
from strongroom.domain.errors import (
    InvalidRequestError,
    NotFoundError,
    RateLimitedError,
    UnauthenticatedError,
)
from strongroom.domain.names import clean_name, email_key
from strongroom.domain.oauth import (
    CLIENT_ID,
    MAX_PASSWORD_LENGTH,
    MIN_PASSWORD_LENGTH,
    WEB_CLIENT_ID,
)
from strongroom.domain.tokens import TokenKind, format_token, hash_token, token_kind
from strongroom.ports.driven.clock import Clock, IdGenerator
from strongroom.ports.driven.identity import CliConfig, Identity
from strongroom.ports.driven.unit_of_work import UnitOfWork, UnitOfWorkFactory

logger = logging.getLogger(__name__)

AUTHORIZATION_CODE_LIFETIME = timedelta(seconds=60)
_PKCE_VALUE = re.compile(r"[A-Za-z0-9\-._~]{43,128}")  # RFC 7636 section 4.1
_S256_CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}")  # base64url of a SHA-256, no padding
DEVICE_CODE_LIFETIME = timedelta(minutes=10)
ACCESS_TOKEN_LIFETIME = timedelta(minutes=10)
POLL_INTERVAL = 5
SLOW_DOWN_STEP = 5
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"  # RFC 8628 section 6.1: no vowels, no lookalikes
USER_CODE_LENGTH = 8
MAX_USER_CODE_DRAWS = 16
MAX_FAILED_PER_CODE = 5
MAX_FAILED_PER_EMAIL = 10  # per email and client address
MAX_FAILED_PER_ADDRESS = 100
_EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,253}")


@attrs.frozen
class DeviceAuthorization:
    """The answer to a device authorization request (RFC 8628 section 3.2)."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: int
    interval: int


@attrs.frozen
class AccessToken:
    """The answer to a successful token request."""

    access_token: str
    expires_in: int
    token_type: str = "Bearer"  # noqa: S105 (an OAuth token type, not a secret)


class OAuthError(Exception):
    """An RFC 8628 / RFC 6749 token-endpoint error (``authorization_pending``, ...)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(error)
        self.error = error
        self.description = description


def normalize_user_code(user_code: str) -> str:
    """``bcdf-ghjk`` and ``BCDFGHJK`` both name the code shown as ``BCDF-GHJK``."""
    return re.sub(r"[\s-]", "", user_code).upper()


def display_user_code(code: str) -> str:
    """The ``XXXX-XXXX`` form shown to people."""
    return f"{code[:4]}-{code[4:]}"


def s256_challenge(code_verifier: str) -> str:
    """RFC 7636 section 4.2: ``BASE64URL(SHA256(ASCII(code_verifier)))`` without padding."""
    digest = hashlib.sha256(code_verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def is_code_verifier(value: str) -> bool:
    """A well-formed PKCE code verifier: 43 to 128 unreserved characters."""
    return _PKCE_VALUE.fullmatch(value) is not None


def is_s256_challenge(value: str) -> bool:
    """A well-formed S256 code challenge: 43 base64url characters."""
    return _S256_CHALLENGE.fullmatch(value) is not None


def _code_binding(code: str, code_challenge: str, redirect_uri: str) -> str:
    """What an authorization code is stored as: the hash of the code bound to its PKCE
    challenge and redirect URI, so the look-up itself checks all three (a wrong verifier
    or another redirect URI finds nothing) and nothing secret is compared byte by byte."""
    return hash_token(f"{code}\n{code_challenge}\n{redirect_uri}")


def grant_origin(grant_id: UUID) -> str:
    """What sessions made from one of this provider's grants keep as their origin."""
    return f"builtin:{grant_id}"


def check_email(email: str) -> str:
    """A plausible email address, trimmed; ``invalid_request`` otherwise."""
    email = email.strip()
    if len(email) > 254 or not _EMAIL.fullmatch(email):
        raise InvalidRequestError("email must be an email address")
    return email


def check_password(password: str) -> str:
    """A password of 8 to 1024 characters."""
    if not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
        raise InvalidRequestError(
            f"password must be {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters"
        )
    return password


class BuiltinIdentityProvider:
    """Local accounts and device-code sign-in; the default identity provider."""

    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        ids: IdGenerator,
        signup_enabled: bool = True,
        hasher: PasswordHasher | None = None,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._ids = ids
        self._hasher = hasher or PasswordHasher()
        # Verified against when an email is unknown, so timing does not reveal accounts;
        # made on first use, in a worker thread like every argon2 computation.
        self._decoy_hash: str | None = None
        self.signup_enabled = signup_enabled
        self._signups = SignupLimiter()

    # The identity provider port.

    async def verify_access_token(self, token: str) -> Identity:
        """The person behind one of this provider's access tokens. A token is single-use
        (contract 13): verifying it spends it, so a second exchange is refused, and of two
        racing exchanges exactly one passes (the grant is locked while it is spent)."""
        if token_kind(token) is not TokenKind.IDP_ACCESS:
            raise UnauthenticatedError("not an access token of this identity provider")
        now = self._clock.now()
        async with self._uow() as uow:
            grant = await uow.device_grants.get_by_access_token(hash_token(token), for_update=True)
            account = (
                None
                if grant is None or grant.account_id is None
                else await uow.accounts.get(grant.account_id)
            )
            if grant is None or account is None or grant.access_expires_at is None:
                raise UnauthenticatedError("unknown or already used access token")
            if now >= grant.access_expires_at:
                raise UnauthenticatedError("access token expired")
            await uow.device_grants.update(attrs.evolve(grant, access_token_hash=None))
            await uow.commit()
        return Identity(
            subject=str(account.id),
            email=account.email,
            name=account.name,
            grant=grant_origin(grant.id),
        )

    async def create_organization(self, name: str) -> str:
        """Organizations of the built-in provider are identifiers only; nothing is stored."""
        return f"org_{self._ids.new_id().hex}"

    async def delete_organization(self, org_id: str) -> None:
        """Nothing is stored for an organization, so nothing is removed."""

    def cli_config(self, base_url: str) -> CliConfig:
        """Device-code and authorization-code endpoints under ``{base_url}/idp``."""
        return CliConfig(
            issuer=f"{base_url}/idp",
            client_id=CLIENT_ID,
            device_authorization_endpoint=f"{base_url}/idp/device/code",
            token_endpoint=f"{base_url}/idp/token",
            scopes=("openid", "profile", "email"),
            authorization_endpoint=f"{base_url}/idp/authorize",
        )

    # Accounts.

    async def sign_up(
        self, email: str, password: str, name: str, client_address: str = ""
    ) -> Account:
        """Self-service registration (404 when sign-up is off; 429 ``rate_limited`` after
        ``SIGNUPS_PER_ADDRESS`` from ``client_address`` in ``SIGNUP_WINDOW``)."""
        if not self.signup_enabled:
            raise NotFoundError("sign-up")
        self._signups.admit(client_address, self._clock.now())
        return await self.add_account(email, password, name)

    async def add_account(self, email: str, password: str, name: str) -> Account:
        """Register an account (operators may do so with sign-up off)."""
        email, name = check_email(email), clean_name(name)
        password_hash = await _hashing(self._hasher.hash, check_password(password))
        account = Account(
            id=self._ids.new_id(),
            email=email,
            name=name,
            password_hash=password_hash,
            created_at=self._clock.now(),
        )
        async with self._uow() as uow:
            await uow.accounts.add(account)
            await uow.commit()
        return account

    async def _password_matches(self, account: Account | None, password: str) -> bool:
        """Whether ``password`` is the account's (verified against a decoy hash when there
        is no account, so that timing does not tell); argon2 runs in a worker thread."""
        decoy = await self._decoy()  # made before choosing, so the first call is alike too
        stored = account.password_hash if account else decoy
        return await _hashing(self._verify, stored, password) and account is not None

    async def _decoy(self) -> str:
        if self._decoy_hash is None:
            self._decoy_hash = await _hashing(self._hasher.hash, "decoy password")
        return self._decoy_hash

    def _verify(self, password_hash: str, password: str) -> bool:
        try:
            return self._hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False

    # The device authorization grant.

    async def start_device_authorization(
        self, client_id: str, base_url: str
    ) -> DeviceAuthorization:
        """Issue a device code and a user code (RFC 8628 section 3.1); another client:
        OAuth's ``invalid_client``."""
        if client_id != CLIENT_ID:
            raise OAuthError("invalid_client", "unknown client_id")
        now = self._clock.now()
        device_code = format_token(TokenKind.DEVICE_CODE, self._ids.random_bytes(32))
        async with self._uow() as uow:
            user_code = await self._unused_user_code(uow, now)
            await uow.device_grants.add(
                DeviceGrant(
                    id=self._ids.new_id(),
                    device_code_hash=hash_token(device_code),
                    user_code=user_code,
                    client_id=client_id,
                    created_at=now,
                    expires_at=now + DEVICE_CODE_LIFETIME,
                    interval=POLL_INTERVAL,
                )
            )
            await uow.commit()
        shown = display_user_code(user_code)
        return DeviceAuthorization(
            device_code=device_code,
            user_code=shown,
            verification_uri=f"{base_url}/idp/device",
            verification_uri_complete=f"{base_url}/idp/device?user_code={shown}",
            expires_in=int(DEVICE_CODE_LIFETIME.total_seconds()),
            interval=POLL_INTERVAL,
        )

    async def _unused_user_code(self, uow: UnitOfWork, now: datetime) -> str:
        """A fresh user code that no live, undecided grant holds (people type it, so two
        pending grants must never share one)."""
        for _ in range(MAX_USER_CODE_DRAWS):
            code = self._random_user_code()
            holder = await uow.device_grants.get_by_user_code(code)
            if holder is None or holder.is_expired(now) or holder.state is not GrantState.PENDING:
                return code
        raise RuntimeError("could not draw an unused user code")  # pragma: no cover

    def _random_user_code(self) -> str:
        """Eight letters drawn uniformly from the alphabet (rejection sampling: a plain
        ``byte % 20`` would favour the first 16 letters)."""
        letters: list[str] = []
        size = len(USER_CODE_ALPHABET)
        limit = 256 - 256 % size
        while len(letters) < USER_CODE_LENGTH:
            letters.extend(
                USER_CODE_ALPHABET[byte % size]
                for byte in self._ids.random_bytes(2 * USER_CODE_LENGTH)
                if byte < limit
            )
        return "".join(letters[:USER_CODE_LENGTH])

    async def decide(
        self,
        user_code: str,
        email: str,
        password: str,
        *,
        approve: bool,
        client_address: str = "",
    ) -> None:
        """A person signs in from ``client_address`` and approves or denies a user code.

        A wrong email or password counts against the code (5, then it is dead: 400), the
        email at that address (10 per 15 minutes) and the address (100 per 15 minutes);
        either of the last two limits refuses further attempts from that address with
        ``RateLimitedError`` (429) until the oldest counted failure leaves the window.
        """
        now = self._clock.now()
        code = normalize_user_code(user_code)
        # One key per address however it is typed, so padding or case cannot dodge the limit.
        key = email_key(email)
        if "\x00" in key:  # no account has one, and PostgreSQL text cannot hold it
            raise InvalidRequestError("wrong email or password")
        async with self._uow() as uow:
            grant = None
            if len(code) == USER_CODE_LENGTH and not set(code) - set(USER_CODE_ALPHABET):
                grant = await uow.device_grants.get_by_user_code(code, for_update=True)
            if grant is None or grant.is_expired(now) or grant.state is not GrantState.PENDING:
                raise InvalidRequestError("unknown or expired code")
            await _check_failure_limits(uow, key, client_address, now)
            account = await uow.accounts.get_by_email(key)
            if not await self._password_matches(account, password):
                failed = grant.failed_approvals + 1
                state = GrantState.DENIED if failed >= MAX_FAILED_PER_CODE else grant.state
                await uow.device_grants.update(
                    attrs.evolve(grant, failed_approvals=failed, state=state)
                )
                await uow.accounts.record_failed_login(key, client_address, now)
                await uow.commit()
                raise InvalidRequestError("wrong email or password")
            assert account is not None
            decided = GrantState.APPROVED if approve else GrantState.DENIED
            await uow.device_grants.update(
                attrs.evolve(grant, state=decided, account_id=account.id)
            )
            await uow.commit()

    async def exchange_device_code(self, device_code: str, client_id: str) -> AccessToken:
        """The token request of RFC 8628 section 3.4; errors as OAuth error codes."""
        if client_id != CLIENT_ID:
            raise OAuthError("invalid_client", "unknown client_id")
        now = self._clock.now()
        async with self._uow() as uow:
            grant = await uow.device_grants.get_by_device_code(
                hash_token(device_code), for_update=True
            )
            if grant is None or grant.client_id != client_id:
                raise OAuthError("invalid_grant", "unknown device code")
            if grant.is_expired(now):
                raise OAuthError("expired_token", "the device code has expired")
            # Final answers win over pacing: a client told to slow down would only poll again.
            if grant.state is GrantState.DENIED:
                raise OAuthError("access_denied", "the request was denied")
            if grant.state is GrantState.ISSUED:
                raise OAuthError("invalid_grant", "the device code was already used")
            polled_too_soon = grant.last_polled_at is not None and (
                now - grant.last_polled_at
            ) < timedelta(seconds=grant.interval)
            interval = grant.interval + SLOW_DOWN_STEP if polled_too_soon else grant.interval
            polled = attrs.evolve(grant, last_polled_at=now, interval=interval)
            if polled_too_soon:
                await uow.device_grants.update(polled)
                await uow.commit()
                raise OAuthError("slow_down", f"poll at most every {interval} seconds")
            if grant.state is GrantState.PENDING:
                await uow.device_grants.update(polled)
                await uow.commit()
                raise OAuthError("authorization_pending", "waiting for approval")
            token = format_token(TokenKind.IDP_ACCESS, self._ids.random_bytes(32))
            await uow.device_grants.update(
                attrs.evolve(
                    polled,
                    state=GrantState.ISSUED,
                    access_token_hash=hash_token(token),
                    access_expires_at=now + ACCESS_TOKEN_LIFETIME,
                )
            )
            await uow.commit()
        return AccessToken(token, int(ACCESS_TOKEN_LIFETIME.total_seconds()))

    # The authorization code grant with PKCE (RFC 6749 section 4.1, RFC 7636), for browsers.

    async def authorize(
        self,
        email: str,
        password: str,
        *,
        code_challenge: str,
        redirect_uri: str,
        client_address: str = "",
    ) -> str:
        """A person signs in on the authorization page: a single-use authorization code
        for ``WEB_CLIENT_ID``, bound to ``code_challenge`` (S256) and ``redirect_uri``,
        valid 60 seconds. Wrong credentials count against the same limits as device
        approvals (per email and address, per address): ``invalid_request`` or 429."""
        now = self._clock.now()
        key = email_key(email)
        if "\x00" in key:
            raise InvalidRequestError("wrong email or password")
        code = format_token(TokenKind.AUTHORIZATION_CODE, self._ids.random_bytes(32))
        async with self._uow() as uow:
            await _check_failure_limits(uow, key, client_address, now)
            account = await uow.accounts.get_by_email(key)
            if not await self._password_matches(account, password):
                await uow.accounts.record_failed_login(key, client_address, now)
                await uow.commit()
                raise InvalidRequestError("wrong email or password")
            assert account is not None
            # Stored beside device grants: an approved grant whose "device code" is the
            # authorization code bound to its challenge and redirect URI (no user code).
            await uow.device_grants.add(
                DeviceGrant(
                    id=self._ids.new_id(),
                    device_code_hash=_code_binding(code, code_challenge, redirect_uri),
                    user_code="",
                    client_id=WEB_CLIENT_ID,
                    created_at=now,
                    expires_at=now + AUTHORIZATION_CODE_LIFETIME,
                    interval=0,
                    state=GrantState.APPROVED,
                    account_id=account.id,
                )
            )
            await uow.commit()
        return code

    async def exchange_authorization_code(
        self, code: str, code_verifier: str, redirect_uri: str, client_id: str
    ) -> AccessToken:
        """The token request of RFC 6749 section 4.1.3 with RFC 7636's ``code_verifier``.
        A code is spent by its first exchange; a second one is refused and revokes the
        access token the first one gave (RFC 6749 section 4.1.2)."""
        if not hmac.compare_digest(client_id.encode(), WEB_CLIENT_ID.encode()):
            raise OAuthError("invalid_client", "unknown client_id")
        if not is_code_verifier(code_verifier):
            raise OAuthError(
                "invalid_request", "code_verifier must be 43 to 128 unreserved characters"
            )
        now = self._clock.now()
        binding = _code_binding(code, s256_challenge(code_verifier), redirect_uri)
        refused = OAuthError(
            "invalid_grant",
            "unknown, expired or used authorization code, or a code_verifier or"
            " redirect_uri that does not match it",
        )
        async with self._uow() as uow:
            grant = await uow.device_grants.get_by_device_code(binding, for_update=True)
            if grant is None or grant.client_id != WEB_CLIENT_ID:
                raise refused
            if grant.state is GrantState.ISSUED:
                # A replay, however late: what the first exchange gave is revoked, the
                # access token if still unspent and every session made from it.
                await uow.device_grants.update(attrs.evolve(grant, access_token_hash=None))
                revoked = await uow.sessions.revoke_from(grant_origin(grant.id), now)
                await uow.commit()
                logger.warning("authorization code replayed: %d sessions revoked", revoked)
                raise refused
            if grant.state is not GrantState.APPROVED or grant.is_expired(now):
                raise refused
            token = format_token(TokenKind.IDP_ACCESS, self._ids.random_bytes(32))
            await uow.device_grants.update(
                attrs.evolve(
                    grant,
                    state=GrantState.ISSUED,
                    access_token_hash=hash_token(token),
                    access_expires_at=now + ACCESS_TOKEN_LIFETIME,
                )
            )
            await uow.commit()
        return AccessToken(token, int(ACCESS_TOKEN_LIFETIME.total_seconds()))

    async def account_id(self, email: str) -> UUID | None:
        """The id of the account with this email, if any."""
        async with self._uow() as uow:
            account = await uow.accounts.get_by_email(email)
        return None if account is None else account.id


_T = TypeVar("_T")
HASHING_THREADS = max(1, (os.cpu_count() or 2) // 2)
_HASHING = ThreadPoolExecutor(HASHING_THREADS, thread_name_prefix="argon2")


async def _hashing(work: Callable[..., _T], *args: str) -> _T:
    """``work(*args)`` in the hashing pool: at most ``HASHING_THREADS`` argon2 computations
    at once in the process, the others queued."""
    return await asyncio.get_running_loop().run_in_executor(_HASHING, work, *args)


async def _check_failure_limits(
    uow: UnitOfWork, email_key: str, client_address: str, now: datetime
) -> None:
    """Refuse an attempt from an address that failed too often, for this email or at all
    (contract 13); ``Retry-After`` is when the oldest counted failure leaves the window."""
    since = now - FAILED_LOGIN_WINDOW
    limits = (
        (MAX_FAILED_PER_EMAIL, email_key, "too many failed attempts for this email"),
        (MAX_FAILED_PER_ADDRESS, None, "too many failed attempts from this address"),
    )
    for limit, email, message in limits:
        recent = await uow.accounts.recent_failed_logins(client_address, since, limit, email=email)
        if len(recent) >= limit:
            # The window includes its start: the failure still counts at that instant.
            wait = recent[-1] + FAILED_LOGIN_WINDOW - now
            raise RateLimitedError(
                f"{message}; wait and retry", retry_after=math.floor(wait.total_seconds()) + 1
            )
