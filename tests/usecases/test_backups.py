"""Backup use cases through the facade: create, list, read, change, pause, resume, delete;
the kind rules, activation and write-once retention as a whole change (refused changes
leave the stored backup as it was); authorization, tenant scoping, quota, billing, audit."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest

from strongroom.adapters.memory.services import ManualClock
from strongroom.domain.audit import Change, Outcome
from strongroom.domain.backups import (
    BackupChanges,
    BackupKind,
    BackupState,
    CustomerS3Destination,
    PostgresSource,
    S3Source,
    Schedule,
    UnsupportedSource,
)
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    BillingRestrictedError,
    LockExceedsExpiryError,
    MissingPermissionError,
    NameTakenError,
    NotFoundError,
    NoWorkspaceSelectedError,
    QuotaExceededError,
    RetentionImmutableError,
    ValidationFailedError,
    WrongWorkspaceError,
)
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Actor, PrincipalType
from strongroom.domain.quotas import QuotaResource
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.backups import CREATE_BACKUP
from support.people import (
    active_manual,
    api_key,
    audit_events,
    join,
    retention,
    sign_in,
    workspace_admin,
)

S3 = S3Source(endpoint="https://s3.example.com:9000", bucket="prod-data")
S3_KEYS = {"access_key_id": "AKIA-ID-0d1e2f", "secret_access_key": "s3-secret-9f8e7d6c"}
PG = PostgresSource(host="db.example.com", port=5432, database="app")
PG_KEYS = {"username": "backup-user", "password": "pg-secret-5a4b3c2d"}
CUSTOMER_S3 = CustomerS3Destination(
    endpoint="https://minio.customer.example", bucket="vault", prefix="strongroom/"
)
DESTINATION_KEYS = {"access_key_id": "DEST-ID-77aa", "secret_access_key": "dest-secret-1q2w3e4r"}
SCHEDULE = Schedule("0 3 * * *", "Europe/Paris")
CLOUD_COMPLETE: dict[str, Any] = {
    "source": S3,
    "credentials": S3_KEYS,
    "retention": retention("P30D", "P7D"),
}
EVERY_PAGE = PageRequest(200)
SECOND = timedelta(seconds=1)


async def names_in(facade: Strongroom, workspace_id: UUID, admin: Any) -> list[str]:
    """The names of the workspace's backups, newest first."""
    page = await facade.backups.list_in(admin, workspace_id, EVERY_PAGE)
    return [backup.name for backup in page.items]


