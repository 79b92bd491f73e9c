"""API keys and workers through the facade: tokens shown once, permissions within the
creator's, revocation and rotation effective at once, quotas and tenant scoping."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.domain.errors import (
    InvalidStateError,
    MissingPermissionError,
    NotFoundError,
    QuotaExceededError,
    UnauthenticatedError,
    ValidationFailedError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.permissions import WORKER_PERMISSIONS, Permission
from strongroom.domain.principals import Actor, PrincipalType
from strongroom.domain.quotas import QuotaResource
from strongroom.ports.driving import Strongroom
from support.people import audit_events, join, workspace_admin


class TestApiKeys:
    """API keys: a fixed subset of their creator's permissions."""

    async def test_a_key_authenticates_with_its_permissions(self, facade: Strongroom) -> None:
        """The token authenticates as the key in its workspace, with exactly its
        permissions; the list shows the key but no token; the creation is audited."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        issued = await facade.api_keys.create(ada, "ci", ["backups:read", "backups:write"])
        key = await facade.access.authenticate(issued.token)
        assert key.actor == Actor(PrincipalType.API_KEY, issued.key.id)
        assert key.workspace_id == wid
        assert key.permissions == {Permission.BACKUPS_READ, Permission.BACKUPS_WRITE}
        listed = (await facade.api_keys.list(ada, PageRequest())).items
        assert [k.id for k in listed] == [issued.key.id]
        assert issued.token not in repr(listed)
        [event] = await audit_events(facade, ada, "api_key.create")
        assert event.changes is not None
        assert event.changes["permissions"] == Change(None, ["backups:read", "backups:write"])

    async def test_revocation_takes_effect_at_once(self, facade: Strongroom) -> None:
        """A revoked key's token no longer authenticates; ``api_key.delete`` is written."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        issued = await facade.api_keys.create(ada, "ci", ["backups:read"])
        await facade.api_keys.revoke(ada, issued.key.id)
        with pytest.raises(UnauthenticatedError):
            await facade.access.authenticate(issued.token)
        [event] = await audit_events(facade, ada, "api_key.delete")
        assert event.target_id == str(issued.key.id)

    async def test_an_expired_key_is_unauthenticated(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A key works until ``expires_at``, not after; a past expiry is refused."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        later = clock.now() + timedelta(hours=1)
        issued = await facade.api_keys.create(ada, "ci", ["backups:read"], later)
        await facade.access.authenticate(issued.token)
        clock.advance(timedelta(hours=1))
        with pytest.raises(UnauthenticatedError):
            await facade.access.authenticate(issued.token)
        with pytest.raises(ValidationFailedError, match="future"):
            await facade.api_keys.create(ada, "old", ["backups:read"], clock.now())

    async def test_nobody_makes_a_key_beyond_their_permissions(self, facade: Strongroom) -> None:
        """A key given ``api_keys:write`` alone cannot mint a key with more (403 naming
        the permission, audited as denied)."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        minter = await facade.access.authenticate(
            (await facade.api_keys.create(ada, "minter", ["api_keys:write"])).token
        )
        with pytest.raises(MissingPermissionError, match="backups:read"):
            await facade.api_keys.create(minter, "wider", ["backups:read"])
        events = await audit_events(facade, ada, "api_key.create")
        assert [e.outcome for e in events if e.actor == minter.actor] == [Outcome.DENIED]

    async def test_a_member_cannot_make_keys(self, facade: Strongroom) -> None:
        """``api_keys:write`` is not a member's."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        max_ = await join(facade, ada, wid, "max@example.com", "member")
        with pytest.raises(MissingPermissionError, match="api_keys:write"):
            await facade.api_keys.create(max_, "mine", ["backups:read"])

    async def test_a_foreign_key_is_not_found(self, facade: Strongroom) -> None:
        """Another workspace's key can be neither read nor revoked, and keeps working."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        theirs = await facade.api_keys.create(bob, "ci", ["backups:read"])
        for key_id in (theirs.key.id, uuid4()):
            with pytest.raises(NotFoundError, match="API key"):
                await facade.api_keys.get(ada, key_id)
            with pytest.raises(NotFoundError, match="API key"):
                await facade.api_keys.revoke(ada, key_id)
        await facade.access.authenticate(theirs.token)

    async def test_the_quota_bounds_keys(self, facade: Strongroom) -> None:
        """``api_keys_per_workspace`` refuses the key beyond the limit."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.API_KEYS_PER_WORKSPACE, 1)
        await facade.api_keys.create(ada, "one", ["backups:read"])
        with pytest.raises(QuotaExceededError, match="api_keys_per_workspace"):
            await facade.api_keys.create(ada, "two", ["backups:read"])


class TestWorkers:
    """Workers: machine executors of local backups."""

    async def test_a_worker_holds_the_worker_permissions(self, facade: Strongroom) -> None:
        """Its token authenticates as the worker with the fixed worker permissions."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack")
        worker = await facade.access.authenticate(issued.token)
        assert (worker.workspace_id, worker.permissions) == (wid, WORKER_PERMISSIONS)
        assert worker.worker_id == issued.worker.id

    async def test_rotation_replaces_the_token(self, facade: Strongroom) -> None:
        """After a rotation the old token fails and the new one works; the event records
        only that it happened."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack")
        rotated = await facade.workers.rotate(ada, issued.worker.id)
        with pytest.raises(UnauthenticatedError):
            await facade.access.authenticate(issued.token)
        assert (await facade.access.authenticate(rotated.token)).worker_id == issued.worker.id
        [event] = await audit_events(facade, ada, "worker.rotate")
        assert not event.changes

    async def test_an_assigned_worker_cannot_be_deleted(self, facade: Strongroom) -> None:
        """Deleting a worker a backup is assigned to is ``invalid_state``; unassigned, it
        goes, and its token with it."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack")
        backup = await facade.backups.create(ada, wid, "Laptop", BackupKind.LOCAL)
        await facade.backups.update(ada, backup.id, BackupChanges(worker_id=issued.worker.id))
        with pytest.raises(InvalidStateError, match="assigned"):
            await facade.workers.delete(ada, issued.worker.id)
        await facade.backups.delete(ada, backup.id)
        await facade.workers.delete(ada, issued.worker.id)
        with pytest.raises(UnauthenticatedError):
            await facade.access.authenticate(issued.token)

    async def test_a_foreign_worker_is_not_found(self, facade: Strongroom) -> None:
        """Another workspace's worker can be neither read, rotated nor deleted."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        theirs = await facade.workers.create(bob, "rack")
        for operation in (facade.workers.get, facade.workers.rotate, facade.workers.delete):
            with pytest.raises(NotFoundError, match="worker"):
                await operation(ada, theirs.worker.id)
        await facade.access.authenticate(theirs.token)

    async def test_the_quota_bounds_workers(self, facade: Strongroom) -> None:
        """``workers_per_workspace`` refuses the worker beyond the limit."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.WORKERS_PER_WORKSPACE, 1)
        await facade.workers.create(ada, "one")
        with pytest.raises(QuotaExceededError, match="workers_per_workspace"):
            await facade.workers.create(ada, "two")

    async def test_a_worker_cannot_manage_workers(self, facade: Strongroom) -> None:
        """A worker's credential holds no ``workers:write``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        worker = await facade.access.authenticate((await facade.workers.create(ada, "rack")).token)
        with pytest.raises(MissingPermissionError, match="workers:write"):
            await facade.workers.create(worker, "another")
