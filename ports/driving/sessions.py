"""Signing in, switching workspace, signing out, and who am I."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from strongroom.domain.errors import NotFoundError
from strongroom.domain.events import Recorded
from strongroom.domain.principals import Caller, Session
from strongroom.domain.tokens import TokenKind, format_token, hash_token
from strongroom.domain.users import User
from strongroom.ports.driven.identity import Identity
from strongroom.ports.driven.repositories import IntegrityViolationError
from strongroom.ports.driven.unit_of_work import UnitOfWork
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.idempotency import (
    IdempotencyKey,
    ResultForm,
    remember,
    replay_if_known,
    run_idempotent,
)
from strongroom.ports.driving.recording import by_caller

SWITCH_REFUSAL = "only a person's session can switch workspace"
SIGN_OUT_REFUSAL = "only a person's session can sign out; revoke keys instead"


@attrs.frozen
class IssuedSession:
    """A new session and its token (shown only once; ``None`` only in an Idempotency-Key
    replay whose sealed token can no longer be opened)."""

    token: str | None
    session: Session
    user: User

    @property
    def expires_at(self) -> datetime:
        """When the session ends."""
        return self.session.expires_at

    @property
    def workspace_id(self) -> UUID | None:
        """The workspace the session is scoped to."""
        return self.session.workspace_id


ISSUED_SESSION = ResultForm(IssuedSession, sealed="token")


class Sessions:
    """People's sessions."""

    def __init__(self, deps: Dependencies) -> None:
        self._deps = deps

    async def sign_in(
        self, idp_access_token: str, idempotency: IdempotencyKey | None = None
    ) -> IssuedSession:
        """Exchange an identity provider's access token for an unscoped session."""
        return await self.start_session(await self.verify(idp_access_token), idempotency)

    async def verify(self, idp_access_token: str) -> Identity:
        """The person an identity provider's access token vouches for;
        ``UnauthenticatedError`` if it is not valid (checked before anything else)."""
        return await self._deps.identity.verify_access_token(idp_access_token)

    async def replayed_exchange(
        self, idp_access_token: str, idempotency: IdempotencyKey | None
    ) -> IssuedSession | None:
        """The first answer to ``POST /v1/auth/sessions`` with this provider token and
        Idempotency-Key, if there was one (contract 8 and 13): a token is spent by its
        exchange, so its replay is known by the token itself, before ``verify``."""
        if idempotency is None:
            return None
        owner = _token_owner(idp_access_token)
        now = self._deps.clock.now()
        return await replay_if_known(self._deps, owner, idempotency, now, ISSUED_SESSION)

    async def start_session(
        self,
        identity: Identity,
        idempotency: IdempotencyKey | None = None,
        idp_access_token: str | None = None,
    ) -> IssuedSession:
        """An unscoped session for a person the identity provider vouched for (``verify``).

        An Idempotency-Key is scoped to that person, so two people never share one; the
        answer is also kept under the exchanged ``idp_access_token`` when given, which
        ``replayed_exchange`` finds once the token is spent.
        """
        issued = await self._start_session(identity, idempotency)
        if idp_access_token is not None:
            owner = _token_owner(idp_access_token)
            now = self._deps.clock.now()
            await remember(self._deps, owner, idempotency, now, issued, ISSUED_SESSION)
        return issued

    async def _start_session(
        self, identity: Identity, idempotency: IdempotencyKey | None
    ) -> IssuedSession:
        now = self._deps.clock.now()
        owner = identity

        async def create(uow: UnitOfWork) -> IssuedSession:
            user = await uow.users.get_by_subject(identity.subject)
            if user is None:
                user = User(
                    self._deps.ids.new_id(), identity.email, identity.name, identity.subject, now
                )
                await uow.users.add(user)
            return await self._issue(uow, user, None, now, identity.grant)

        try:
            return await run_idempotent(self._deps, owner, idempotency, now, create, ISSUED_SESSION)
        except IntegrityViolationError:
            # Two first sign-ins of one person raced to create their user: the loser's
            # transaction is gone, and on a second try the user exists.
            return await run_idempotent(self._deps, owner, idempotency, now, create, ISSUED_SESSION)

    async def _issue(
        self,
        uow: UnitOfWork,
        user: User,
        workspace_id: UUID | None,
        now: datetime,
        origin: str | None,
    ) -> IssuedSession:
        """A new session; ``origin``: the identity provider's grant it comes from, which
        the provider may revoke it by (a replayed authorization code)."""
        token = format_token(TokenKind.SESSION, self._deps.ids.random_bytes(32))
        session = Session(
            self._deps.ids.new_id(),
            hash_token(token),
            user.id,
            workspace_id,
            now,
            now + self._deps.session_ttl,
        )
        await uow.sessions.add(session, origin)
        return IssuedSession(token, session, user)

    async def replayed_switch(
        self, session_token: str, idempotency: IdempotencyKey | None
    ) -> IssuedSession | None:
        """The first answer to ``POST /v1/auth/switch`` from this session with this
        Idempotency-Key, if there was one: the switch revoked the session, so its replay is
        known by the session's token, before authentication (contract 8 and 13)."""
        if idempotency is None:
            return None
        owner = _token_owner(session_token)
        now = self._deps.clock.now()
        return await replay_if_known(self._deps, owner, idempotency, now, ISSUED_SESSION)

    async def switch(
        self,
        caller: Caller,
        workspace_id: UUID,
        idempotency: IdempotencyKey | None = None,
        session_token: str | None = None,
    ) -> IssuedSession:
        """A new session scoped to ``workspace_id``; the caller's session is revoked. The
        answer is also kept under ``session_token`` when given (``replayed_switch``)."""
        issued = await self._switch(caller, workspace_id, idempotency)
        if session_token is not None:
            owner = _token_owner(session_token)
            now = self._deps.clock.now()
            await remember(self._deps, owner, idempotency, now, issued, ISSUED_SESSION)
        return issued

    async def _switch(
        self, caller: Caller, workspace_id: UUID, idempotency: IdempotencyKey | None
    ) -> IssuedSession:
        user = caller.person(SWITCH_REFUSAL)
        now = self._deps.clock.now()

        async def create(uow: UnitOfWork) -> IssuedSession:
            if await uow.memberships.get(workspace_id, user.id) is None:
                raise NotFoundError("workspace")
            # The new session comes from the same grant as the one it replaces.
            origin = await uow.sessions.origin_of(caller.credential_id)
            issued = await self._issue(uow, user, workspace_id, now, origin)
            await uow.sessions.revoke(caller.credential_id, now)
            switched = Recorded("session.switch", issued.session.id)
            uow.collect(by_caller(self._deps, caller, workspace_id, switched))
            return issued

        return await run_idempotent(self._deps, caller, idempotency, now, create, ISSUED_SESSION)

    async def sign_out(self, caller: Caller) -> None:
        """Revoke the session the caller used (and only that one)."""
        caller.person(SIGN_OUT_REFUSAL)
        async with self._deps.uow() as uow:
            await uow.sessions.revoke(caller.credential_id, self._deps.clock.now())
            await uow.commit()


def _token_owner(idp_access_token: str) -> Identity:
    """Who a token's holder is for Idempotency-Keys once the token is spent or revoked: that
    token (its digest), which only its holder can present again."""
    return Identity(subject=f"token {hash_token(idp_access_token)}", email="", name="")