class TestCreate:
    """``backups.create``: a draft, audited, within the workspace's name space and quota."""

    async def test_creates_an_audited_draft(self, facade: Strongroom) -> None:
        """A new backup is a draft with nothing configured; ``backup.create`` names it and
        the person who made it."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "  Nightly  ", BackupKind.CLOUD)
        assert (backup.name, backup.kind, backup.state) == ("Nightly", "cloud", "draft")
        assert (backup.source, backup.retention, backup.paused) == (None, None, False)
        assert await facade.backups.get(ada, backup.id) == backup
        [event] = await audit_events(facade, ada, "backup.create")
        assert event.actor == ada.actor
        assert (event.target_id, event.outcome) == (str(backup.id), Outcome.SUCCESS)
        assert event.changes is not None
        assert event.changes["name"] == Change(None, "Nightly")

    @pytest.mark.parametrize("second", ["Nightly", "NIGHTLY", "  nightly "])
    async def test_a_name_is_taken_in_any_case(self, facade: Strongroom, second: str) -> None:
        """A name already used in the workspace, in any case, is ``name_taken``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        with pytest.raises(NameTakenError):
            await facade.backups.create(ada, wid, second, BackupKind.CLOUD)
        assert await names_in(facade, wid, ada) == ["Nightly"]

    async def test_names_are_unique_per_workspace_only(self, facade: Strongroom) -> None:
        """Another workspace may use the same name."""
        ada, acme = await workspace_admin(facade, "ada@example.com")
        bob, globex = await workspace_admin(facade, "bob@example.com", "Globex")
        await facade.backups.create(ada, acme, "Nightly", BackupKind.MANUAL)
        theirs = await facade.backups.create(bob, globex, "Nightly", BackupKind.MANUAL)
        assert theirs.workspace_id == globex

    async def test_the_quota_refuses_the_backup_beyond_the_limit(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """With a limit of 2 the third is ``quota_exceeded`` naming the resource and limit;
        deleting one frees its place."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.BACKUPS_PER_WORKSPACE, 2)
        first = await facade.backups.create(ada, wid, "one", BackupKind.MANUAL)
        await facade.backups.create(ada, wid, "two", BackupKind.MANUAL)
        with pytest.raises(QuotaExceededError, match="backups_per_workspace is limited to 2"):
            await facade.backups.create(ada, wid, "three", BackupKind.MANUAL)
        await facade.backups.delete(ada, first.id)
        clock.advance(SECOND)
        await facade.backups.create(ada, wid, "three", BackupKind.MANUAL)
        assert await names_in(facade, wid, ada) == ["three", "two"]

    async def test_the_quota_comes_before_the_name(self, facade: Strongroom) -> None:
        """A full workspace answers ``quota_exceeded`` even for a duplicate name."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.BACKUPS_PER_WORKSPACE, 1)
        await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        with pytest.raises(QuotaExceededError):
            await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)

    async def test_billing_comes_before_the_quota(self, facade: Strongroom) -> None:
        """A blocked workspace at its quota is ``billing_restricted``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_quota(wid, QuotaResource.BACKUPS_PER_WORKSPACE, 1)
        await facade.backups.create(ada, wid, "one", BackupKind.MANUAL)
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError, match="blocked"):
            await facade.backups.create(ada, wid, "two", BackupKind.MANUAL)

    async def test_a_grant_is_taken_as_proof(self, facade: Strongroom) -> None:
        """A ``Grant`` from ``access.authorize`` creates like the caller it was made for."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        grant = await facade.access.authorize(ada, CREATE_BACKUP, workspace_id=wid)
        backup = await facade.backups.create(grant.caller, wid, "Nightly", BackupKind.MANUAL)
        assert backup.workspace_id == wid


class TestAuthorization:
    """Who may do what to backups, and what a refusal leaves behind."""

    async def test_a_viewer_reads_but_cannot_write(self, facade: Strongroom) -> None:
        """A viewer lists and reads; a write is ``missing permission backups:write``,
        audited as denied with the viewer as actor, and nothing changes."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        vera = await join(facade, ada, wid, "vera@example.com", "viewer")
        assert await facade.backups.get(vera, backup.id) == backup
        assert await names_in(facade, wid, vera) == ["Nightly"]
        with pytest.raises(MissingPermissionError, match="backups:write"):
            await facade.backups.update(vera, backup.id, BackupChanges(name="Mine"))
        with pytest.raises(MissingPermissionError):
            await facade.backups.delete(vera, backup.id)
        assert await facade.backups.get(ada, backup.id) == backup
        denied = [e for e in await audit_events(facade, ada) if e.outcome is Outcome.DENIED]
        assert sorted((e.action, e.actor, e.target_id) for e in denied) == [
            ("backup.delete", vera.actor, str(backup.id)),
            ("backup.update", vera.actor, str(backup.id)),
        ]

    async def test_a_member_writes(self, facade: Strongroom) -> None:
        """The built-in ``member`` role holds ``backups:write``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        max_ = await join(facade, ada, wid, "max@example.com", "member")
        backup = await facade.backups.create(max_, wid, "Nightly", BackupKind.MANUAL)
        assert backup.workspace_id == wid

    async def test_an_api_key_acts_within_its_permissions(self, facade: Strongroom) -> None:
        """A key with ``backups:read`` lists; creating is refused for ``backups:write``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        reader = await api_key(facade, ada, ["backups:read"])
        assert await names_in(facade, wid, reader) == ["Nightly"]
        with pytest.raises(MissingPermissionError, match="backups:write"):
            await facade.backups.create(reader, wid, "Weekly", BackupKind.MANUAL)

    async def test_an_unscoped_session_selects_a_workspace_first(self, facade: Strongroom) -> None:
        """A signed-in person who entered no workspace is told to select one."""
        _, wid = await workspace_admin(facade, "ada@example.com")
        unscoped = await sign_in(facade, "ada@example.com")
        with pytest.raises(NoWorkspaceSelectedError, match="select a workspace first"):
            await facade.backups.create(unscoped, wid, "Nightly", BackupKind.MANUAL)

    async def test_another_workspace_of_the_caller_is_wrong_workspace(
        self, facade: Strongroom
    ) -> None:
        """Naming another workspace Ada belongs to is ``wrong_workspace``."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        person = await sign_in(facade, "ada@example.com")
        second = await facade.workspaces.create(person, "Second")
        with pytest.raises(WrongWorkspaceError):
            await facade.backups.list_in(ada, second.id, EVERY_PAGE)


