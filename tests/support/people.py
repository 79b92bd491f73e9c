"""People, workspaces and machines set up through the async facade, with no HTTP: what the
use-case tests start from. Every step is a real use case (sign-in through the built-in
identity provider, workspace creation, invitations, switching), so a set-up is audited
like any other."""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qsl, unquote, urlsplit
from uuid import UUID

from strongroom.adapters.storage.local import URL_PREFIX, LocalDiskStorage
from strongroom.domain.artifacts import Artifact
from strongroom.domain.audit import AuditEvent
from strongroom.domain.backups import BackupChanges, BackupKind, RetentionPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driven.storage import PresignedRequest
from strongroom.ports.driving import Strongroom
from support.world import idp_token


async def sign_in(facade: Strongroom, email: str) -> Caller:
    """``email`` signed in (registered on first use): a caller scoped to no workspace."""
    issued = await facade.sessions.sign_in(await idp_token(facade, email))
    return await facade.access.authenticate(issued.token)


async def enter(facade: Strongroom, caller: Caller, workspace_id: UUID) -> Caller:
    """The person behind ``caller`` with a session switched to ``workspace_id``."""
    issued = await facade.sessions.switch(caller, workspace_id)
    return await facade.access.authenticate(issued.token)


async def workspace_admin(
    facade: Strongroom, email: str, name: str = "Acme"
) -> tuple[Caller, UUID]:
    """``email`` creates a workspace and enters it: their admin caller and its id."""
    person = await sign_in(facade, email)
    workspace = await facade.workspaces.create(person, name)
    return await enter(facade, person, workspace.id), workspace.id


async def join(
    facade: Strongroom, admin: Caller, workspace_id: UUID, email: str, role: str
) -> Caller:
    """``email`` invited by ``admin`` with ``role``, accepted and entered: their caller."""
    invitation = await facade.invitations.create(admin, workspace_id, email, role)
    person = await sign_in(facade, email)
    await facade.invitations.accept(person, invitation.id)
    return await enter(facade, person, workspace_id)


async def api_key(facade: Strongroom, admin: Caller, permissions: list[str]) -> Caller:
    """An API key of the admin's workspace holding ``permissions``: its caller."""
    issued = await facade.api_keys.create(admin, "robot", permissions)
    return await facade.access.authenticate(issued.token)


def retention(expire_after: str, lock_for: str) -> RetentionPolicy:
    """A retention policy from two ISO 8601 durations."""
    return RetentionPolicy(Duration.parse(expire_after), Duration.parse(lock_for))


async def active_manual(
    facade: Strongroom,
    admin: Caller,
    name: str = "Nightly",
    expire_after: str = "P30D",
    lock_for: str = "PT0S",
) -> UUID:
    """A manual backup of the admin's workspace made active with that retention: its id."""
    backup = await facade.backups.create(admin, admin.scoped_workspace(), name, BackupKind.MANUAL)
    policy = retention(expire_after, lock_for)
    await facade.backups.update(admin, backup.id, BackupChanges(retention=policy))
    return backup.id


async def audit_events(
    facade: Strongroom, admin: Caller, action: str | None = None
) -> list[AuditEvent]:
    """The audit events of the admin's workspace (newest first), of ``action`` if given."""
    page = await facade.audit.events(
        admin, admin.scoped_workspace(), AuditFilter(action=action), PageRequest(200)
    )
    return list(page.items)


def put_presigned(storage: LocalDiskStorage, request: PresignedRequest, content: bytes) -> None:
    """Send ``content`` to a presigned PUT of the local-disk storage, as a client would (its
    signature, expiry, size and digest checked by the storage itself)."""
    parts = urlsplit(request.url)
    key = unquote(parts.path.removeprefix(URL_PREFIX))
    grant = storage.verify("PUT", key, dict(parse_qsl(parts.query)))
    writer = storage.open_writer(grant)
    writer.write(content)
    writer.finish()


async def upload(
    facade: Strongroom,
    storage: LocalDiskStorage,
    caller: Caller,
    run_id: UUID,
    name: str,
    content: bytes,
) -> Artifact:
    """Announce an artifact of a run and send its bytes to the presigned URL (not yet
    confirmed): the pending artifact."""
    plan = await facade.artifacts.upload_url(
        caller, run_id, name, len(content), hashlib.sha256(content).hexdigest()
    )
    assert plan.request is not None
    put_presigned(storage, plan.request, content)
    return plan.artifact
