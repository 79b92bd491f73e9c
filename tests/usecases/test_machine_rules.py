"""Machine credential rules through the facade: what keys and workers may do and where,
quotas and their usage, billing, revocation, rotation and deletion effective at once, last
use recorded at most once a minute, and no secret in the audit trail or the logs.

Moved down from ``tests/http/test_machine_credentials.py``, which keeps the wire shapes,
the token formats on the wire, the status codes and the stored replays."""

from __future__ import annotations

import logging
from datetime import timedelta
from uuid import UUID

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.backups import BackupChanges, BackupKind
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    BillingRestrictedError,
    ForbiddenError,
    MissingPermissionError,
    NotFoundError,
    QuotaExceededError,
    UnauthenticatedError,
    ValidationFailedError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import QuotaResource
from strongroom.ports.driving import Strongroom
from support.people import audit_events, join, retention, workspace_admin

SECOND = timedelta(seconds=1)


async def key_of(facade: Strongroom, admin: Caller, permissions: list[str]) -> tuple[Caller, str]:
    """A new API key of the admin's workspace: its caller and token."""
    issued = await facade.api_keys.create(admin, "robot", permissions)
    return await facade.access.authenticate(issued.token), issued.token


async def usage(facade: Strongroom, admin: Caller, resource: QuotaResource) -> int:
    """The usage of ``resource`` in the admin's workspace."""
    quotas = await facade.workspaces.quotas(admin, admin.scoped_workspace())
    (entry,) = [q for q in quotas if q.resource is resource]
    return entry.usage


async def outcomes(facade: Strongroom, admin: Caller, action: str) -> list[Outcome]:
    """The outcomes of ``action``'s events, newest first."""
    return [event.outcome for event in await audit_events(facade, admin, action)]