class TestTenantScoping:
    """Another workspace's backup is indistinguishable from one that does not exist."""

    @pytest.mark.parametrize("operation", ["get", "update", "pause", "resume", "delete"])
    async def test_a_foreign_backup_is_not_found(self, facade: Strongroom, operation: str) -> None:
        """Bob's admin gets ``backup not found`` for Ada's backup, as for a random id; Ada's
        backup is unchanged."""
        ada, acme = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        backup = await facade.backups.create(ada, acme, "Nightly", BackupKind.MANUAL)
        arguments: dict[str, tuple[Any, ...]] = {"update": (BackupChanges(name="Stolen"),)}
        call = getattr(facade.backups, operation)
        for target in (backup.id, uuid4()):
            with pytest.raises(NotFoundError, match="backup not found"):
                await call(bob, target, *arguments.get(operation, ()))
        assert await facade.backups.get(ada, backup.id) == backup

    async def test_a_foreign_workspace_is_not_found(self, facade: Strongroom) -> None:
        """Creating in or listing a workspace Ada does not belong to is 404."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        _, globex = await workspace_admin(facade, "bob@example.com", "Globex")
        for wid in (globex, uuid4()):
            with pytest.raises(NotFoundError, match="workspace"):
                await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
            with pytest.raises(NotFoundError, match="workspace"):
                await facade.backups.list_in(ada, wid, EVERY_PAGE)

    async def test_lists_only_the_workspaces_backups_newest_first(
        self, facade: Strongroom, clock: ManualClock
    ) -> None:
        """The list holds this workspace's backups only, newest first."""
        ada, acme = await workspace_admin(facade, "ada@example.com")
        bob, globex = await workspace_admin(facade, "bob@example.com", "Globex")
        for name in ("first", "second", "third"):
            await facade.backups.create(ada, acme, name, BackupKind.MANUAL)
            clock.advance(SECOND)
        await facade.backups.create(bob, globex, "elsewhere", BackupKind.MANUAL)
        assert await names_in(facade, acme, ada) == ["third", "second", "first"]


