"""The repository contract: every adapter stores, finds and refuses exactly the same things.

The in-memory adapter is the reference; each test runs against every adapter of
``conftest.ADAPTERS``.
"""

from __future__ import annotations

from datetime import timedelta, timezone
from typing import Any
from uuid import uuid4

import attrs
import pytest
from contract_records import (
    T0,
    Adapter,
    account,
    api_key,
    at,
    audit_event,
    backup,
    device_grant,
    invitation,
    session,
    user,
    worker,
    workspace,
)

from strongroom.domain.accounts import GrantState
from strongroom.domain.audit import AuditEvent, Change
from strongroom.domain.backups import (
    Backup,
    BackupKind,
    BackupState,
    CustomerS3Destination,
    PostgresSource,
    RetentionPolicy,
    S3Source,
    Schedule,
    UnsupportedSource,
)
from strongroom.domain.billing import BillingState
from strongroom.domain.durations import Duration
from strongroom.domain.errors import NameTakenError
from strongroom.domain.pagination import Cursor, PageRequest
from strongroom.domain.permissions import ADMIN, VIEWER, Permission, Role
from strongroom.domain.principals import SYSTEM_ACTOR, Actor, PrincipalType
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.workspaces import Membership
from strongroom.ports.driven.repositories import (
    AuditFilter,
    CountedWorkspace,
    IdempotencyKeyTakenError,
    IdempotencyRecord,
    IntegrityViolationError,
)


class TestWorkspaces:
    """Workspaces: storage, updates, counting, and removal of everything in them."""

    def test_a_stored_workspace_comes_back_equal(self, adapter: Adapter) -> None:
        """Every field round-trips, quota overrides and microseconds included."""
        creator = user()
        stored = workspace(creator, quota_overrides={QuotaResource.BACKUPS_PER_WORKSPACE: 3})
        adapter.store(creator, stored)
        with adapter.uow() as uow:
            assert uow.workspaces.get(stored.id) == stored
            assert uow.workspaces.get(stored.id, for_update=True) == stored
            assert uow.workspaces.get(uuid4()) is None
            assert uow.workspaces.get(uuid4(), for_update=True) is None

    def test_a_workspace_needs_an_existing_creator(self, adapter: Adapter) -> None:
        """A dangling ``created_by`` is an integrity violation."""
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.workspaces.add(workspace(user()))

    def test_an_update_is_stored(self, adapter: Adapter) -> None:
        """Name, billing state and limits change; the record reads back as written."""
        creator = user()
        stored = workspace(creator)
        adapter.store(creator, stored)
        changed = (
            stored.renamed("Renamed", at(5))
            .with_billing_state(BillingState.BLOCKED, at(6))
            .with_limit(QuotaResource.WORKERS_PER_WORKSPACE, 2, at(7))
        )
        with adapter.uow() as uow:
            uow.workspaces.update(changed)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.workspaces.get(stored.id) == changed

    def test_an_update_of_a_missing_workspace_is_an_integrity_violation(
        self, adapter: Adapter
    ) -> None:
        """Updating nothing is a bug, not a no-op."""
        creator = user()
        adapter.store(creator)
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.workspaces.update(workspace(creator))

    def test_count_created_by_counts_existing_workspaces(self, adapter: Adapter) -> None:
        """Only workspaces the person created, and only those not removed."""
        ada, bob = user(), user()
        first, second, theirs = workspace(ada), workspace(ada), workspace(bob)
        adapter.store(ada, bob, first, second, theirs)
        with adapter.uow() as uow:
            assert uow.workspaces.count_created_by(ada.id) == 2
            uow.workspaces.remove(first.id)
            assert uow.workspaces.count_created_by(ada.id) == 1
            assert uow.workspaces.count_created_by(uuid4()) == 0

    def test_removal_takes_everything_in_the_workspace_and_nothing_else(
        self, adapter: Adapter
    ) -> None:
        """Members, backups, audit, scoped sessions, workers and roles go; others stay."""
        ada = user()
        doomed, kept = workspace(ada), workspace(ada)
        records: list[object] = [ada, doomed, kept]
        for target in (doomed, kept):
            records += [
                Membership(target.id, ada.id, "admin", T0),
                backup(target.id, "Nightly"),
                audit_event(target.id),
                api_key(target.id),
                invitation(target.id),
            ]
        scoped, elsewhere, unscoped = (
            session(ada.id, doomed.id),
            session(ada.id, kept.id),
            session(ada.id),
        )
        adapter.store(*records, scoped, elsewhere, unscoped)
        worker, other_worker = uuid4(), uuid4()
        adapter.add_worker(doomed.id, worker)
        adapter.add_worker(kept.id, other_worker)
        role = Role("auditor", "Auditor", frozenset({Permission.AUDIT_READ}))
        adapter.add_role(doomed.id, role)
        adapter.add_role(kept.id, role)

        with adapter.uow() as uow:
            uow.workspaces.remove(doomed.id)
            uow.workspaces.remove(uuid4())  # removing nothing is fine
            uow.commit()

        with adapter.uow() as uow:
            assert uow.workspaces.get(doomed.id) is None
            assert uow.memberships.get(doomed.id, ada.id) is None
            assert uow.memberships.count(doomed.id) == 0
            assert uow.backups.count(doomed.id) == 0
            assert uow.api_keys.count(doomed.id) == 0
            assert uow.invitations.count_pending(doomed.id, T0) == 0
            assert uow.audit.list(doomed.id, AuditFilter(), PageRequest()).items == []
            assert uow.sessions.find(scoped.token_hash) is None
            assert not uow.workers.exists(doomed.id, worker)
            assert uow.roles.get(doomed.id, "auditor") is None
            # The other workspace and the unscoped session are untouched.
            assert uow.workspaces.get(kept.id) == kept
            assert uow.memberships.count(kept.id) == 1
            assert uow.backups.count(kept.id) == 1
            assert uow.api_keys.count(kept.id) == 1
            assert uow.invitations.count_pending(kept.id, T0) == 1
            assert len(uow.audit.list(kept.id, AuditFilter(), PageRequest()).items) == 1
            assert uow.sessions.find(elsewhere.token_hash) is not None
            assert uow.sessions.find(unscoped.token_hash) is not None
            assert uow.workers.exists(kept.id, other_worker)
            assert uow.roles.get(kept.id, "auditor") == role