class TestApiKeys:
    """API keys: minting, quotas, billing, revocation, last use, secrets."""

    async def test_a_key_cannot_mint_a_wider_key(self, facade: Strongroom) -> None:
        """A key with ``api_keys:write`` and ``backups:read`` is refused a key with
        ``artifacts:delete`` (named, audited as the key, denied) but mints a narrower one."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        minter, _ = await key_of(facade, ada, ["api_keys:write", "backups:read"])
        with pytest.raises(MissingPermissionError, match="missing permission artifacts:delete"):
            await facade.api_keys.create(minter, "wider", ["backups:read", "artifacts:delete"])
        await facade.api_keys.create(minter, "narrower", ["backups:read"])
        events = await audit_events(facade, ada, "api_key.create")
        denied = [e for e in events if e.outcome is Outcome.DENIED]
        assert [e.actor for e in denied] == [minter.actor]

    async def test_a_members_refused_key_is_audited_as_denied(self, facade: Strongroom) -> None:
        """``member`` lacks ``api_keys:write``: refused naming it, one denied event."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        mia = await join(facade, ada, wid, "mia@example.com", "member")
        with pytest.raises(MissingPermissionError, match="missing permission api_keys:write"):
            await facade.api_keys.create(mia, "x", [])
        assert await outcomes(facade, ada, "api_key.create") == [Outcome.DENIED]

    async def test_the_quota_refuses_the_key_beyond_it_and_counts_keys(
        self, facade: Strongroom
    ) -> None:
        """Limit 2: the third key is ``quota_exceeded`` naming the resource and 2; the
        usage is 2."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.API_KEYS_PER_WORKSPACE, 2)
        for name in ("one", "two"):
            await facade.api_keys.create(ada, name, [])
        with pytest.raises(QuotaExceededError, match="api_keys_per_workspace is limited to 2"):
            await facade.api_keys.create(ada, "third", [])
        assert await usage(facade, ada, QuotaResource.API_KEYS_PER_WORKSPACE) == 2

    async def test_a_blocked_workspace_refuses_new_keys(self, facade: Strongroom) -> None:
        """``billing_restricted`` naming ``blocked``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError, match="blocked"):
            await facade.api_keys.create(ada, "x", [])

    async def test_a_past_expiry_is_validation_failed(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """An ``expires_at`` in the past is refused."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        with pytest.raises(ValidationFailedError):
            await facade.api_keys.create(ada, "ok", [], clock.now() - timedelta(days=1))

    async def test_the_audit_event_and_the_logs_hold_no_secret(
        self, facade: Strongroom, caplog: pytest.LogCaptureFixture
    ) -> None:
        """``api_key.create`` names the key and its permissions, never the token."""
        caplog.set_level(logging.DEBUG)
        ada, _ = await workspace_admin(facade, "ada@example.com")
        issued = await facade.api_keys.create(ada, "ci", ["backups:read"])
        [event] = await audit_events(facade, ada, "api_key.create")
        assert (event.target_type, event.target_id) == ("api_key", str(issued.key.id))
        assert event.changes is not None
        assert event.changes["permissions"] == Change(None, ["backups:read"])
        assert issued.token not in repr(event)
        assert issued.token not in caplog.text

    async def test_a_revoked_key_is_gone(self, facade: Strongroom) -> None:
        """After revocation the token fails, the key is not found to read or revoke again,
        and one successful ``api_key.delete`` is written."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        issued = await facade.api_keys.create(ada, "ci", ["backups:read"])
        await facade.access.authenticate(issued.token)
        await facade.api_keys.revoke(ada, issued.key.id)
        with pytest.raises(UnauthenticatedError):
            await facade.access.authenticate(issued.token)
        with pytest.raises(NotFoundError):
            await facade.api_keys.get(ada, issued.key.id)
        with pytest.raises(NotFoundError):
            await facade.api_keys.revoke(ada, issued.key.id)
        assert await outcomes(facade, ada, "api_key.delete") == [Outcome.SUCCESS]

    async def test_last_use_is_recorded_at_most_once_a_minute(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """The first use records it; 30 seconds later nothing moves; 61 seconds after the
        first, it moves again."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        issued = await facade.api_keys.create(ada, "ci", ["backups:read"])

        async def last_used() -> object:
            return (await facade.api_keys.get(ada, issued.key.id)).last_used_at

        assert await last_used() is None
        await facade.access.authenticate(issued.token)
        first = await last_used()
        assert first == clock.now()
        clock.advance(30 * SECOND)
        await facade.access.authenticate(issued.token)
        assert await last_used() == first
        clock.advance(31 * SECOND)
        await facade.access.authenticate(issued.token)
        assert await last_used() == clock.now()

    async def test_tokens_that_only_look_right_are_refused(self, facade: Strongroom) -> None:
        """A changed checksum or a changed body (an unknown key): unauthenticated."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        token = (await facade.api_keys.create(ada, "ci", [])).token
        flipped = token[:-1] + ("A" if token[-1] != "A" else "B")
        forged = token[:10] + ("a" if token[10] != "a" else "b") + token[11:]
        for wrong in (flipped, forged):
            with pytest.raises(UnauthenticatedError):
                await facade.access.authenticate(wrong)


class TestMachinesActOnlyInTheirWorkspace:
    """A machine credential: any other workspace does not exist; person-only use cases
    are refused."""

    async def test_another_workspace_of_the_creator_is_not_found(self, facade: Strongroom) -> None:
        """Ada belongs to a second workspace; her key still gets ``not_found`` there, never
        ``wrong_workspace``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        key, _ = await key_of(facade, ada, ["workspaces:read", "backups:read"])
        second = await facade.workspaces.create(ada, "Second")
        assert (await facade.workspaces.get(key, wid)).id == wid
        with pytest.raises(NotFoundError):
            await facade.workspaces.get(key, second.id)
        with pytest.raises(NotFoundError):
            await facade.backups.list_in(key, second.id, PageRequest())

    async def test_person_only_use_cases_refuse_machines(self, facade: Strongroom) -> None:
        """Listing or creating workspaces, switching, signing out: ``forbidden`` for a key
        holding every permission and for a worker."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        every, _ = await key_of(facade, ada, [p.value for p in Permission])
        worker = await facade.access.authenticate((await facade.workers.create(ada, "rack")).token)
        for machine in (every, worker):
            with pytest.raises(ForbiddenError):
                await facade.workspaces.memberships(machine, PageRequest())
            with pytest.raises(ForbiddenError):
                await facade.workspaces.create(machine, "X")
            with pytest.raises(ForbiddenError):
                await facade.sessions.switch(machine, wid)
            with pytest.raises(ForbiddenError):
                await facade.sessions.sign_out(machine)

    async def test_deleting_the_workspace_ends_its_keys_and_workers(
        self, facade: Strongroom
    ) -> None:
        """Keys and workers of a deleted workspace no longer authenticate."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        _, key = await key_of(facade, ada, [])
        worker = (await facade.workers.create(ada, "rack")).token
        await facade.workspaces.delete(ada, wid)
        for token in (key, worker):
            with pytest.raises(UnauthenticatedError):
                await facade.access.authenticate(token)


class TestWorkers:
    """Workers: rotation, deletion, quota, tenant scope, who may write them."""

    async def test_rotation_keeps_the_id_and_no_token_is_audited(self, facade: Strongroom) -> None:
        """The rotated worker keeps its id with a new token; neither token is in the
        event."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack")
        rotated = await facade.workers.rotate(ada, issued.worker.id)
        assert rotated.worker.id == issued.worker.id
        assert rotated.token != issued.token
        [event] = await audit_events(facade, ada, "worker.rotate")
        assert rotated.token not in repr(event)
        assert issued.token not in repr(event)

    async def test_a_deleted_worker_is_gone(self, facade: Strongroom) -> None:
        """Its token fails; reading or rotating it is ``not_found``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack")
        await facade.workers.delete(ada, issued.worker.id)
        with pytest.raises(UnauthenticatedError):
            await facade.access.authenticate(issued.token)
        for operation in (facade.workers.get, facade.workers.rotate):
            with pytest.raises(NotFoundError):
                await operation(ada, issued.worker.id)

    async def test_the_quota_refuses_the_worker_beyond_it_and_counts_workers(
        self, facade: Strongroom
    ) -> None:
        """Limit 1: the second is ``quota_exceeded`` naming the resource and 1; usage 1."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.WORKERS_PER_WORKSPACE, 1)
        await facade.workers.create(ada, "w1")
        with pytest.raises(QuotaExceededError, match="workers_per_workspace is limited to 1"):
            await facade.workers.create(ada, "w2")
        assert await usage(facade, ada, QuotaResource.WORKERS_PER_WORKSPACE) == 1

    async def test_another_workspaces_worker_cannot_be_assigned(self, facade: Strongroom) -> None:
        """Bob's worker is no worker of Ada's: assigning it is ``validation_failed``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        theirs = await facade.workers.create(bob, "rack")
        backup = await facade.backups.create(ada, wid, "files", BackupKind.LOCAL)
        with pytest.raises(ValidationFailedError):
            await facade.backups.update(ada, backup.id, BackupChanges(worker_id=theirs.worker.id))

    async def test_a_viewer_reads_but_cannot_write_workers(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """A viewer lists workers; creating, rotating and deleting are refused naming
        ``workers:write``, each audited as denied."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack")
        vic = await join(facade, ada, wid, "vic@example.com", "viewer")
        assert [w.id for w in (await facade.workers.list(vic, PageRequest())).items] == [
            issued.worker.id
        ]
        clock.advance(SECOND)
        writes = (
            facade.workers.create(vic, "w"),
            facade.workers.rotate(vic, issued.worker.id),
            facade.workers.delete(vic, issued.worker.id),
        )
        for write in writes:
            with pytest.raises(MissingPermissionError, match="missing permission workers:write"):
                await write
        assert {
            action: await outcomes(facade, ada, action)
            for action in ("worker.create", "worker.rotate", "worker.delete")
        } == {
            "worker.create": [Outcome.DENIED, Outcome.SUCCESS],
            "worker.rotate": [Outcome.DENIED],
            "worker.delete": [Outcome.DENIED],
        }

    async def test_a_worker_sees_no_other_workers_backup(self, facade: Strongroom) -> None:
        """A backup assigned to another worker, or to none, is ``not_found`` to it; the
        list holds its own only."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        ids = []
        for name in ("mine", "other"):
            issued = await facade.workers.create(ada, name)
            backup = await facade.backups.create(ada, wid, name, BackupKind.LOCAL)
            await facade.backups.update(ada, backup.id, BackupChanges(worker_id=issued.worker.id))
            ids.append((issued.token, backup.id))
        unassigned = await facade.backups.create(ada, wid, "unassigned", BackupKind.LOCAL)
        worker = await facade.access.authenticate(ids[0][0])
        assert (await facade.backups.get(worker, ids[0][1])).name == "mine"
        for backup_id in (ids[1][1], unassigned.id):
            with pytest.raises(NotFoundError):
                await facade.backups.get(worker, backup_id)
        page = await facade.backups.list_in(worker, wid, PageRequest())
        assert [b.id for b in page.items] == [ids[0][1]]

    async def test_a_stolen_worker_credential_changes_nothing(self, facade: Strongroom) -> None:
        """Changing, pausing or deleting its own backup, deleting the workspace, reading
        keys, creating workers: refused naming the permission; the backup is unchanged."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack")
        backup = await facade.backups.create(ada, wid, "assigned", BackupKind.LOCAL)
        changes = BackupChanges(worker_id=issued.worker.id, retention=retention("P30D", "PT0S"))
        assigned = await facade.backups.update(ada, backup.id, changes)
        assert assigned.state == "active"
        worker = await facade.access.authenticate(issued.token)
        bid: UUID = backup.id
        refusals = (
            (facade.backups.update(worker, bid, BackupChanges(name="x")), "backups:write"),
            (facade.backups.pause(worker, bid), "backups:write"),
            (facade.backups.delete(worker, bid), "backups:write"),
            (facade.workspaces.delete(worker, wid), "workspaces:write"),
            (facade.api_keys.list(worker, PageRequest()), "api_keys:read"),
            (facade.workers.create(worker, "w"), "workers:write"),
        )
        for call, slug in refusals:
            with pytest.raises(MissingPermissionError, match=f"missing permission {slug}"):
                await call
        assert (await facade.backups.get(worker, bid)).name == "assigned"