class TestKindRules:
    """The kind rules as a use case applies them: refusals are ``validation_failed`` with
    the rule in the message, and the stored backup is unchanged (moved from the HTTP
    tests, which keep the cases where the wire shape decides)."""

    @pytest.mark.parametrize(
        ("kind", "fields", "fragment"),
        [
            ("manual", {"worker_id": uuid4()}, "worker_id is allowed only on a local"),
            ("cloud", {"worker_id": uuid4()}, "worker_id is allowed only on a local"),
            ("local", {"worker_id": uuid4()}, "worker_id names no worker"),
            ("local", {"source": S3}, "source is refused on a local backup"),
            ("manual", {"source": PG}, "source is refused on a manual backup"),
            ("local", {"source": UnsupportedSource("ftp")}, "source is refused on a local backup"),
            ("local", {"credentials": S3_KEYS}, "credentials is refused on a local"),
            ("manual", {"credentials": PG_KEYS}, "credentials is refused on a manual"),
            ("manual", {"schedule": SCHEDULE}, "schedule is refused on a manual backup"),
            ("manual", {"schedule": None}, "schedule is refused on a manual backup"),
            ("cloud", {"source": UnsupportedSource("ftp")}, "source type ftp is not offered"),
            ("cloud", {"source": UnsupportedSource("gcs")}, "source type gcs is not offered"),
            ("cloud", {"source": UnsupportedSource("S3")}, "source type S3 is not offered"),
            ("cloud", {"source": S3, "credentials": PG_KEYS}, "access_key_id, secret_access_key"),
            ("cloud", {"source": PG, "credentials": S3_KEYS}, "password, username"),
            ("cloud", {"credentials": S3_KEYS}, "credentials need a source"),
            (
                "cloud",
                {"destination_credentials": DESTINATION_KEYS},
                "only to a customer_s3 destination",
            ),
            ("cloud", {"destination": CUSTOMER_S3}, "needs destination_credentials"),
        ],
    )
    async def test_refuses_what_the_kind_does_not_accept(
        self, facade: Strongroom, kind: str, fields: dict[str, Any], fragment: str
    ) -> None:
        """The spec's kind rules, and credentials of the other source type's shape."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        before = await facade.backups.create(ada, wid, "Nightly", BackupKind(kind))
        with pytest.raises(ValidationFailedError, match=fragment):
            await facade.backups.update(ada, before.id, BackupChanges(**fields))
        assert await facade.backups.get(ada, before.id) == before

    async def test_changing_the_source_type_needs_new_credentials(self, facade: Strongroom) -> None:
        """An s3 source with s3 credentials cannot become postgres without new credentials."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.CLOUD)
        await facade.backups.update(ada, backup.id, BackupChanges(source=S3, credentials=S3_KEYS))
        with pytest.raises(ValidationFailedError, match="new credentials"):
            await facade.backups.update(ada, backup.id, BackupChanges(source=PG))
        both = await facade.backups.update(
            ada, backup.id, BackupChanges(source=PG, credentials=PG_KEYS)
        )
        assert both.source == PG

    async def test_credentials_are_checked_against_the_stored_source(
        self, facade: Strongroom
    ) -> None:
        """Credentials sent alone must fit the source already stored."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.CLOUD)
        await facade.backups.update(ada, backup.id, BackupChanges(source=PG))
        with pytest.raises(ValidationFailedError, match="password, username"):
            await facade.backups.update(ada, backup.id, BackupChanges(credentials=S3_KEYS))
        stored = await facade.backups.update(ada, backup.id, BackupChanges(credentials=PG_KEYS))
        assert stored.has_credentials

    async def test_kind_rules_come_before_billing(self, facade: Strongroom) -> None:
        """A blocked workspace answers ``validation_failed`` for what the kind refuses."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(ValidationFailedError):
            await facade.backups.update(ada, backup.id, BackupChanges(schedule=SCHEDULE))