class TestMemberships:
    """Memberships and a person's list of workspaces."""

    def test_a_membership_comes_back_and_is_counted(self, adapter: Adapter) -> None:
        """``get`` finds it by (workspace, person); ``count`` counts a workspace's members."""
        ada, bob = user(), user()
        target = workspace(ada)
        ada_member = Membership(target.id, ada.id, "admin", at(1))
        bob_member = Membership(target.id, bob.id, "viewer", at(2))
        adapter.store(ada, bob, target, ada_member, bob_member)
        with adapter.uow() as uow:
            assert uow.memberships.get(target.id, ada.id) == ada_member
            assert uow.memberships.get(target.id, bob.id) == bob_member
            assert uow.memberships.get(uuid4(), ada.id) is None
            assert uow.memberships.count(target.id) == 2
            assert uow.memberships.count(uuid4()) == 0

    def test_a_second_membership_of_the_same_person_is_an_integrity_violation(
        self, adapter: Adapter
    ) -> None:
        """One membership per (workspace, person)."""
        ada = user()
        target = workspace(ada)
        adapter.store(ada, target, Membership(target.id, ada.id, "admin", T0))
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.memberships.add(Membership(target.id, ada.id, "viewer", T0))

    @pytest.mark.parametrize("missing", ["workspace", "user"])
    def test_a_membership_needs_its_workspace_and_person(
        self, adapter: Adapter, missing: str
    ) -> None:
        """A dangling workspace or person is an integrity violation."""
        ada = user()
        target = workspace(ada)
        adapter.store(ada, target)
        membership = Membership(
            uuid4() if missing == "workspace" else target.id,
            uuid4() if missing == "user" else ada.id,
            "admin",
            T0,
        )
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.memberships.add(membership)

    def test_a_persons_workspaces_are_listed_newest_first_across_pages(
        self, adapter: Adapter
    ) -> None:
        """Keyset pages by the workspace's (created_at, id), with the person's role."""
        ada, bob = user(), user()
        mine = [workspace(bob, created_at=at(i)) for i in range(5)]
        # Two workspaces created at the same instant: the id breaks the tie.
        mine.append(workspace(bob, created_at=at(2)))
        not_mine = workspace(bob, created_at=at(10))
        records: list[object] = [ada, bob, *mine, not_mine]
        records += [Membership(w.id, ada.id, "viewer", T0) for w in mine]
        adapter.store(*records)
        expected = sorted(mine, key=lambda w: (w.created_at, w.id), reverse=True)

        seen = []
        page = PageRequest(limit=4)
        with adapter.uow() as uow:
            first = uow.memberships.list_for_user(ada.id, page)
            assert first.next_cursor == Cursor(expected[3].created_at, expected[3].id)
            second = uow.memberships.list_for_user(
                ada.id, attrs.evolve(page, after=first.next_cursor)
            )
            assert second.next_cursor is None
            seen = [*first.items, *second.items]
            assert uow.memberships.list_for_user(uuid4(), page).items == []
        assert [item.workspace for item in seen] == expected
        assert {item.role for item in seen} == {"viewer"}


class TestUsers:
    """People."""

    def test_a_person_is_found_by_id_and_by_subject(self, adapter: Adapter) -> None:
        """``get`` (locking or not) and ``get_by_subject`` give the stored person."""
        ada = user()
        adapter.store(ada)
        with adapter.uow() as uow:
            assert uow.users.get(ada.id) == ada
            assert uow.users.get(ada.id, for_update=True) == ada
            assert uow.users.get_by_subject(ada.idp_subject) == ada
            assert uow.users.get(uuid4()) is None
            assert uow.users.get(uuid4(), for_update=True) is None
            assert uow.users.get_by_subject("nobody") is None

    def test_one_person_per_identity_subject(self, adapter: Adapter) -> None:
        """A second person with the same subject is an integrity violation."""
        ada = user()
        adapter.store(ada)
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.users.add(attrs.evolve(user(), idp_subject=ada.idp_subject))


class TestSessions:
    """Sessions, found with their person and role in one look-up."""

    def test_an_unscoped_session_has_no_role(self, adapter: Adapter) -> None:
        """The grant carries the session and its person."""
        ada = user()
        mine = session(ada.id)
        adapter.store(ada, mine)
        with adapter.uow() as uow:
            grant = uow.sessions.find(mine.token_hash)
            assert uow.sessions.find("unknown") is None
        assert grant is not None
        assert (grant.session, grant.user, grant.role) == (mine, ada, None)

    def test_a_scoped_session_carries_a_built_in_role(self, adapter: Adapter) -> None:
        """A member's built-in role is the domain's constant."""
        ada = user()
        target = workspace(ada)
        mine = session(ada.id, target.id)
        adapter.store(ada, target, Membership(target.id, ada.id, "viewer", T0), mine)
        with adapter.uow() as uow:
            grant = uow.sessions.find(mine.token_hash)
        assert grant is not None
        assert grant.role == VIEWER
        assert grant.session == mine

    def test_a_built_in_slug_wins_over_a_custom_role_of_that_name(self, adapter: Adapter) -> None:
        """Built-in roles cannot be shadowed by a workspace."""
        ada = user()
        target = workspace(ada)
        mine = session(ada.id, target.id)
        adapter.store(ada, target, Membership(target.id, ada.id, "admin", T0), mine)
        adapter.add_role(target.id, Role("admin", "Fake admin", frozenset()))
        with adapter.uow() as uow:
            grant = uow.sessions.find(mine.token_hash)
        assert grant is not None
        assert grant.role == ADMIN

    def test_a_scoped_session_carries_a_custom_role(self, adapter: Adapter) -> None:
        """A custom role comes from the workspace's roles, with its permissions."""
        ada = user()
        target = workspace(ada)
        auditor = Role(
            "auditor", "Auditor", frozenset({Permission.AUDIT_READ, Permission.BACKUPS_READ})
        )
        mine = session(ada.id, target.id)
        adapter.store(ada, target, Membership(target.id, ada.id, "auditor", T0), mine)
        adapter.add_role(target.id, auditor)
        with adapter.uow() as uow:
            grant = uow.sessions.find(mine.token_hash)
        assert grant is not None
        assert grant.role == auditor

    def test_no_role_without_membership_or_with_an_unknown_role(self, adapter: Adapter) -> None:
        """A session in a workspace the person left, or a role that does not exist: none."""
        ada, bob = user(), user()
        target = workspace(ada)
        not_member = session(bob.id, target.id)
        unknown_role = session(ada.id, target.id)
        adapter.store(
            ada, bob, target, Membership(target.id, ada.id, "ghost", T0), not_member, unknown_role
        )
        with adapter.uow() as uow:
            for token_hash in (not_member.token_hash, unknown_role.token_hash):
                grant = uow.sessions.find(token_hash)
                assert grant is not None
                assert grant.role is None

    def test_revocation_keeps_the_first_time(self, adapter: Adapter) -> None:
        """Revoking twice keeps the first instant; revoking nothing is fine."""
        ada = user()
        mine = session(ada.id)
        adapter.store(ada, mine)
        with adapter.uow() as uow:
            uow.sessions.revoke(mine.id, at(60))
            uow.sessions.revoke(mine.id, at(120))
            uow.sessions.revoke(uuid4(), at(60))
            uow.commit()
        with adapter.uow() as uow:
            grant = uow.sessions.find(mine.token_hash)
        assert grant is not None
        assert grant.session.revoked_at == at(60)

    @pytest.mark.parametrize("missing", ["user", "workspace"])
    def test_a_session_needs_its_person_and_workspace(self, adapter: Adapter, missing: str) -> None:
        """A dangling person or workspace is an integrity violation."""
        ada = user()
        adapter.store(ada)
        dangling = session(uuid4()) if missing == "user" else session(ada.id, workspace_id=uuid4())
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.sessions.add(dangling)

    def test_sessions_made_from_one_grant_are_revoked_together(self, adapter: Adapter) -> None:
        """A session keeps the grant it came from; revoking by the grant ends its live
        sessions only (a revoked one keeps its first time), in every workspace, and none
        made from another grant or from none (issue 27 finding 10)."""
        ada = user()
        target = workspace(ada)
        first, switched, other, plain = (
            session(ada.id),
            session(ada.id, target.id),
            session(ada.id),
            session(ada.id),
        )
        adapter.store(ada, target, Membership(target.id, ada.id, "admin", T0))
        with adapter.uow() as uow:
            uow.sessions.add(first, "grant-1")
            uow.sessions.add(switched, "grant-1")
            uow.sessions.add(other, "grant-2")
            uow.sessions.add(plain)
            uow.sessions.revoke(first.id, at(10))
            uow.commit()
        with adapter.uow() as uow:
            assert [uow.sessions.origin_of(s.id) for s in (first, other, plain)] == [
                "grant-1",
                "grant-2",
                None,
            ]
            assert uow.sessions.origin_of(uuid4()) is None
            assert uow.sessions.revoke_from("grant-1", at(20)) == 1
            assert uow.sessions.revoke_from("grant-3", at(20)) == 0
            uow.commit()
        with adapter.uow() as uow:
            found = {s.id: uow.sessions.find(s.token_hash) for s in (first, switched, other, plain)}
        assert {key: grant.session.revoked_at for key, grant in found.items() if grant} == {
            first.id: at(10),
            switched.id: at(20),
            other.id: None,
            plain.id: None,
        }


