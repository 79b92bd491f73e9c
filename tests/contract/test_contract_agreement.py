"""The adapters agree: random sequences of repository operations, applied to the in-memory,
SQLite and PostgreSQL adapters alike, give the same results and the same refusals at every
step (after hypothesis' ``tests/nocover/test_database_agreement.py``).

Each step runs one repository call in a unit of work of each adapter, committed or not, and
compares what came back: records, pages and cursors, or the error (with its message for
refusals a client sees). Ids come from a counter, so adapters are never asked to store two
rows under one primary key (where the in-memory adapter overwrites and SQL refuses).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial
from typing import Any
from uuid import UUID

import attrs
import pytest
from contract_records import T0, Adapter, at
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    multiple,
    rule,
    run_state_machine_as_test,
)

from strongroom.domain.accounts import Account, DeviceGrant, GrantState
from strongroom.domain.audit import AuditEvent, Change, Outcome
from strongroom.domain.backups import Backup, BackupKind, RetentionPolicy
from strongroom.domain.billing import BillingState
from strongroom.domain.durations import Duration
from strongroom.domain.errors import NameTakenError
from strongroom.domain.pagination import PageRequest
from strongroom.domain.permissions import Permission, Role
from strongroom.domain.principals import SYSTEM_ACTOR, Actor, PrincipalType, Session
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.runs import Progress, Run, RunState, RunTrigger
from strongroom.domain.users import User
from strongroom.domain.workspaces import Membership, Workspace
from strongroom.ports.driven.repositories import (
    AuditFilter,
    IdempotencyKeyTakenError,
    IdempotencyRecord,
    IntegrityViolationError,
)
from strongroom.ports.driven.unit_of_work import UnitOfWork

NAMES = st.sampled_from(["Nightly", "NIGHTLY", "nightly", "Weekly", "straße", "STRASSE", "Ω"])
EMAILS = st.sampled_from(["ada@example.com", "ADA@example.com", "bob@example.com", "Ω@x.io"])
ROLES = st.sampled_from(["admin", "member", "viewer", "ops", "ghost"])
INSTANTS = st.integers(0, 4).map(at)  # few distinct instants: ties in every list
ACTIONS = st.sampled_from(["backup.create", "backup.update", "workspace.update"])
OPS_ROLE = Role("ops", "Operations", frozenset({Permission.BACKUPS_TRIGGER}))
RARELY = st.integers(0, 4).map(lambda drawn: drawn == 0)
# Instants to the microsecond, which every adapter keeps (progress sits in a JSON column).
FINE_INSTANTS = st.builds(lambda s, us: at(s + us / 1e6), st.integers(0, 4), st.integers(0, 999))
PROGRESS = st.none() | st.builds(
    Progress,
    bytes_done=st.integers(0, 2**40),
    bytes_total=st.none() | st.just(2**41),
    message=st.none() | st.sampled_from(["", "reading /var", 'Ω ünï "q"']),
    updated_at=st.none() | FINE_INSTANTS,
)

Outcome_ = tuple[Any, ...]


class AgreementMachine(RuleBasedStateMachine):
    """Drives several adapters with the same operations and compares every answer."""

    users = Bundle("users")
    workspaces = Bundle("workspaces")
    backups = Bundle("backups")
    sessions = Bundle("sessions")
    runs = Bundle("runs")
    grants = Bundle("grants")

    def __init__(self, adapters: list[Adapter]) -> None:
        super().__init__()
        self.adapters = adapters
        self._ids = itertools.count(1)
        self.last_agreed_ok = False

    def new_id(self, high: int) -> UUID:
        """A unique id whose order among others is random (``high``) but never tied."""
        return UUID(int=(high << 64) | next(self._ids))

    def agree(self, what: str, operation: Callable[[UnitOfWork], Any], commit: bool) -> Any:
        """Run ``operation`` on every adapter; assert identical outcomes; return the value."""
        outcomes: list[Outcome_] = []
        for adapter in self.adapters:
            try:
                with adapter.uow() as uow:
                    value = operation(uow)
                    if commit:
                        uow.commit()
                outcomes.append(("ok", value))
            except NameTakenError as error:
                outcomes.append(("refused", "NameTakenError", error.message))
            except (IntegrityViolationError, IdempotencyKeyTakenError) as error:
                outcomes.append(("refused", type(error).__name__))
        note(f"{what} (commit={commit}) -> {outcomes[0]!r}")
        for adapter, outcome in zip(self.adapters[1:], outcomes[1:], strict=True):
            assert outcome == outcomes[0], f"{adapter.name} disagrees with {self.adapters[0].name}"
        self.last_agreed_ok = outcomes[0][0] == "ok"
        return outcomes[0][1] if outcomes[0][0] == "ok" else None

    # People, workspaces, memberships.

    @initialize(target=workspaces, highs=st.tuples(st.integers(0, 2**32), st.integers(0, 2**32)))
    def two_workspaces(self, highs: tuple[int, int]) -> Any:
        """Every run starts with two workspaces, so that backups and audit meet early."""
        creator = User(self.new_id(0), "c@example.com", "C", "creator", T0)
        self.agree("add creator", lambda uow: uow.users.add(creator), commit=True)
        created = [self._workspace(creator.id, high, T0) for high in highs]
        for workspace in created:
            self.agree("add workspace", partial(_add_workspace, workspace=workspace), True)
            for adapter in self.adapters:
                adapter.add_role(workspace.id, OPS_ROLE)
        return multiple(*created)

    def _workspace(self, creator_id: UUID, high: int, created_at: Any) -> Workspace:
        return Workspace(
            self.new_id(high),
            "W",
            "org",
            "cus",
            "ns",
            creator_id,
            BillingState.TRIAL,
            created_at,
            created_at,
        )

    @rule(target=users, high=st.integers(0, 2**32), created_at=INSTANTS)
    def add_user(self, high: int, created_at: Any) -> User:
        person = User(self.new_id(high), "p@example.com", "P", f"subject-{high}", created_at)
        self.agree("add user", lambda uow: uow.users.add(person), commit=True)
        return person

    @rule(
        target=workspaces,
        creator=users,
        high=st.integers(0, 2**32),
        created_at=INSTANTS,
        dangling=RARELY,
        commit=st.booleans(),
    )
    def add_workspace(
        self, creator: User, high: int, created_at: Any, dangling: bool, commit: bool
    ) -> Workspace:
        workspace = self._workspace(self.new_id(0) if dangling else creator.id, high, created_at)
        self.agree("add workspace", lambda uow: uow.workspaces.add(workspace), commit)
        if commit and self.last_agreed_ok:
            for adapter in self.adapters:  # custom roles cannot be created through the ports
                adapter.add_role(workspace.id, OPS_ROLE)
        return workspace

    @rule(workspace=workspaces, billing=st.sampled_from(BillingState), limit=st.integers(0, 9))
    def update_workspace(self, workspace: Workspace, billing: BillingState, limit: int) -> None:
        changed = workspace.with_billing_state(billing, at(9)).with_limit(
            QuotaResource.BACKUPS_PER_WORKSPACE, limit, at(9)
        )
        self.agree("update workspace", lambda uow: uow.workspaces.update(changed), commit=True)
        self.agree(
            "get workspace", lambda uow: uow.workspaces.get(workspace.id, for_update=True), True
        )

    @rule(workspace=consumes(workspaces), commit=st.booleans())
    def remove_workspace(self, workspace: Workspace, commit: bool) -> None:
        self.agree("remove workspace", lambda uow: uow.workspaces.remove(workspace.id), commit)

    @rule(person=users)
    def count_created_by(self, person: User) -> None:
        self.agree("count created", lambda uow: uow.workspaces.count_created_by(person.id), False)

    @rule(workspace=workspaces, person=users, role=ROLES, commit=st.booleans())
    def add_membership(self, workspace: Workspace, person: User, role: str, commit: bool) -> None:
        membership = Membership(workspace.id, person.id, role, T0)
        self.agree("add membership", lambda uow: uow.memberships.add(membership), commit)
        self.agree("count members", lambda uow: uow.memberships.count(workspace.id), False)

    @rule(person=users, limit=st.integers(1, 3))
    def list_memberships(self, person: User, limit: int) -> None:
        def both_pages(uow: UnitOfWork) -> Any:
            first = uow.memberships.list_for_user(person.id, PageRequest(limit))
            return first, uow.memberships.list_for_user(
                person.id, PageRequest(limit, first.next_cursor)
            )

        self.agree("list memberships", both_pages, commit=False)

    # Sessions.

    @rule(
        target=sessions,
        person=users,
        scope=st.none() | workspaces,
        high=st.integers(0, 2**32),
        commit=st.booleans(),
    )
    def add_session(
        self, person: User, scope: Workspace | None, high: int, commit: bool
    ) -> Session:
        session = Session(
            self.new_id(high),
            f"hash-{next(self._ids)}",
            person.id,
            None if scope is None else scope.id,
            T0,
            at(3600),
        )
        self.agree("add session", lambda uow: uow.sessions.add(session), commit)
        return session

    @rule(session=sessions, revoke=st.none() | INSTANTS)
    def find_session(self, session: Session, revoke: Any) -> None:
        if revoke is not None:
            self.agree("revoke", lambda uow: uow.sessions.revoke(session.id, revoke), True)
        self.agree("find session", lambda uow: uow.sessions.find(session.token_hash), False)

    # Backups.

    @rule(
        target=backups,
        workspace=workspaces,
        name=NAMES,
        high=st.integers(0, 2**32),
        created_at=INSTANTS,
        commit=st.booleans(),
    )
    def add_backup(
        self, workspace: Workspace, name: str, high: int, created_at: Any, commit: bool
    ) -> Backup:
        backup = Backup.draft(self.new_id(high), workspace.id, name, BackupKind.MANUAL, created_at)
        self.agree("add backup", lambda uow: uow.backups.add(backup), commit)
        return backup

    @rule(backup=backups, name=NAMES, retention=st.booleans(), commit=st.booleans())
    def update_backup(self, backup: Backup, name: str, retention: bool, commit: bool) -> None:
        changed = attrs.evolve(
            backup,
            name=name,
            retention=RetentionPolicy(Duration(86_400), Duration(0)) if retention else None,
            updated_at=at(7),
        )
        self.agree("update backup", lambda uow: uow.backups.update(changed), commit)
        self.agree(
            "get backup",
            lambda uow: uow.backups.get(backup.workspace_id, backup.id, for_update=True),
            commit=False,
        )

    @rule(backup=consumes(backups), commit=st.booleans())
    def remove_backup(self, backup: Backup, commit: bool) -> None:
        self.agree(
            "remove backup", lambda uow: uow.backups.remove(backup.workspace_id, backup.id), commit
        )

    @rule(workspace=workspaces, limit=st.integers(1, 3))
    def list_backups(self, workspace: Workspace, limit: int) -> None:
        def both_pages(uow: UnitOfWork) -> Any:
            first = uow.backups.list(workspace.id, PageRequest(limit))
            second = uow.backups.list(workspace.id, PageRequest(limit, first.next_cursor))
            return first, second, uow.backups.count(workspace.id)

        self.agree("list backups", both_pages, commit=False)

    # Runs.

    @rule(
        target=runs,
        backup=backups,
        high=st.integers(0, 2**32),
        created_at=INSTANTS,
        state=st.sampled_from(RunState),
        attempt=st.integers(1, 3),
        lease=st.none() | FINE_INSTANTS,
        cancel_requested=st.booleans(),
        progress=PROGRESS,
        commit=st.booleans(),
    )
    def add_run(
        self,
        backup: Backup,
        high: int,
        created_at: Any,
        state: RunState,
        attempt: int,
        lease: Any,
        cancel_requested: bool,
        progress: Progress | None,
        commit: bool,
    ) -> Run:
        run = attrs.evolve(
            Run.queued(self.new_id(high), backup, RunTrigger.SCHEDULE, created_at),
            state=state,
            attempt=attempt,
            lease_expires_at=lease,
            cancel_requested=cancel_requested,
            progress=progress,
        )
        self.agree("add run", lambda uow: uow.runs.add(run), commit)
        return run

    @rule(
        run=runs,
        state=st.sampled_from(RunState),
        lease=st.none() | FINE_INSTANTS,
        cancel_requested=st.booleans(),
        progress=PROGRESS,
    )
    def update_run(
        self,
        run: Run,
        state: RunState,
        lease: Any,
        cancel_requested: bool,
        progress: Progress | None,
    ) -> None:
        changed = attrs.evolve(
            run,
            state=state,
            attempt=run.attempt % 3 + 1,
            lease_expires_at=lease,
            cancel_requested=cancel_requested,
            progress=progress,
        )
        self.agree("update run", lambda uow: uow.runs.update(changed), commit=True)
        self.agree(
            "get run",
            lambda uow: uow.runs.get(run.workspace_id, run.id, for_update=True),
            commit=False,
        )

    @rule(
        backup=backups,
        state=st.none() | st.sampled_from(RunState),
        limit=st.integers(1, 3),
        foreign=RARELY,
    )
    def list_runs(self, backup: Backup, state: RunState | None, limit: int, foreign: bool) -> None:
        workspace_id = self.new_id(0) if foreign else backup.workspace_id

        def both_pages(uow: UnitOfWork) -> Any:
            first = uow.runs.list_for_backup(workspace_id, backup.id, state, PageRequest(limit))
            return first, uow.runs.list_for_backup(
                workspace_id, backup.id, state, PageRequest(limit, first.next_cursor)
            )

        self.agree("list runs", both_pages, commit=False)

    # Audit.

    @rule(
        workspace=workspaces,
        action=ACTIONS,
        system=st.booleans(),
        occurred_at=INSTANTS,
        high=st.integers(0, 2**32),
    )
    def add_audit(
        self, workspace: Workspace, action: str, system: bool, occurred_at: Any, high: int
    ) -> None:
        event = AuditEvent(
            self.new_id(high),
            workspace.id,
            occurred_at,
            SYSTEM_ACTOR if system else Actor(PrincipalType.USER, workspace.created_by),
            action,
            "backup",
            None,
            None,
            Outcome.SUCCESS,
            {"name": Change("a", "b"), "paused": Change(False, True)},
        )
        self.agree("add audit", lambda uow: uow.audit.add(event), commit=True)

    @rule(
        workspace=workspaces,
        action=st.none() | ACTIONS,
        by_creator=st.booleans(),
        since=st.none() | INSTANTS,
        limit=st.integers(1, 3),
    )
    def list_audit(
        self,
        workspace: Workspace,
        action: str | None,
        by_creator: bool,
        since: Any,
        limit: int,
    ) -> None:
        filters = AuditFilter(action, workspace.created_by if by_creator else None, since)

        def both_pages(uow: UnitOfWork) -> Any:
            first = uow.audit.list(workspace.id, filters, PageRequest(limit))
            return first, uow.audit.list(
                workspace.id, filters, PageRequest(limit, first.next_cursor)
            )

        self.agree("list audit", both_pages, commit=False)

    # Idempotency keys.

    @rule(
        key=st.sampled_from(["k1", "k2"]),
        created_at=INSTANTS,
        expired_before=INSTANTS,
        complete=st.booleans(),
        commit=st.booleans(),
    )
    def reserve_key(
        self, key: str, created_at: Any, expired_before: Any, complete: bool, commit: bool
    ) -> None:
        record = IdempotencyRecord("scope", key, f"fp-{created_at}", created_at)

        def reserve(uow: UnitOfWork) -> Any:
            uow.idempotency.reserve(record, expired_before)
            if complete:
                uow.idempotency.complete("scope", key, "{}")
            return uow.idempotency.get("scope", key)

        self.agree("reserve key", reserve, commit)

    @rule(key=st.sampled_from(["k1", "k2", "never"]))
    def complete_key(self, key: str) -> None:
        self.agree("complete key", lambda uow: uow.idempotency.complete("scope", key, "x"), True)

    @rule(expired_before=INSTANTS, commit=st.booleans())
    def purge_keys(self, expired_before: Any, commit: bool) -> None:
        self.agree("purge keys", lambda uow: uow.idempotency.purge(expired_before), commit)

    # Monitoring figures (each workspace's stored bytes come in no particular order).

    @rule()
    def statistics(self) -> None:
        def figures(uow: UnitOfWork) -> Any:
            return (
                uow.statistics.runs_by_state(),
                uow.statistics.artifacts_by_state(),
                uow.statistics.artifacts_by_verification(),
                sorted(uow.statistics.workspace_storage_bytes()),
            )

        self.agree("statistics", figures, commit=False)

    # The identity provider's records.

    @rule(email=EMAILS, high=st.integers(0, 2**32), commit=st.booleans())
    def add_account(self, email: str, high: int, commit: bool) -> None:
        account = Account(self.new_id(high), email, "A", "hash", T0)
        self.agree("add account", lambda uow: uow.accounts.add(account), commit)
        self.agree("by email", lambda uow: uow.accounts.get_by_email(email.upper()), False)

    @rule(
        email=EMAILS,
        address=st.sampled_from(["198.51.100.20", "203.0.113.7"]),
        failed_at=INSTANTS,
        since=INSTANTS,
        by_email=st.booleans(),
    )
    def failed_login(
        self, email: str, address: str, failed_at: Any, since: Any, by_email: bool
    ) -> None:
        self.agree(
            "failed login",
            lambda uow: uow.accounts.record_failed_login(email, address, failed_at),
            True,
        )
        self.agree(
            "recent failed",
            lambda uow: uow.accounts.recent_failed_logins(
                address, since, 3, email=email.upper() if by_email else None
            ),
            False,
        )

    @rule(before=INSTANTS, commit=st.booleans())
    def purge_failed_logins(self, before: Any, commit: bool) -> None:
        self.agree(
            "purge failed logins", lambda uow: uow.accounts.purge_failed_logins(before), commit
        )

    @rule(target=grants, high=st.integers(0, 2**32), created_at=INSTANTS)
    def add_grant(self, high: int, created_at: Any) -> DeviceGrant:
        serial = next(self._ids)
        grant = DeviceGrant(
            self.new_id(high), f"device-{serial}", f"CODE-{serial}", "cli", created_at, at(600), 5
        )
        self.agree("add grant", lambda uow: uow.device_grants.add(grant), commit=True)
        return grant

    @rule(grant=grants, state=st.sampled_from(GrantState), token=st.booleans())
    def update_grant(self, grant: DeviceGrant, state: GrantState, token: bool) -> None:
        changed = attrs.evolve(
            grant,
            state=state,
            access_token_hash=f"token-{grant.user_code}" if token else None,
            last_polled_at=at(3),
        )
        self.agree("update grant", lambda uow: uow.device_grants.update(changed), commit=True)

        def look_up(uow: UnitOfWork) -> Any:
            grants = uow.device_grants
            return (
                grants.get_by_device_code(grant.device_code_hash),
                grants.get_by_user_code(grant.user_code),
                grants.get_by_access_token(f"token-{grant.user_code}"),
            )

        self.agree("look up grant", look_up, commit=False)


def _add_workspace(uow: UnitOfWork, workspace: Workspace) -> None:
    uow.workspaces.add(workspace)


@pytest.mark.slow
def test_the_adapters_agree_step_by_step(fresh_adapters: Callable[[], list[Adapter]]) -> None:
    """Random operations give the same results and refusals on every adapter.

    Half the profile's examples: each one drives three stores, PostgreSQL among them
    (``HYPOTHESIS_PROFILE=thorough`` still gives 500)."""
    run_state_machine_as_test(
        lambda: AgreementMachine(fresh_adapters()),  # type: ignore[arg-type]
        settings=settings(
            stateful_step_count=40, max_examples=max(1, settings.default.max_examples // 2)
        ),
    )