class TestActivation:
    """A backup becomes ``active`` in the change that completes its kind's configuration
    (moved from the HTTP tests)."""

    @pytest.mark.parametrize(("source", "credentials"), [(S3, S3_KEYS), (PG, PG_KEYS)])
    async def test_cloud_in_one_patch(
        self, facade: Strongroom, source: Any, credentials: dict[str, str]
    ) -> None:
        """Source, credentials and retention in one change make a cloud backup active."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.CLOUD)
        patched = await facade.backups.update(
            ada,
            backup.id,
            BackupChanges(
                source=source, credentials=credentials, retention=retention("P30D", "P7D")
            ),
        )
        assert patched.state is BackupState.ACTIVE
        assert patched.has_credentials is True
        assert patched.source is not None
        assert patched.source.type == source.type
        assert await facade.backups.get(ada, backup.id) == patched

    @pytest.mark.parametrize(
        "order",
        [
            ("source", "credentials", "retention"),
            ("retention", "source", "credentials"),
            ("source", "retention", "credentials"),
        ],
    )
    async def test_cloud_step_by_step(self, facade: Strongroom, order: tuple[str, ...]) -> None:
        """A cloud backup stays a draft until the change that supplies its last piece."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.CLOUD)
        states = [
            (
                await facade.backups.update(
                    ada, backup.id, BackupChanges(**{field: CLOUD_COMPLETE[field]})
                )
            ).state
            for field in order
        ]
        assert states == ["draft", "draft", "active"]
        assert (await facade.backups.get(ada, backup.id)).state == "active"

    @pytest.mark.parametrize("kind", ["manual", "cloud", "local"])
    async def test_drafts_stay_drafts_without_retention(
        self, facade: Strongroom, kind: str
    ) -> None:
        """Without retention no kind is complete."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind(kind))
        more: dict[str, Any] = {"source": S3, "credentials": S3_KEYS} if kind == "cloud" else {}
        changed = await facade.backups.update(ada, backup.id, BackupChanges(name="Renamed", **more))
        assert changed.state == "draft"

    async def test_local_needs_a_worker_of_the_workspace(self, facade: Strongroom) -> None:
        """A local backup with retention stays a draft; an unknown worker is refused and
        stores nothing; the workspace's own worker makes it active."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Laptop", BackupKind.LOCAL)
        kept = await facade.backups.update(
            ada, backup.id, BackupChanges(retention=retention("P30D", "P7D"))
        )
        assert kept.state == "draft"
        with pytest.raises(ValidationFailedError, match="names no worker"):
            await facade.backups.update(ada, backup.id, BackupChanges(worker_id=uuid4()))
        stored = await facade.backups.get(ada, backup.id)
        assert (stored.state, stored.worker_id) == ("draft", None)
        worker = (await facade.workers.create(ada, "rack")).worker
        active = await facade.backups.update(ada, backup.id, BackupChanges(worker_id=worker.id))
        assert (active.state, active.worker_id) == ("active", worker.id)

    async def test_another_workspaces_worker_names_no_worker(self, facade: Strongroom) -> None:
        """A worker of another workspace cannot be assigned: it names no worker here."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        bob, _ = await workspace_admin(facade, "bob@example.com", "Globex")
        theirs = (await facade.workers.create(bob, "rack")).worker
        backup = await facade.backups.create(ada, wid, "Laptop", BackupKind.LOCAL)
        with pytest.raises(ValidationFailedError, match="names no worker"):
            await facade.backups.update(ada, backup.id, BackupChanges(worker_id=theirs.id))

    async def test_activation_is_audited(self, facade: Strongroom) -> None:
        """The change that activates writes ``backup.update`` with the state change."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        await facade.backups.update(
            ada, backup.id, BackupChanges(retention=retention("P30D", "P7D"))
        )
        [event] = await audit_events(facade, ada, "backup.update")
        assert event.target_id == str(backup.id)
        assert event.changes is not None
        assert event.changes["state"] == Change("draft", "active")