class TestSessionJoinedReads:
    """A session's grant and the data a read wants, in one look-up scoped by the session."""

    def _two_tenants(self, adapter: Adapter) -> tuple[Any, Any, Any, list[Any], Any]:
        ada, bob = user(), user()
        mine, theirs = workspace(ada), workspace(bob)
        session_of_ada = session(ada.id, mine.id)
        backups = [backup(mine.id, created_at=at(n)) for n in range(3)]
        foreign = backup(theirs.id)
        adapter.store(
            ada,
            bob,
            mine,
            theirs,
            Membership(mine.id, ada.id, "viewer", T0),
            Membership(theirs.id, bob.id, "admin", T0),
            session_of_ada,
            *backups,
            foreign,
        )
        return session_of_ada, mine, theirs, backups, foreign

    def test_one_backup_comes_with_the_grant(self, adapter: Adapter) -> None:
        """The grant is ``find``'s; the backup is the session's workspace's."""
        ada_session, _, _, backups, _ = self._two_tenants(adapter)
        with adapter.uow() as uow:
            found = uow.sessions.find_with_backup(ada_session.token_hash, backups[1].id)
            alone = uow.sessions.find(ada_session.token_hash)
        assert found is not None
        assert found == (alone, backups[1])
        assert found[0].role == VIEWER

    def test_another_workspaces_backup_is_not_found(self, adapter: Adapter) -> None:
        """A foreign id reads exactly like a random one: the grant, and no backup."""
        ada_session, _, _, _, foreign = self._two_tenants(adapter)
        with adapter.uow() as uow:
            by_foreign = uow.sessions.find_with_backup(ada_session.token_hash, foreign.id)
            by_random = uow.sessions.find_with_backup(ada_session.token_hash, uuid4())
        assert by_foreign is not None
        assert by_random is not None
        assert by_foreign[1] is None
        assert by_foreign == by_random

    def test_an_unknown_token_finds_nothing(self, adapter: Adapter) -> None:
        """No session: no grant and no data, whatever the ids."""
        _, workspace_, _, backups, _ = self._two_tenants(adapter)
        with adapter.uow() as uow:
            assert uow.sessions.find_with_backup("unknown", backups[0].id) is None
            page = PageRequest(10, None)
            assert uow.sessions.find_with_backups("unknown", workspace_.id, page) is None

    def test_an_unscoped_session_reads_no_backup(self, adapter: Adapter) -> None:
        """A session without a workspace sees no workspace's backups."""
        ada = user()
        target = workspace(ada)
        plain = session(ada.id)
        kept = backup(target.id)
        adapter.store(ada, target, plain, kept)
        with adapter.uow() as uow:
            found = uow.sessions.find_with_backup(plain.token_hash, kept.id)
            listed = uow.sessions.find_with_backups(
                plain.token_hash, target.id, PageRequest(5, None)
            )
        assert found is not None
        assert found[1] is None
        assert listed is not None
        assert listed[1].items == []

    def test_a_page_comes_with_the_grant_as_the_list_pages(self, adapter: Adapter) -> None:
        """The same pages as ``BackupRepository.list``, cursor included."""
        ada_session, workspace_, _, _, _ = self._two_tenants(adapter)
        first_request = PageRequest(2, None)
        with adapter.uow() as uow:
            joined = uow.sessions.find_with_backups(
                ada_session.token_hash, workspace_.id, first_request
            )
            listed = uow.backups.list(workspace_.id, first_request)
        assert joined is not None
        assert joined[0] == uow_grant(adapter, ada_session.token_hash)
        assert joined[1] == listed
        assert joined[1].next_cursor is not None
        second_request = PageRequest(2, joined[1].next_cursor)
        with adapter.uow() as uow:
            second = uow.sessions.find_with_backups(
                ada_session.token_hash, workspace_.id, second_request
            )
            listed_second = uow.backups.list(workspace_.id, second_request)
        assert second is not None
        assert second[1] == listed_second
        assert len(second[1].items) == 1

    def test_another_workspaces_page_is_empty(self, adapter: Adapter) -> None:
        """Asking for a foreign workspace's page gives the grant and nothing of theirs."""
        ada_session, _, theirs, _, _ = self._two_tenants(adapter)
        with adapter.uow() as uow:
            found = uow.sessions.find_with_backups(
                ada_session.token_hash, theirs.id, PageRequest(50, None)
            )
        assert found is not None
        assert found[1].items == []


def uow_grant(adapter: Adapter, token_hash: str) -> Any:
    """``find`` alone, for comparison."""
    with adapter.uow() as uow:
        return uow.sessions.find(token_hash)


class TestBackups:
    """Backups: nested values, unique names, keyset lists."""

    def test_a_fully_configured_backup_comes_back_equal(self, adapter: Adapter) -> None:
        """Source, sealed secrets, schedule, retention, destination and instants round-trip."""
        ada = user()
        target = workspace(ada)
        configured = attrs.evolve(
            backup(target.id, "Orders DB"),
            kind=BackupKind.CLOUD,
            state=BackupState.ACTIVE,
            paused=True,
            source=S3Source("https://s3.example.com:9000", "orders", prefix=None),
            sealed_credentials=b"\x00sealed\xff" * 20,
            schedule=Schedule("15 3 * * 1-5", "Europe/Paris"),
            worker_id=uuid4(),
            retention=RetentionPolicy(Duration.parse("P30D"), Duration.parse("PT0S")),
            destination=CustomerS3Destination("https://b.example.com", "vault", prefix="a/b"),
            sealed_destination_credentials=b"\x01dest",
            next_run_at=at(3600),
            updated_at=at(1),
        )
        postgres = attrs.evolve(
            backup(target.id), source=PostgresSource("db.internal", 5432, "orders")
        )
        unsupported = attrs.evolve(backup(target.id), source=UnsupportedSource("ftp"))
        adapter.store(ada, target, configured, postgres, unsupported)
        with adapter.uow() as uow:
            for stored in (configured, postgres, unsupported):
                assert uow.backups.get(target.id, stored.id) == stored
                assert uow.backups.get(target.id, stored.id, for_update=True) == stored

    def test_a_backup_is_found_only_in_its_own_workspace(self, adapter: Adapter) -> None:
        """Tenant scoping happens in the query."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        stored = backup(mine.id)
        adapter.store(ada, mine, theirs, stored)
        with adapter.uow() as uow:
            assert uow.backups.get(theirs.id, stored.id) is None
            assert uow.backups.get(theirs.id, stored.id, for_update=True) is None
            uow.backups.remove(theirs.id, stored.id)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.backups.get(mine.id, stored.id) == stored

    def test_a_backup_needs_an_existing_workspace(self, adapter: Adapter) -> None:
        """A dangling workspace is an integrity violation."""
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.backups.add(backup(uuid4()))

    @pytest.mark.parametrize(
        ("first", "second"),
        [
            ("Nightly", "Nightly"),
            ("Nightly", "NIGHTLY"),
            ("straße", "STRASSE"),
            ("Ünïcode", "ünÏCODE"),
        ],
    )
    def test_names_are_unique_per_workspace_case_insensitively(
        self, adapter: Adapter, first: str, second: str
    ) -> None:
        """The same name in another case is taken (Unicode case folding, as the domain's)."""
        ada = user()
        target = workspace(ada)
        adapter.store(ada, target, backup(target.id, first))
        with adapter.uow() as uow, pytest.raises(NameTakenError) as refused:
            uow.backups.add(backup(target.id, second))
        assert refused.value.message == f"a backup named {second!r} already exists"
        with adapter.uow() as uow:
            assert uow.backups.count(target.id) == 1

    def test_the_same_name_is_free_in_another_workspace(self, adapter: Adapter) -> None:
        """Uniqueness is per workspace."""
        ada = user()
        one, two = workspace(ada), workspace(ada)
        adapter.store(ada, one, two, backup(one.id, "Nightly"), backup(two.id, "nightly"))
        with adapter.uow() as uow:
            assert uow.backups.count(one.id) == uow.backups.count(two.id) == 1

    def test_a_rename_to_a_taken_name_is_refused_and_its_own_name_is_not(
        self, adapter: Adapter
    ) -> None:
        """Renaming onto another backup's name refuses; changing one's own case is fine."""
        ada = user()
        target = workspace(ada)
        nightly, weekly = backup(target.id, "Nightly"), backup(target.id, "Weekly")
        adapter.store(ada, target, nightly, weekly)
        with adapter.uow() as uow, pytest.raises(NameTakenError):
            uow.backups.update(attrs.evolve(weekly, name="NIGHTLY"))
        recased = attrs.evolve(nightly, name="NIGHTLY", updated_at=at(9))
        with adapter.uow() as uow:
            uow.backups.update(recased)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.backups.get(target.id, nightly.id) == recased
            assert uow.backups.get(target.id, weekly.id) == weekly

    def test_an_update_of_a_missing_backup_is_an_integrity_violation(
        self, adapter: Adapter
    ) -> None:
        """Updating nothing is a bug, not a no-op."""
        ada = user()
        target = workspace(ada)
        adapter.store(ada, target)
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.backups.update(backup(target.id))

    def test_a_removed_backup_is_gone_and_its_name_free(self, adapter: Adapter) -> None:
        """Removal frees the name; removing nothing is fine."""
        ada = user()
        target = workspace(ada)
        stored = backup(target.id, "Nightly")
        adapter.store(ada, target, stored)
        with adapter.uow() as uow:
            uow.backups.remove(target.id, stored.id)
            uow.backups.remove(target.id, uuid4())
            uow.backups.add(backup(target.id, "nightly"))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.backups.get(target.id, stored.id) is None
            assert uow.backups.count(target.id) == 1

    def test_backups_are_listed_newest_first_across_pages(self, adapter: Adapter) -> None:
        """Keyset pages by (created_at, id) descending; ties broken by id; no other tenant."""
        ada = user()
        target, other = workspace(ada), workspace(ada)
        stored = [backup(target.id, created_at=at(i // 2)) for i in range(7)]  # pairs tie
        adapter.store(ada, target, other, *stored, backup(other.id, created_at=at(100)))
        expected = sorted(stored, key=lambda b: (b.created_at, b.id), reverse=True)

        listed: list[Backup] = []
        request = PageRequest(limit=3)
        cursors = []
        with adapter.uow() as uow:
            while True:
                page = uow.backups.list(target.id, request)
                listed += page.items
                if page.next_cursor is None:
                    break
                cursors.append(page.next_cursor)
                request = PageRequest(limit=3, after=page.next_cursor)
        assert listed == expected
        assert cursors == [
            Cursor(expected[2].created_at, expected[2].id),
            Cursor(expected[5].created_at, expected[5].id),
        ]

    def test_a_cursor_from_another_time_zone_is_the_same_instant(self, adapter: Adapter) -> None:
        """Instants compare as instants, whatever offset the cursor was written with."""
        ada = user()
        target = workspace(ada)
        stored = [backup(target.id, created_at=at(i)) for i in range(3)]
        adapter.store(ada, target, *stored)
        shifted = stored[1].created_at.astimezone(timezone(timedelta(hours=5, minutes=30)))
        with adapter.uow() as uow:
            page = uow.backups.list(target.id, PageRequest(after=Cursor(shifted, stored[1].id)))
        assert page.items == [stored[0]]
        assert page.items[0].created_at.utcoffset() == timedelta(0)

    def test_count_counts_a_workspaces_backups(self, adapter: Adapter) -> None:
        """Only this workspace's."""
        ada = user()
        target, other = workspace(ada), workspace(ada)
        adapter.store(ada, target, other, backup(target.id), backup(target.id), backup(other.id))
        with adapter.uow() as uow:
            assert uow.backups.count(target.id) == 2
            assert uow.backups.count(uuid4()) == 0


class TestCountedCreate:
    """Creates guarded by the workspace's backup count (``add_counted``), the joined reads
    a create decides on, and the usage counter they read, exact across adds and removes."""

    def _event(self, workspace_id: Any, target: Any) -> AuditEvent:
        return attrs.evolve(
            audit_event(workspace_id), action="backup.create", target_id=str(target.id)
        )

    def _admit(self, adapter: Adapter, candidate: Any, usage_below: int | None = None) -> bool:
        with adapter.uow() as uow:
            admitted = uow.backups.add_counted(
                candidate, self._event(candidate.workspace_id, candidate), usage_below
            )
            uow.commit()
        return bool(admitted)

    def _stored(self, adapter: Adapter, workspace_id: Any) -> tuple[int, list[Any], int]:
        """The counter, the backups listed, and how many audit events name a backup."""
        with adapter.uow() as uow:
            counted = uow.backups.count(workspace_id)
            listed = uow.backups.list(workspace_id, PageRequest(200, None)).items
            events = uow.audit.list(workspace_id, AuditFilter(), PageRequest(200, None)).items
        return counted, list(listed), sum(e.action == "backup.create" for e in events)

    def test_an_admitted_backup_is_stored_with_its_event(self, adapter: Adapter) -> None:
        """True: the backup, its audit event and one more in the count."""
        ada = user()
        target = workspace(ada)
        adapter.store(ada, target)
        candidate = backup(target.id)
        assert self._admit(adapter, candidate, 1)
        counted, listed, events = self._stored(adapter, target.id)
        assert (counted, listed, events) == (1, [candidate], 1)

    @pytest.mark.parametrize(("bound", "existing"), [(2, 2), (1, 3)], ids=["at", "past"])
    def test_a_count_at_its_bound_leaves_nothing(
        self, adapter: Adapter, bound: int, existing: int
    ) -> None:
        """False: no backup, no event, the count unchanged."""
        ada = user()
        target = workspace(ada)
        kept = [backup(target.id) for _ in range(existing)]
        adapter.store(ada, target, *kept)
        assert not self._admit(adapter, backup(target.id), bound)
        counted, listed, events = self._stored(adapter, target.id)
        assert (counted, len(listed), events) == (existing, existing, 0)

    def test_a_session_reads_its_own_workspace_with_its_count(self, adapter: Adapter) -> None:
        """The grant (as ``find``), the workspace and how many backups it holds."""
        ada = user()
        target = workspace(ada)
        mine = session(ada.id, target.id)
        kept = [backup(target.id) for _ in range(2)]
        adapter.store(ada, target, Membership(target.id, ada.id, "admin", T0), mine, *kept)
        with adapter.uow() as uow:
            found = uow.sessions.find_with_workspace(mine.token_hash, target.id)
            alone = uow.workspaces.get_counted(target.id)
        assert found is not None
        assert found[0] == uow_grant(adapter, mine.token_hash)
        assert found[1] == alone == CountedWorkspace(target, 2)

    def test_a_session_reads_no_other_workspace(self, adapter: Adapter) -> None:
        """Another workspace through a session: the grant and no workspace; an unknown
        token: None."""
        ada, bob = user(), user()
        mine, theirs = workspace(ada), workspace(bob)
        ada_session = session(ada.id, mine.id)
        adapter.store(ada, bob, mine, theirs, ada_session)
        with adapter.uow() as uow:
            found = uow.sessions.find_with_workspace(ada_session.token_hash, theirs.id)
            unknown = uow.sessions.find_with_workspace("unknown", theirs.id)
            ghost = uow.workspaces.get_counted(uuid4())
        assert found == (uow_grant(adapter, ada_session.token_hash), None)
        assert unknown is None
        assert ghost is None

    def test_no_bound_admits_any_count(self, adapter: Adapter) -> None:
        """``usage_below`` None adds whatever the count."""
        ada = user()
        target = workspace(ada)
        adapter.store(ada, target, *(backup(target.id) for _ in range(3)))
        assert all(self._admit(adapter, backup(target.id)) for _ in range(3))
        assert self._stored(adapter, target.id)[0] == 6

    def test_no_workspace_admits_nothing(self, adapter: Adapter) -> None:
        """A workspace that does not exist: False, nothing stored."""
        ada = user()
        ghost = workspace(ada)
        adapter.store(ada)
        with adapter.uow() as uow:
            assert not uow.backups.add_counted(
                backup(ghost.id), self._event(ghost.id, backup(ghost.id)), None
            )

    def test_a_taken_name_is_refused_and_leaves_nothing(self, adapter: Adapter) -> None:
        """NameTakenError; the count and the trail stay as they were."""
        ada = user()
        target = workspace(ada)
        first = backup(target.id, "Nightly")
        adapter.store(ada, target, first)
        with pytest.raises(NameTakenError):
            self._admit(adapter, backup(target.id, "NIGHTLY"))
        assert self._stored(adapter, target.id)[:2] == (1, [first])

    def test_the_count_is_exact_across_adds_and_removes(self, adapter: Adapter) -> None:
        """Adds, admitted adds, removes and a removed missing id: the count is a recount."""
        ada = user()
        target, other = workspace(ada), workspace(ada)
        made = [backup(target.id, created_at=at(n)) for n in range(4)]
        adapter.store(ada, target, other, *made, backup(other.id))
        assert self._admit(adapter, backup(target.id))
        with adapter.uow() as uow:
            uow.backups.remove(target.id, made[0].id)
            uow.backups.remove(target.id, made[1].id)
            uow.backups.remove(target.id, uuid4())
            uow.backups.remove(other.id, made[2].id)  # not the other workspace's: nothing
            uow.commit()
        counted, listed, _ = self._stored(adapter, target.id)
        assert counted == len(listed) == 3
        assert self._stored(adapter, other.id)[0] == 1


class TestWorkersAndRoles:
    """Workers and custom roles, as far as the ports reach."""

    def test_a_worker_exists_only_in_its_workspace(self, adapter: Adapter) -> None:
        """``exists`` is scoped to the workspace."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        adapter.store(ada, mine, theirs)
        worker = uuid4()
        adapter.add_worker(mine.id, worker)
        with adapter.uow() as uow:
            assert uow.workers.exists(mine.id, worker)
            assert not uow.workers.exists(theirs.id, worker)
            assert not uow.workers.exists(mine.id, uuid4())

    def test_a_custom_role_is_found_by_slug_in_its_workspace(self, adapter: Adapter) -> None:
        """Roles are per workspace."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        adapter.store(ada, mine, theirs)
        role = Role("ops", "Operations", frozenset({Permission.BACKUPS_TRIGGER}))
        adapter.add_role(mine.id, role)
        with adapter.uow() as uow:
            assert uow.roles.get(mine.id, "ops") == role
            assert uow.roles.get(theirs.id, "ops") is None
            assert uow.roles.get(mine.id, "admin") is None


class TestMachineCredentials:
    """Workers and API keys: scoped to their workspace, found by token hash, touched lazily."""

    def test_a_worker_comes_back_equal_and_only_in_its_workspace(self, adapter: Adapter) -> None:
        """``get`` and ``exists`` are scoped to the workspace; ``find`` uses the hash."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        stored = worker(mine.id, last_seen_at=at(5))
        adapter.store(ada, mine, theirs, stored)
        with adapter.uow() as uow:
            assert uow.workers.get(mine.id, stored.id) == stored
            assert uow.workers.get(theirs.id, stored.id) is None
            assert uow.workers.find(stored.token_hash) == stored
            assert uow.workers.find("no-such-hash") is None
            assert not uow.workers.exists(theirs.id, stored.id)

    def test_an_api_key_comes_back_equal_and_only_in_its_workspace(self, adapter: Adapter) -> None:
        """Permissions, expiry and last use survive the round trip."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        stored = api_key(
            mine.id,
            permissions=frozenset({Permission.AUDIT_READ, Permission.BACKUPS_WRITE}),
            expires_at=at(3600),
            last_used_at=at(7),
        )
        bare = api_key(mine.id, permissions=frozenset())
        adapter.store(ada, mine, theirs, stored, bare)
        with adapter.uow() as uow:
            assert uow.api_keys.get(mine.id, stored.id) == stored
            assert uow.api_keys.get(mine.id, bare.id) == bare
            assert uow.api_keys.get(theirs.id, stored.id) is None
            assert uow.api_keys.find(stored.token_hash) == stored
            assert uow.api_keys.find("no-such-hash") is None

    def test_a_credential_needs_its_workspace_and_a_unique_hash(self, adapter: Adapter) -> None:
        """A missing workspace or a reused token hash is an integrity violation."""
        ada = user()
        mine = workspace(ada)
        first_worker, first_key = worker(mine.id), api_key(mine.id)
        adapter.store(ada, mine, first_worker, first_key)
        for record in (
            worker(uuid4()),
            api_key(uuid4()),
            worker(mine.id, token_hash=first_worker.token_hash),
            api_key(mine.id, token_hash=first_key.token_hash),
        ):
            with pytest.raises(IntegrityViolationError):
                adapter.store(record)

    def test_touch_writes_only_a_stale_time(self, adapter: Adapter) -> None:
        """A last-use time at or after ``stale_before`` stays; an older or absent one moves."""
        ada = user()
        mine = workspace(ada)
        fresh_worker, fresh_key = worker(mine.id), api_key(mine.id)
        adapter.store(ada, mine, fresh_worker, fresh_key)
        with adapter.uow() as uow:
            uow.workers.touch(fresh_worker.id, at(10), stale_before=at(0))
            uow.api_keys.touch(fresh_key.id, at(10), stale_before=at(0))
            uow.workers.touch(uuid4(), at(10), stale_before=at(0))  # nothing to touch
            uow.commit()
        with adapter.uow() as uow:
            uow.workers.touch(fresh_worker.id, at(20), stale_before=at(10))
            uow.api_keys.touch(fresh_key.id, at(20), stale_before=at(10))
            uow.commit()
        with adapter.uow() as uow:
            worker_seen = uow.workers.get(mine.id, fresh_worker.id)
            key_used = uow.api_keys.get(mine.id, fresh_key.id)
            assert worker_seen is not None
            assert worker_seen.last_seen_at == at(10)
            assert key_used is not None
            assert key_used.last_used_at == at(10)
            uow.workers.touch(fresh_worker.id, at(80), stale_before=at(20))
            uow.api_keys.touch(fresh_key.id, at(80), stale_before=at(20))
            uow.commit()
        with adapter.uow() as uow:
            worker_seen = uow.workers.get(mine.id, fresh_worker.id)
            key_used = uow.api_keys.get(mine.id, fresh_key.id)
            assert worker_seen is not None
            assert worker_seen.last_seen_at == at(80)
            assert key_used is not None
            assert key_used.last_used_at == at(80)

    def test_a_rotation_replaces_the_hash_and_keeps_the_creation_time(
        self, adapter: Adapter
    ) -> None:
        """The old hash finds nothing; a missing worker cannot be updated."""
        ada = user()
        mine = workspace(ada)
        stored = worker(mine.id)
        adapter.store(ada, mine, stored)
        rotated = attrs.evolve(stored.rotated("new-hash"), created_at=at(99))
        with adapter.uow() as uow:
            uow.workers.update(rotated)
            with pytest.raises(IntegrityViolationError):
                uow.workers.update(worker(mine.id))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.workers.find(stored.token_hash) is None
            assert uow.workers.find("new-hash") == stored.rotated("new-hash")

    def test_removal_lists_and_counts_are_scoped(self, adapter: Adapter) -> None:
        """Removing in another workspace does nothing; lists are newest first across pages."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        workers = [worker(mine.id, at(i)) for i in range(3)]
        keys = [api_key(mine.id, at(i)) for i in range(3)]
        adapter.store(ada, mine, theirs, *workers, *keys, worker(theirs.id), api_key(theirs.id))
        with adapter.uow() as uow:
            uow.workers.remove(theirs.id, workers[0].id)
            uow.api_keys.remove(theirs.id, keys[0].id)
            assert uow.workers.count(mine.id) == 3
            assert uow.api_keys.count(mine.id) == 3
            uow.workers.remove(mine.id, workers[0].id)
            uow.api_keys.remove(mine.id, keys[0].id)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.workers.count(mine.id) == 2
            assert uow.api_keys.count(mine.id) == 2
            first = uow.workers.list(mine.id, PageRequest(1))
            assert first.items == [workers[2]]
            assert first.next_cursor is not None
            second = uow.workers.list(mine.id, PageRequest(1, first.next_cursor))
            assert second.items == [workers[1]]
            assert second.next_cursor is None
            listed = uow.api_keys.list(mine.id, PageRequest(1))
            assert listed.items == [keys[2]]
            assert listed.next_cursor is not None
            rest = uow.api_keys.list(mine.id, PageRequest(5, listed.next_cursor))
            assert rest.items == [keys[1]]

    def test_backups_are_listed_per_worker(self, adapter: Adapter) -> None:
        """``worker_id`` limits a backup list to the backups assigned to that worker."""
        ada = user()
        mine = workspace(ada)
        assigned_to, other = worker(mine.id), worker(mine.id)
        adapter.store(ada, mine, assigned_to, other)
        assigned = attrs.evolve(backup(mine.id), worker_id=assigned_to.id)
        elsewhere = attrs.evolve(backup(mine.id), worker_id=other.id)
        adapter.store(assigned, elsewhere, backup(mine.id))
        with adapter.uow() as uow:
            listed = uow.backups.list(mine.id, PageRequest(), worker_id=assigned_to.id)
            assert [b.id for b in listed.items] == [assigned.id]
            assert len(uow.backups.list(mine.id, PageRequest()).items) == 3


class TestMembersAndRoles:
    """The member list, role changes and removals, and custom role management."""

    def test_members_are_listed_with_their_person_newest_first(self, adapter: Adapter) -> None:
        """Email and name come from the person; pages follow the joining time."""
        ada, bob, cy = user(), user(), user()
        mine, theirs = workspace(ada), workspace(ada)
        adapter.store(
            ada,
            bob,
            cy,
            mine,
            theirs,
            Membership(mine.id, ada.id, "admin", at(0)),
            Membership(mine.id, bob.id, "viewer", at(1)),
            Membership(theirs.id, cy.id, "admin", at(2)),
        )
        with adapter.uow() as uow:
            first = uow.memberships.list_members(mine.id, PageRequest(1))
            assert [(m.user_id, m.email, m.role) for m in first.items] == [
                (bob.id, bob.email, "viewer")
            ]
            assert first.items[0].joined_at == at(1)
            assert first.next_cursor is not None
            rest = uow.memberships.list_members(mine.id, PageRequest(5, first.next_cursor))
            assert [m.user_id for m in rest.items] == [ada.id]
            assert rest.next_cursor is None

    def test_roles_are_changed_counted_and_memberships_removed(self, adapter: Adapter) -> None:
        """``update`` keeps the joining time; ``count_with_role`` is per workspace."""
        ada, bob = user(), user()
        mine, theirs = workspace(ada), workspace(ada)
        adapter.store(
            ada,
            bob,
            mine,
            theirs,
            Membership(mine.id, ada.id, "admin", at(0)),
            Membership(mine.id, bob.id, "viewer", at(1)),
            Membership(theirs.id, ada.id, "admin", at(2)),
        )
        with adapter.uow() as uow:
            uow.memberships.update(Membership(mine.id, bob.id, "admin", at(99)))
            with pytest.raises(IntegrityViolationError):
                uow.memberships.update(Membership(mine.id, uuid4(), "admin", at(0)))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.memberships.get(mine.id, bob.id) == Membership(
                mine.id, bob.id, "admin", at(1)
            )
            assert uow.memberships.count_with_role(mine.id, "admin") == 2
            assert uow.memberships.count_with_role(theirs.id, "admin") == 1
            assert uow.memberships.count_with_role(mine.id, "viewer") == 0
            uow.memberships.remove(mine.id, bob.id)
            uow.memberships.remove(mine.id, uuid4())
            uow.commit()
        with adapter.uow() as uow:
            assert uow.memberships.get(mine.id, bob.id) is None
            assert uow.memberships.count(mine.id) == 1

    def test_custom_roles_are_added_listed_updated_and_removed(self, adapter: Adapter) -> None:
        """A duplicate slug is ``name_taken``; the list is by slug; updates are stored."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        adapter.store(ada, mine, theirs)
        ops = Role("ops", "Operations", frozenset({Permission.BACKUPS_TRIGGER}))
        audit_role = Role("a-team", "Auditors", frozenset({Permission.AUDIT_READ}))
        with adapter.uow() as uow:
            uow.roles.add(mine.id, ops)
            uow.roles.add(mine.id, audit_role)
            uow.roles.add(theirs.id, ops)
            uow.commit()
        with adapter.uow() as uow, pytest.raises(NameTakenError):
            uow.roles.add(mine.id, Role("ops", "Again", frozenset()))
        with adapter.uow() as uow:
            assert uow.roles.list(mine.id) == [audit_role, ops]
            wider = attrs.evolve(ops, name="Ops", permissions=frozenset(Permission))
            uow.roles.update(mine.id, wider)
            with pytest.raises(IntegrityViolationError):
                uow.roles.update(mine.id, Role("nobody", "Nobody", frozenset()))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.roles.get(mine.id, "ops") == wider
            assert uow.roles.get(theirs.id, "ops") == ops
            uow.roles.remove(mine.id, "ops")
            uow.roles.remove(mine.id, "nobody")
            uow.commit()
        with adapter.uow() as uow:
            assert uow.roles.list(mine.id) == [audit_role]
            assert uow.roles.list(theirs.id) == [ops]


class TestInvitations:
    """Invitations: scoped look-ups, look-up by email in any case, pending counts."""

    def test_an_invitation_comes_back_equal_and_only_in_its_workspace(
        self, adapter: Adapter
    ) -> None:
        """``get`` is scoped; ``get_for_email`` matches the email case-insensitively."""
        ada = user()
        mine, theirs = workspace(ada), workspace(ada)
        stored = invitation(mine.id, email="Ann.Lee@Example.com")
        adapter.store(ada, mine, theirs, stored)
        with adapter.uow() as uow:
            assert uow.invitations.get(mine.id, stored.id) == stored
            assert uow.invitations.get(theirs.id, stored.id) is None
            assert uow.invitations.get_for_email(stored.id, "ann.lee@EXAMPLE.com") == stored
            assert uow.invitations.get_for_email(stored.id, "bob@example.com") is None
            assert uow.invitations.get_for_email(uuid4(), "ann.lee@example.com") is None
        with pytest.raises(IntegrityViolationError):
            adapter.store(invitation(uuid4()))

    def test_pending_invitations_are_counted_until_used_or_expired(self, adapter: Adapter) -> None:
        """Used and expired invitations hold no seat; ``role`` narrows the count."""
        ada = user()
        mine = workspace(ada)
        used, fresh, ops = (
            invitation(mine.id),
            invitation(mine.id, at(10)),
            invitation(mine.id, at(20), role="ops"),
        )
        adapter.store(ada, mine, used, fresh, ops)
        with adapter.uow() as uow:
            uow.invitations.update(used.accepted(at(30)))
            with pytest.raises(IntegrityViolationError):
                uow.invitations.update(invitation(mine.id))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.invitations.get(mine.id, used.id) == used.accepted(at(30))
            assert uow.invitations.count_pending(mine.id, at(40)) == 2
            assert uow.invitations.count_pending(mine.id, at(40), role="ops") == 1
            week = 7 * 24 * 3600
            assert uow.invitations.count_pending(mine.id, at(week + 10)) == 1
            assert uow.invitations.count_pending(mine.id, at(week + 20)) == 0

    def test_invitations_are_listed_newest_first_across_pages(self, adapter: Adapter) -> None:
        """Keyset pages by creation time."""
        ada = user()
        mine = workspace(ada)
        made = [invitation(mine.id, at(i)) for i in range(3)]
        adapter.store(ada, mine, *made)
        with adapter.uow() as uow:
            first = uow.invitations.list(mine.id, PageRequest(2))
            assert first.items == [made[2], made[1]]
            assert first.next_cursor is not None
            rest = uow.invitations.list(mine.id, PageRequest(2, first.next_cursor))
            assert rest.items == [made[0]]
            assert rest.next_cursor is None


class TestAudit:
    """The audit trail: storage, filters, keyset pages."""

    def test_an_event_comes_back_equal_with_its_changes_in_order(self, adapter: Adapter) -> None:
        """Changes keep their field order; the system actor has no id."""
        ada = user()
        target = workspace(ada)
        changes = {
            "retention": Change(None, {"expire_after": "P30D", "lock_for": "PT0S"}),
            "name": Change("a", "b"),
            "paused": Change(False, True),
            "limit": Change(1.5, [1, "x", None]),
        }
        event = audit_event(target.id, actor=SYSTEM_ACTOR, changes=changes)
        bare = audit_event(target.id, occurred_at=at(-1))
        adapter.store(ada, target, event, bare)
        with adapter.uow() as uow:
            listed = uow.audit.list(target.id, AuditFilter(), PageRequest()).items
        assert listed == [event, bare]
        assert listed[0].changes is not None
        assert list(listed[0].changes) == list(changes)

    def test_an_event_needs_an_existing_workspace(self, adapter: Adapter) -> None:
        """A dangling workspace is an integrity violation."""
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.audit.add(audit_event(uuid4()))

    def test_filters_combine(self, adapter: Adapter) -> None:
        """``action``, ``actor_id`` and ``since`` (inclusive) narrow the list together."""
        ada = user()
        target, other = workspace(ada), workspace(ada)
        me = Actor(PrincipalType.USER, ada.id)
        events = [
            audit_event(target.id, at(0), "backup.create", me),
            audit_event(target.id, at(10), "backup.update", me),
            audit_event(target.id, at(20), "backup.create", SYSTEM_ACTOR),
            audit_event(target.id, at(30), "backup.create", me),
            audit_event(other.id, at(40), "backup.create", me),
        ]
        adapter.store(ada, target, other, *events)

        def listed(filters: AuditFilter) -> list[int]:
            with adapter.uow() as uow:
                page = uow.audit.list(target.id, filters, PageRequest())
            return [events.index(event) for event in page.items]

        assert listed(AuditFilter()) == [3, 2, 1, 0]
        assert listed(AuditFilter(action="backup.create")) == [3, 2, 0]
        assert listed(AuditFilter(actor_id=ada.id)) == [3, 1, 0]
        assert listed(AuditFilter(since=at(10))) == [3, 2, 1]
        assert listed(AuditFilter(action="backup.create", actor_id=ada.id, since=at(10))) == [3]
        assert listed(AuditFilter(action="nothing")) == []

    def test_filtered_events_are_paged_newest_first(self, adapter: Adapter) -> None:
        """Keyset pages under a filter, ties broken by id."""
        ada = user()
        target = workspace(ada)
        creates = [audit_event(target.id, at(i // 3), "backup.create") for i in range(8)]
        noise = [audit_event(target.id, at(i), "backup.delete") for i in range(4)]
        adapter.store(ada, target, *creates, *noise)
        expected = sorted(creates, key=lambda e: (e.occurred_at, e.id), reverse=True)
        listed: list[AuditEvent] = []
        request = PageRequest(limit=3)
        filters = AuditFilter(action="backup.create")
        with adapter.uow() as uow:
            while True:
                page = uow.audit.list(target.id, filters, request)
                listed += page.items
                if page.next_cursor is None:
                    break
                request = PageRequest(limit=3, after=page.next_cursor)
        assert listed == expected


class TestIdempotency:
    """Idempotency keys: reservation, expiry, completion."""

    def record(
        self, key: str = "key-1", created_at: float = 0, scope: str = "s"
    ) -> IdempotencyRecord:
        """A reservation of ``key``."""
        return IdempotencyRecord(scope, key, f"fingerprint-{created_at}", at(created_at))

    def test_a_reservation_is_found_and_completed(self, adapter: Adapter) -> None:
        """``get`` finds it; ``complete`` attaches the result."""
        with adapter.uow() as uow:
            uow.idempotency.reserve(self.record(), expired_before=at(-86400))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.idempotency.get("s", "key-1") == self.record()
            assert uow.idempotency.get("s", "other") is None
            assert uow.idempotency.get("other", "key-1") is None
            uow.idempotency.complete("s", "key-1", '{"id": "x"}')
            uow.commit()
        with adapter.uow() as uow:
            assert uow.idempotency.get("s", "key-1") == attrs.evolve(
                self.record(), body='{"id": "x"}'
            )

    def test_a_live_key_is_taken_and_an_expired_one_replaced(self, adapter: Adapter) -> None:
        """Taken while ``created_at >= expired_before``; replaced once older."""
        adapter_uow = adapter.uow
        with adapter_uow() as uow:
            uow.idempotency.reserve(self.record(created_at=0), expired_before=at(-100))
            uow.idempotency.complete("s", "key-1", "first")
            uow.commit()
        for expired_before in (at(-1), at(0)):
            with adapter_uow() as uow, pytest.raises(IdempotencyKeyTakenError):
                uow.idempotency.reserve(self.record(created_at=5), expired_before=expired_before)
        with adapter_uow() as uow:
            uow.idempotency.reserve(self.record(created_at=5), expired_before=at(0.000001))
            uow.commit()
        with adapter_uow() as uow:
            assert uow.idempotency.get("s", "key-1") == self.record(created_at=5)

    def test_the_same_key_in_another_scope_is_free(self, adapter: Adapter) -> None:
        """Keys are scoped."""
        with adapter.uow() as uow:
            uow.idempotency.reserve(self.record(scope="a"), expired_before=at(-1))
            uow.idempotency.reserve(self.record(scope="b"), expired_before=at(-1))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.idempotency.get("a", "key-1") is not None
            assert uow.idempotency.get("b", "key-1") is not None

    def test_completing_an_unreserved_key_is_an_integrity_violation(self, adapter: Adapter) -> None:
        """There is nothing to complete."""
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.idempotency.complete("s", "never", "{}")


class TestAccounts:
    """Local accounts and failed sign-ins."""

    def test_an_account_is_found_by_id_and_by_email_in_any_case(self, adapter: Adapter) -> None:
        """Email look-ups fold case."""
        stored = account("Ada.Lovelace@Example.com")
        adapter.store(stored)
        with adapter.uow() as uow:
            assert uow.accounts.get(stored.id) == stored
            assert uow.accounts.get_by_email("ada.lovelace@example.COM") == stored
            assert uow.accounts.get_by_email("grace@example.com") is None
            assert uow.accounts.get(uuid4()) is None

    def test_an_email_in_another_case_is_taken(self, adapter: Adapter) -> None:
        """``NameTakenError`` with the same message everywhere."""
        adapter.store(account("ada@example.com"))
        with adapter.uow() as uow, pytest.raises(NameTakenError) as refused:
            uow.accounts.add(account("ADA@example.com"))
        assert refused.value.message == "an account with this email already exists"

    def test_failed_sign_ins_are_listed_per_address_and_email_since_an_instant(
        self, adapter: Adapter
    ) -> None:
        """Per address, and per address and email (case-insensitively): newest first, at
        most ``limit``, ``since`` inclusive, several at one instant too."""
        home, away = "198.51.100.20", "203.0.113.7"
        with adapter.uow() as uow:
            for second in (0, 10, 10, 20):
                uow.accounts.record_failed_login("Ada@example.com", home, at(second))
            uow.accounts.record_failed_login("grace@example.com", home, at(15))
            uow.accounts.record_failed_login("ada@example.com", away, at(5))
            uow.commit()
        with adapter.uow() as uow:
            recent = uow.accounts.recent_failed_logins
            assert recent(home, at(0), 10, email="ada@example.com") == [
                at(20),
                at(10),
                at(10),
                at(0),
            ]
            assert recent(home, at(10), 2, email="ADA@example.com") == [at(20), at(10)]
            assert recent(home, at(21), 10, email="ada@example.com") == []
            assert recent(home, at(0), 10, email="nobody@example.com") == []
            assert recent(home, at(0), 10) == [at(20), at(15), at(10), at(10), at(0)]
            assert recent(away, at(0), 10) == [at(5)]
            assert recent(away, at(0), 10, email="grace@example.com") == []
            assert recent("192.0.2.1", at(0), 10) == []


class TestDeviceGrants:
    """Device-code grants."""

    def test_a_grant_is_found_by_each_of_its_codes(self, adapter: Adapter) -> None:
        """Device code hash, user code and access token hash each find the newest grant."""
        issued = device_grant(
            state=GrantState.ISSUED,
            account_id=uuid4(),
            failed_approvals=2,
            last_polled_at=at(30),
            access_token_hash="access-1",
            access_expires_at=at(630),
        )
        adapter.store(issued)
        with adapter.uow() as uow:
            assert uow.device_grants.get_by_device_code(issued.device_code_hash) == issued
            assert uow.device_grants.get_by_user_code(issued.user_code) == issued
            assert uow.device_grants.get_by_access_token("access-1") == issued
            assert uow.device_grants.get_by_device_code("unknown") is None
            assert uow.device_grants.get_by_user_code("unknown") is None
            assert uow.device_grants.get_by_access_token("unknown") is None

    def test_a_reused_user_code_finds_the_newest_grant(self, adapter: Adapter) -> None:
        """User codes are short and may repeat over time."""
        old = device_grant(created_at=at(0), user_code="BCDF-GHJK")
        new = device_grant(created_at=at(700), user_code="BCDF-GHJK")
        adapter.store(new, old)
        with adapter.uow() as uow:
            assert uow.device_grants.get_by_user_code("BCDF-GHJK") == new

    def test_an_update_is_stored_and_a_missing_grant_refused(self, adapter: Adapter) -> None:
        """Updating a grant that does not exist is an integrity violation."""
        grant = device_grant()
        adapter.store(grant)
        approved = attrs.evolve(grant, state=GrantState.APPROVED, account_id=uuid4())
        with adapter.uow() as uow:
            uow.device_grants.update(approved)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.device_grants.get_by_device_code(grant.device_code_hash) == approved
            with pytest.raises(IntegrityViolationError):
                uow.device_grants.update(device_grant())


class TestUnitOfWork:
    """Transactions: nothing is kept unless committed."""

    def test_changes_not_committed_are_rolled_back(self, adapter: Adapter) -> None:
        """Leaving without ``commit`` drops every change of the unit."""
        ada = user()
        with adapter.uow() as uow:
            uow.users.add(ada)
            assert uow.users.get(ada.id) == ada  # a unit sees its own writes
        with adapter.uow() as uow:
            assert uow.users.get(ada.id) is None

    def test_an_exception_rolls_back(self, adapter: Adapter) -> None:
        """An error inside the unit leaves nothing behind."""
        ada = user()

        def fail_after_adding() -> None:
            with adapter.uow() as uow:
                uow.users.add(ada)
                raise ZeroDivisionError

        with pytest.raises(ZeroDivisionError):
            fail_after_adding()
        with adapter.uow() as uow:
            assert uow.users.get(ada.id) is None

    def test_only_what_was_committed_stays(self, adapter: Adapter) -> None:
        """Writes after the last commit are rolled back."""
        ada, bob = user(), user()
        with adapter.uow() as uow:
            uow.users.add(ada)
            uow.commit()
            uow.users.add(bob)
        with adapter.uow() as uow:
            assert uow.users.get(ada.id) == ada
            assert uow.users.get(bob.id) is None

    def test_a_refused_write_leaves_nothing_once_rolled_back(self, adapter: Adapter) -> None:
        """A use case that meets a refusal rolls back: the unit's earlier writes go too."""
        ada = user()
        target = workspace(ada)
        adapter.store(ada, target, backup(target.id, "Nightly"))
        extra = backup(target.id, "Weekly")

        def add_both() -> None:
            with adapter.uow() as uow:
                uow.backups.add(extra)
                uow.backups.add(backup(target.id, "nightly"))

        with pytest.raises(NameTakenError):
            add_both()
        with adapter.uow() as uow:
            assert uow.backups.get(target.id, extra.id) is None

    def test_a_unit_inside_another_on_one_thread_is_refused(self, adapter: Adapter) -> None:
        """It would wait for the outer unit's locks forever."""
        with adapter.uow(), pytest.raises(RuntimeError), adapter.uow():
            pass
        with adapter.uow() as uow:  # the refusal left no unit open
            uow.ping()

    def test_ping_answers(self, adapter: Adapter) -> None:
        """A database that answers passes the readiness probe."""
        with adapter.uow() as uow:
            uow.ping()

    def test_instants_come_back_as_the_same_instant(self, adapter: Adapter) -> None:
        """Whatever offset an instant was written with, it reads back as that instant."""
        plus_two = timezone(timedelta(hours=2))
        ada = attrs.evolve(user(), created_at=T0.astimezone(plus_two))
        adapter.store(ada)
        with adapter.uow() as uow:
            found = uow.users.get(ada.id)
        assert found is not None
        assert found.created_at == T0