class TestRetention:
    """Write-once retention as the update use case applies it (moved from the HTTP
    tests; the arithmetic itself is in ``tests/domain/test_backup_aggregate.py``)."""

    @pytest.mark.parametrize("same", [("P7D", "P1D"), ("P1W", "PT24H"), ("PT168H", "PT86400S")])
    async def test_an_identical_policy_is_accepted_again(
        self, facade: Strongroom, same: tuple[str, str]
    ) -> None:
        """Re-sending an equal policy (compared as seconds, so P7D equals P1W) succeeds."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        first = await facade.backups.update(
            ada, backup.id, BackupChanges(retention=retention("P1W", "P1D"))
        )
        again = await facade.backups.update(
            ada, backup.id, BackupChanges(retention=retention(*same))
        )
        assert again.retention == first.retention
        assert again.retention is not None
        shown = (str(again.retention.expire_after), str(again.retention.lock_for))
        assert shown == ("P7D", "P1D")

    @pytest.mark.parametrize("other", [("P8D", "P1D"), ("P7D", "PT0S"), ("P7D", "P7D")])
    async def test_a_different_policy_is_refused(
        self, facade: Strongroom, other: tuple[str, str]
    ) -> None:
        """Once set, another policy is ``retention_immutable`` and the first one stays."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, expire_after="P7D", lock_for="P1D")
        with pytest.raises(RetentionImmutableError):
            await facade.backups.update(ada, backup, BackupChanges(retention=retention(*other)))
        stored = await facade.backups.get(ada, backup)
        assert stored.retention == retention("P7D", "P1D")

    async def test_a_refused_policy_discards_the_rest_of_the_patch(
        self, facade: Strongroom
    ) -> None:
        """A change refused for retention applies none of its other fields."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, expire_after="P30D", lock_for="P7D")
        with pytest.raises(RetentionImmutableError):
            await facade.backups.update(
                ada,
                backup,
                BackupChanges(name="Renamed", retention=retention("P30D", "P1D")),
            )
        assert (await facade.backups.get(ada, backup)).name == "Nightly"

    @pytest.mark.parametrize("policy", [("P7D", "P8D"), ("PT1H", "PT3601S"), ("P1D", "P1W")])
    async def test_a_lock_longer_than_the_expiry_is_refused(
        self, facade: Strongroom, policy: tuple[str, str]
    ) -> None:
        """``lock_for`` longer than ``expire_after`` is ``lock_exceeds_expiry``; nothing is
        stored and the backup stays a draft."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        with pytest.raises(LockExceedsExpiryError):
            await facade.backups.update(ada, backup.id, BackupChanges(retention=retention(*policy)))
        stored = await facade.backups.get(ada, backup.id)
        assert stored.retention is None
        assert stored.state == "draft"

    async def test_billing_comes_before_retention_conflicts(self, facade: Strongroom) -> None:
        """Blocked: ``billing_restricted`` before ``retention_immutable``."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="P7D")
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        with pytest.raises(BillingRestrictedError):
            await facade.backups.update(
                ada, backup, BackupChanges(retention=retention("P2D", "P1D"))
            )


class TestSecrets:
    """Credentials are sealed: never on the backup's public fields, never audited."""

    async def test_credentials_are_neither_returned_nor_audited(self, facade: Strongroom) -> None:
        """``has_credentials`` tells they are stored; no audit event holds a secret."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.CLOUD)
        changed = await facade.backups.update(
            ada,
            backup.id,
            BackupChanges(
                **CLOUD_COMPLETE, destination=CUSTOMER_S3, destination_credentials=DESTINATION_KEYS
            ),
        )
        assert changed.has_credentials
        assert changed.sealed_credentials is not None
        for secret in (*S3_KEYS.values(), *DESTINATION_KEYS.values()):
            assert secret.encode() not in changed.sealed_credentials
            assert secret not in repr(await audit_events(facade, ada))
        [event] = await audit_events(facade, ada, "backup.update")
        assert event.changes is not None
        assert event.changes["has_credentials"] == Change(False, True)


class TestPauseResumeDelete:
    """Pause and resume keep the state and are idempotent; delete removes the backup."""

    async def test_pause_and_resume_are_idempotent_and_audited(self, facade: Strongroom) -> None:
        """Pausing twice gives the same backup; each action writes its own event with the
        ``paused`` change."""
        ada, _ = await workspace_admin(facade, "ada@example.com")
        backup = await active_manual(facade, ada, lock_for="P7D")
        paused = await facade.backups.pause(ada, backup)
        assert await facade.backups.pause(ada, backup) == paused
        assert (paused.paused, paused.state) == (True, "active")
        resumed = await facade.backups.resume(ada, backup)
        assert resumed.paused is False
        pauses = await audit_events(facade, ada, "backup.pause")
        # The second pause changed nothing: its event has no changes.
        changes = sorted((dict(e.changes or {}) for e in pauses), key=len)
        assert changes == [{}, {"paused": Change(False, True)}]
        [resume] = await audit_events(facade, ada, "backup.resume")
        assert resume.changes == {"paused": Change(True, False)}

    async def test_a_draft_can_be_paused(self, facade: Strongroom) -> None:
        """Pausing a draft is allowed and keeps it a draft."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.CLOUD)
        paused = await facade.backups.pause(ada, backup.id)
        assert (paused.paused, paused.state) == (True, "draft")

    async def test_a_deleted_backup_is_gone_and_audited(self, facade: Strongroom) -> None:
        """After a delete the backup is not found and ``backup.delete`` names it."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        await facade.backups.delete(ada, backup.id)
        with pytest.raises(NotFoundError):
            await facade.backups.get(ada, backup.id)
        with pytest.raises(NotFoundError):
            await facade.backups.delete(ada, backup.id)
        [event] = await audit_events(facade, ada, "backup.delete")
        assert (event.target_id, event.outcome) == (str(backup.id), Outcome.SUCCESS)

    @pytest.mark.parametrize(
        "state",
        [BillingState.TRIAL, BillingState.ACTIVE, BillingState.WARNED, BillingState.STOPPED],
    )
    async def test_writes_are_allowed_outside_blocked(
        self, facade: Strongroom, state: BillingState
    ) -> None:
        """Create, change, pause, resume and delete succeed in every other billing state."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        await facade.workspaces.set_billing_state(wid, state)
        backup = await active_manual(facade, ada, lock_for="P7D")
        assert (await facade.backups.pause(ada, backup)).paused
        assert not (await facade.backups.resume(ada, backup)).paused
        await facade.backups.delete(ada, backup)
        assert await names_in(facade, wid, ada) == []

    async def test_blocked_refuses_every_write_and_changes_nothing(
        self, facade: Strongroom
    ) -> None:
        """Blocked: every write is ``billing_restricted``; reads still answer."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        backup = await facade.backups.create(ada, wid, "Nightly", BackupKind.MANUAL)
        await facade.workspaces.set_billing_state(wid, BillingState.BLOCKED)
        writes = [
            facade.backups.create(ada, wid, "Weekly", BackupKind.MANUAL),
            facade.backups.update(ada, backup.id, BackupChanges(name="Renamed")),
            facade.backups.pause(ada, backup.id),
            facade.backups.resume(ada, backup.id),
            facade.backups.delete(ada, backup.id),
        ]
        for write in writes:
            with pytest.raises(BillingRestrictedError, match="workspace billing state is blocked"):
                await write
        assert await facade.backups.get(ada, backup.id) == backup


class TestWorkerView:
    """A worker sees only the backups assigned to it."""

    async def test_a_worker_reads_its_own_backups_only(self, facade: Strongroom) -> None:
        """Listed and read: the backup assigned to the worker; any other is not found."""
        ada, wid = await workspace_admin(facade, "ada@example.com")
        issued = await facade.workers.create(ada, "rack")
        worker = await facade.access.authenticate(issued.token)
        assert worker.actor == Actor(PrincipalType.WORKER, issued.worker.id)
        mine = await facade.backups.create(ada, wid, "Laptop", BackupKind.LOCAL)
        await facade.backups.update(ada, mine.id, BackupChanges(worker_id=issued.worker.id))
        other = await facade.backups.create(ada, wid, "Other", BackupKind.MANUAL)
        assert await names_in(facade, wid, worker) == ["Laptop"]
        assert (await facade.backups.get(worker, mine.id)).id == mine.id
        with pytest.raises(NotFoundError):
            await facade.backups.get(worker, other.id)
