"""The facade under random sequences of use by one to three people.

A ``RuleBasedStateMachine`` signs people in, creates and renames workspaces, switches
between them, creates, changes, pauses, resumes and deletes backups, and plays the
operator (billing state, backup quota). It keeps a small model in dicts, predicts the
outcome of every call from the contract (the first failing check wins, in the order of
contract section 1), and checks after every step that the facade agrees with the model:
backups, memberships, billing, quotas and the audit trail event by event.

Two things have no API yet and are set up directly through the in-memory adapter (they
are not audited, being no API call): a person joining a workspace as ``member`` or
``viewer`` (invitations), and a worker registered in a workspace.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar
from uuid import UUID

import attrs
import pytest
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from strategies import (
    PADDING,
    RETENTION_POOL,
    StoredConfig,
    accepted_changes_for,
    backup_changes,
    backup_kinds,
    invalid_names,
    kind_rule_violation,
    pooled_retention_policies,
    retention_policies,
    simple_names,
)
from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.domain.audit import AuditEvent, Outcome
from strongroom.domain.backups import (
    UNSET,
    Backup,
    BackupChanges,
    BackupKind,
    BackupState,
    CustomerS3Destination,
    Destination,
    RetentionPolicy,
    Schedule,
    ServiceDestination,
    Source,
)
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import (
    BillingRestrictedError,
    ForbiddenError,
    InvalidRequestError,
    LockExceedsExpiryError,
    MissingPermissionError,
    NameTakenError,
    NotFoundError,
    NoWorkspaceSelectedError,
    QuotaExceededError,
    RetentionImmutableError,
    StrongroomError,
    UnauthenticatedError,
    ValidationFailedError,
    WrongWorkspaceError,
)
from strongroom.domain.machines import Worker
from strongroom.domain.pagination import Cursor, PageRequest
from strongroom.domain.permissions import VIEWER
from strongroom.domain.principals import SYSTEM_ACTOR, Actor, Caller, PrincipalType
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.workspaces import Membership
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving import Strongroom
from support.world import make_facade, session_token

T = TypeVar("T")
MAX_PEOPLE = 3
WORKSPACES_PER_USER = 5
DEFAULT_BACKUP_LIMIT = 100
# Contract section 3: who may write what.
WRITES_BACKUPS = frozenset({"admin", "member"})
WRITES_WORKSPACE = frozenset({"admin"})

Expected = tuple[str, Actor, Outcome, str | None]
Refusals = frozenset[type[StrongroomError]]
SUCCEEDS: Refusals = frozenset()


def valid_name(raw: str) -> bool:
    """Contract section 1: 1..100 characters after trimming, no control characters (and
    text at all: no lone surrogates)."""
    name = raw.strip()
    return 1 <= len(name) <= 100 and not any(
        unicodedata.category(char) in ("Cc", "Cs") for char in name
    )


def attempt(call: Callable[[], T]) -> tuple[T | None, StrongroomError | None]:
    """The result of ``call``, or the refusal it raised."""
    try:
        return call(), None
    except StrongroomError as error:
        return None, error


@attrs.define
class PersonModel:
    """A signed-in person: the session token in use and the workspace it is scoped to."""

    index: int
    email: str
    user_id: UUID
    token: str
    scope: UUID | None = None
    created: int = 0

    @property
    def actor(self) -> Actor:
        """How the audit trail records this person."""
        return Actor(PrincipalType.USER, self.user_id)


@attrs.define
class WorkspaceModel:
    """A workspace: its name, billing state, backup limit, and members' roles."""

    id: UUID
    label: str
    name: str
    roles: dict[int, str]
    billing: BillingState = BillingState.TRIAL
    backup_limit: int = DEFAULT_BACKUP_LIMIT


@attrs.define
class BackupModel:
    """A backup's public fields as the contract says they must be."""

    id: UUID
    label: str
    workspace_id: UUID
    name: str
    kind: BackupKind
    state: BackupState = BackupState.DRAFT
    paused: bool = False
    source: Source | None = None
    has_credentials: bool = False
    schedule: Schedule | None = None
    worker_id: UUID | None = None
    retention: RetentionPolicy | None = None
    destination: Destination = attrs.field(factory=ServiceDestination)
    has_destination_credentials: bool = False

    def public(self) -> tuple[Any, ...]:
        """What must match the stored backup."""
        return (
            self.id,
            self.workspace_id,
            self.name,
            self.kind,
            self.state,
            self.paused,
            self.source,
            self.has_credentials,
            self.schedule,
            self.worker_id,
            self.retention,
            self.destination,
            self.has_destination_credentials,
        )

    def is_complete(self) -> bool:
        """Contract section 5: the kind's configuration is complete."""
        if self.retention is None:
            return False
        if self.kind is BackupKind.CLOUD:
            return self.source is not None and self.has_credentials
        if self.kind is BackupKind.LOCAL:
            return self.worker_id is not None
        return True

    def apply(self, changes: BackupChanges) -> None:
        """What an accepted PATCH does."""
        if changes.name is not UNSET:
            self.name = changes.name.strip()
        if changes.source is not UNSET:
            self.source = changes.source
        if changes.credentials is not UNSET:
            self.has_credentials = True
        if changes.schedule is not UNSET:
            self.schedule = changes.schedule
        if changes.worker_id is not UNSET:
            self.worker_id = changes.worker_id
        if changes.retention is not UNSET:
            self.retention = changes.retention
        if changes.destination is not UNSET:
            self.destination = changes.destination
            if isinstance(changes.destination, ServiceDestination):
                self.has_destination_credentials = False
        if changes.destination_credentials is not UNSET:
            self.has_destination_credentials = True
        if self.is_complete():
            self.state = BackupState.ACTIVE


def stored_public(backup: Backup) -> tuple[Any, ...]:
    """The same fields, read from a stored backup."""
    return (
        backup.id,
        backup.workspace_id,
        backup.name,
        backup.kind,
        backup.state,
        backup.paused,
        backup.source,
        backup.has_credentials,
        backup.schedule,
        backup.worker_id,
        backup.retention,
        backup.destination,
        backup.sealed_destination_credentials is not None,
    )


# Names of new backups: fresh ones, case variants of existing ones, and invalid ones.
CASE_VARIANTS = ("same", "upper", "lower", "swapcase", "padded")
_FRESH_NAMES = st.tuples(PADDING, simple_names(), PADDING).map("".join)
NAME_CHOICES = st.one_of(
    st.tuples(st.just("new"), _FRESH_NAMES),
    st.tuples(st.just("new"), _FRESH_NAMES),
    st.tuples(st.just("copy"), st.tuples(st.integers(0, 20), st.sampled_from(CASE_VARIANTS))),
    st.tuples(st.just("bad"), invalid_names()),
)
# Four in five names are valid (``one_of`` would flatten the invalid alternatives).
MOSTLY_VALID_NAMES = st.sampled_from([True, True, True, True, False]).flatmap(
    lambda valid: _FRESH_NAMES if valid else invalid_names()
)
PEOPLE = st.integers(0, MAX_PEOPLE - 1)
PICKS = st.integers(0, 50)
# Where a call points: mostly the caller's own workspace, sometimes another one.
TARGETS = st.sampled_from(["own", "own", "own", "other"])


class FacadeMachine(RuleBasedStateMachine):
    """Random use of the facade, checked against a model after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.store = MemoryStore()
        self.facade: Strongroom = make_facade(
            clock=self.clock, uow=partial(MemoryUnitOfWork, self.store)
        )
        self.people: list[PersonModel] = []
        self.workspaces: dict[UUID, WorkspaceModel] = {}
        self.backups: dict[UUID, BackupModel] = {}
        self.workers: dict[UUID, UUID] = {}
        self.first_retention: dict[UUID, RetentionPolicy] = {}
        self.audit_seen: dict[UUID, set[UUID]] = {}
        self.expected: dict[UUID, list[Expected]] = {}
        self.backups_created = 0

    # ------------------------------------------------------------------ helpers

    def _tick(self) -> None:
        self.clock.advance(timedelta(seconds=1))

    def _person(self, who: int) -> PersonModel:
        return self.people[who % len(self.people)]

    def _caller(self, person: PersonModel) -> Caller:
        return self.facade.access.authenticate(person.token)

    def _who(self, actor: Actor) -> str:
        """An actor as failure reports show it: a person's email, or ``system``."""
        if actor == SYSTEM_ACTOR:
            return "system"
        emails = [p.email for p in self.people if p.user_id == actor.id]
        return emails[0] if emails else f"{actor.type}:{actor.id}"

    def _role(self, person: PersonModel, workspace_id: UUID | None) -> str | None:
        if workspace_id is None or workspace_id not in self.workspaces:
            return None
        return self.workspaces[workspace_id].roles.get(person.index)

    def _expect(
        self,
        workspace_id: UUID,
        action: str,
        actor: Actor,
        target: UUID | None,
        outcome: Outcome = Outcome.SUCCESS,
    ) -> None:
        target_id = None if target is None else str(target)
        self.expected.setdefault(workspace_id, []).append((action, actor, outcome, target_id))

    def _expect_denied(
        self, scope: UUID, action: str, person: PersonModel, backup: BackupModel
    ) -> None:
        """A permission refusal is audited in the caller's workspace, but only when the
        backup is one of that workspace's (contract section 10: attempts on objects the
        caller cannot see are audited nowhere)."""
        if backup.workspace_id == scope:
            self._expect(scope, action, person.actor, backup.id, Outcome.DENIED)

    def _check(self, what: str, error: StrongroomError | None, refusals: Refusals) -> None:
        got = "success" if error is None else f"{type(error).__name__}: {error.message}"
        wanted = sorted(r.__name__ for r in refusals) or ["success"]
        note(f"  {what}: {got} (expected {' or '.join(wanted)})")
        if not refusals:
            assert error is None, f"{what} was refused: {got}"
        else:
            assert error is not None, f"{what} succeeded; expected {wanted}"
            assert type(error) in refusals, f"{what}: {got}; expected {wanted}"

    def _name(self, choice: tuple[str, Any], workspace_id: UUID | None) -> str:
        mode, value = choice
        if mode != "copy":
            return str(value)
        index, variant = value
        names = [b.name for b in self.backups.values() if b.workspace_id == workspace_id]
        names = names or [b.name for b in self.backups.values()] or ["nightly"]
        base: str = names[int(index) % len(names)]
        variants = {
            "same": base,
            "upper": base.upper(),
            "lower": base.lower(),
            "swapcase": base.swapcase(),
            "padded": f"  {base}\t",
        }
        return variants[str(variant)]

    def _name_taken(self, workspace_id: UUID, raw: str, besides: UUID | None = None) -> bool:
        key = raw.strip().casefold()
        return any(
            b.workspace_id == workspace_id and b.id != besides and b.name.casefold() == key
            for b in self.backups.values()
        )

    def _target(self, person: PersonModel, where: str, pick: int) -> UUID:
        others = [w for w in self.workspaces if w != person.scope]
        if where == "other" and others:
            return others[pick % len(others)]
        if person.scope is not None:
            return person.scope
        return next(iter(self.workspaces), UUID(int=0))

    def _pick_backup(self, pick: int) -> BackupModel:
        """A backup of any workspace or, one time in seven, an id that names no backup."""
        candidates = list(self.backups.values())
        if pick % 7 == 6 or not candidates:
            kind = list(BackupKind)[pick % len(BackupKind)]
            return BackupModel(UUID(int=pick + 1), "(no such backup)", UUID(int=0), "-", kind)
        return candidates[pick % len(candidates)]

    def _workspace_gate(self, person: PersonModel, workspace_id: UUID) -> Refusals | None:
        """The checks before permission of a call naming ``workspace_id`` in its path."""
        if person.scope is None:
            return frozenset({NoWorkspaceSelectedError})
        if workspace_id != person.scope:
            member = self._role(person, workspace_id) is not None
            return frozenset({WrongWorkspaceError if member else NotFoundError})
        return None

    def _observer(self, workspace_id: UUID) -> Caller:
        """A read-only caller scoped to ``workspace_id`` with the viewer's permissions,
        through which invariants read what the facade shows (reads write nothing)."""
        return Caller(
            actor=Actor(PrincipalType.USER, UUID(int=0)),
            credential_id=UUID(int=0),
            workspace_id=workspace_id,
            permissions=VIEWER.permissions,
        )

    def _stored_backups(self, workspace_id: UUID) -> list[Backup]:
        observer = self._observer(workspace_id)
        return list(
            self._pages(lambda page: self.facade.backups.list_in(observer, workspace_id, page), 200)
        )

    def _stored_events(self, workspace_id: UUID) -> list[AuditEvent]:
        observer = self._observer(workspace_id)
        return list(
            self._pages(
                lambda page: self.facade.audit.events(observer, workspace_id, AuditFilter(), page),
                200,
            )
        )

    def _pages(self, fetch: Callable[[PageRequest], Any], limit: int) -> Iterator[Any]:
        request = PageRequest(limit)
        while True:
            page = fetch(request)
            assert len(page.items) <= limit
            yield from page.items
            if page.next_cursor is None:
                return
            request = PageRequest(limit, Cursor.decode(page.next_cursor.encode()))

    # ------------------------------------------------------------------ people

    def _sign_in(self) -> PersonModel:
        index = len(self.people)
        email = f"person{index}@example.com"
        token = session_token(self.facade, email)
        caller = self.facade.access.authenticate(token)
        assert caller.user is not None
        assert caller.workspace_id is None
        person = PersonModel(index, email, caller.user.id, token)
        self.people.append(person)
        note(f"{email} signs in")
        return person

    def _switch(self, person: PersonModel, workspace_id: UUID) -> None:
        caller = self._caller(person)
        label = self.workspaces[workspace_id].label if workspace_id in self.workspaces else "?"
        note(f"{person.email} switches to {label}")
        issued, error = attempt(lambda: self.facade.sessions.switch(caller, workspace_id))
        member = self._role(person, workspace_id) is not None
        self._check("switch", error, SUCCEEDS if member else frozenset({NotFoundError}))
        if issued is None:
            assert self._caller(person).credential_id == caller.credential_id
            return
        assert issued.workspace_id == workspace_id
        with pytest.raises(UnauthenticatedError):
            self.facade.access.authenticate(person.token)
        person.token, person.scope = issued.token, workspace_id
        self._expect(workspace_id, "session.switch", person.actor, issued.session.id)

    def _create_workspace(self, person: PersonModel, raw: str) -> None:
        self._tick()
        caller = self._caller(person)
        note(f"{person.email} creates workspace {raw!r}")
        created, error = attempt(lambda: self.facade.workspaces.create(caller, raw))
        if not valid_name(raw):
            refusals: Refusals = frozenset({InvalidRequestError})
        elif person.created >= WORKSPACES_PER_USER:
            refusals = frozenset({QuotaExceededError})
        else:
            refusals = SUCCEEDS
        self._check("create workspace", error, refusals)
        if isinstance(error, QuotaExceededError):
            assert (error.resource, error.limit) == ("workspaces_per_user", WORKSPACES_PER_USER)
        if created is None:
            return
        assert created.name == raw.strip()
        assert created.billing_state is BillingState.TRIAL
        label = f"W{len(self.workspaces) + 1}"
        self.workspaces[created.id] = WorkspaceModel(
            created.id, label, created.name, {person.index: "admin"}
        )
        self.audit_seen[created.id] = set()
        person.created += 1
        self._expect(created.id, "workspace.create", person.actor, created.id)
        note(f"  -> {label}")

    @initialize()
    def first_person_enters_a_workspace(self) -> None:
        """Start where most journeys start: one person in a workspace of their own, with
        a draft backup of each kind."""
        person = self._sign_in()
        self._create_workspace(person, "Acme")
        self._switch(person, next(iter(self.workspaces)))
        for kind, name in (
            (BackupKind.CLOUD, "db"),
            (BackupKind.LOCAL, "files"),
            (BackupKind.MANUAL, "laptop"),
        ):
            self.create_backup(0, ("new", name), kind, "own", 0)

    @precondition(lambda self: len(self.people) < MAX_PEOPLE)
    @rule(enter=st.booleans())
    def sign_in(self, enter: bool) -> None:
        """Another person signs in (an unscoped session), and maybe creates a workspace
        and switches into it."""
        self._tick()
        person = self._sign_in()
        if enter:
            self._create_workspace(person, f"Team {person.index}")
            self._switch(person, list(self.workspaces)[-1])

    @rule(who=PEOPLE, name=MOSTLY_VALID_NAMES)
    def create_workspace(self, who: int, name: str) -> None:
        """A person creates a workspace (five at most) and becomes its admin."""
        self._create_workspace(self._person(who), name)

    @rule(who=PEOPLE, pick=PICKS, stranger=st.booleans())
    def switch(self, who: int, pick: int, stranger: bool) -> None:
        """A person switches to a workspace: a new session if a member (the old one is
        revoked), 404 otherwise (and nothing is revoked)."""
        self._tick()
        person = self._person(who)
        ids = list(self.workspaces)
        target = UUID(int=pick + 1) if stranger or not ids else ids[pick % len(ids)]
        self._switch(person, target)

    @precondition(lambda self: len(self.people) > 1)
    @rule(who=PEOPLE, pick=PICKS, role=st.sampled_from(["member", "viewer"]))
    def join(self, who: int, pick: int, role: str) -> None:
        """Set-up (no API yet): a person joins a workspace with a lesser role, then
        switches into it."""
        self._tick()
        person = self._person(who)
        candidates = [w for w in self.workspaces.values() if person.index not in w.roles]
        if not candidates:
            return
        workspace = candidates[pick % len(candidates)]
        note(f"(set-up) {person.email} joins {workspace.label} as {role}")
        with self.facade.deps.uow() as uow:
            uow.memberships.add(Membership(workspace.id, person.user_id, role, self.clock.now()))
            uow.commit()
        workspace.roles[person.index] = role
        self._switch(person, workspace.id)

    @rule(pick=PICKS)
    def register_worker(self, pick: int) -> None:
        """Set-up: a worker is registered in a workspace."""
        workspace = list(self.workspaces.values())[pick % len(self.workspaces)]
        worker_id = UUID(int=10_000 + len(self.workers))
        note(f"(set-up) worker {worker_id} registered in {workspace.label}")
        with self.facade.deps.uow() as uow:
            uow.workers.add(
                Worker(worker_id, workspace.id, "worker", f"hash-{worker_id}", self.clock.now())
            )
            uow.commit()
        self.workers[worker_id] = workspace.id

    # ------------------------------------------------------------------ workspaces

    @rule(who=PEOPLE, name=MOSTLY_VALID_NAMES)
    def rename_workspace(self, who: int, name: str) -> None:
        """A person renames the workspace their session is scoped to."""
        self._tick()
        person = self._person(who)
        caller = self._caller(person)
        scope = person.scope
        note(f"{person.email} renames their workspace to {name!r}")
        renamed, error = attempt(
            lambda: self.facade.workspaces.rename(caller, scope or UUID(int=0), name)
        )
        if scope is None:
            refusals: Refusals = frozenset({NoWorkspaceSelectedError})
        elif self._role(person, scope) not in WRITES_WORKSPACE:
            refusals = frozenset({MissingPermissionError})
            self._expect(scope, "workspace.update", person.actor, scope, Outcome.DENIED)
        elif not valid_name(name):
            refusals = frozenset({InvalidRequestError})
        elif self.workspaces[scope].billing is BillingState.BLOCKED:
            refusals = frozenset({BillingRestrictedError})
        else:
            refusals = SUCCEEDS
        self._check("rename", error, refusals)
        if isinstance(error, BillingRestrictedError):
            assert "blocked" in error.message
        if renamed is not None and scope is not None:
            assert renamed.name == name.strip()
            self.workspaces[scope].name = renamed.name
            self._expect(scope, "workspace.update", person.actor, scope)

    @rule(pick=PICKS, state=st.sampled_from(BillingState))
    def set_billing_state(self, pick: int, state: BillingState) -> None:
        """The operator moves a workspace to a billing state (audited as ``system``)."""
        self._tick()
        workspace = list(self.workspaces.values())[pick % len(self.workspaces)]
        note(f"operator sets {workspace.label} billing to {state}")
        changed = self.facade.workspaces.set_billing_state(workspace.id, state)
        assert changed.billing_state is state
        workspace.billing = state
        self._expect(workspace.id, "billing.update", SYSTEM_ACTOR, workspace.id)

    @rule(pick=PICKS, limit=st.integers(0, 3))
    def set_backup_quota(self, pick: int, limit: int) -> None:
        """The operator sets a workspace's backup limit (0: unlimited)."""
        self._tick()
        workspace = list(self.workspaces.values())[pick % len(self.workspaces)]
        note(f"operator sets {workspace.label} backups_per_workspace to {limit}")
        resource = QuotaResource.BACKUPS_PER_WORKSPACE
        changed = self.facade.workspaces.set_quota(workspace.id, resource, limit)
        assert changed.limit(resource) == limit
        workspace.backup_limit = limit
        self._expect(workspace.id, "quota.update", SYSTEM_ACTOR, workspace.id)

    # ------------------------------------------------------------------ backups

    @rule(who=PEOPLE, choice=NAME_CHOICES, kind=backup_kinds(), where=TARGETS, pick=PICKS)
    def create_backup(
        self, who: int, choice: tuple[str, Any], kind: BackupKind, where: str, pick: int
    ) -> None:
        """A person creates a backup: refused when the name is bad or taken (in any case),
        the billing state blocks configuration, or the quota is reached."""
        self._tick()
        person = self._person(who)
        caller = self._caller(person)
        workspace_id = self._target(person, where, pick)
        name = self._name(choice, person.scope)
        label = self.workspaces[workspace_id].label if workspace_id in self.workspaces else "?"
        note(f"{person.email} creates {kind} backup {name!r} in {label}")
        created, error = attempt(
            lambda: self.facade.backups.create(caller, workspace_id, name, kind)
        )
        refusals = self._workspace_gate(person, workspace_id)
        if refusals is None:
            workspace = self.workspaces[workspace_id]
            count = sum(1 for b in self.backups.values() if b.workspace_id == workspace_id)
            if self._role(person, workspace_id) not in WRITES_BACKUPS:
                refusals = frozenset({MissingPermissionError})
                self._expect(workspace_id, "backup.create", person.actor, None, Outcome.DENIED)
            elif not valid_name(name):
                refusals = frozenset({InvalidRequestError})
            elif workspace.billing is BillingState.BLOCKED:
                refusals = frozenset({BillingRestrictedError})
            elif workspace.backup_limit and count >= workspace.backup_limit:
                refusals = frozenset({QuotaExceededError})
            elif self._name_taken(workspace_id, name):
                refusals = frozenset({NameTakenError})
            else:
                refusals = SUCCEEDS
        self._check("create backup", error, refusals)
        if isinstance(error, QuotaExceededError):
            limit = self.workspaces[workspace_id].backup_limit
            assert (error.resource, error.limit) == ("backups_per_workspace", limit)
        if created is None:
            return
        assert (created.name, created.kind, created.state, created.paused) == (
            name.strip(),
            kind,
            BackupState.DRAFT,
            False,
        )
        self.backups_created += 1
        label = f"B{self.backups_created}"
        model = BackupModel(created.id, label, workspace_id, created.name, kind)
        self.backups[created.id] = model
        self._expect(workspace_id, "backup.create", person.actor, created.id)
        note(f"  -> {model.label}")

    @precondition(lambda self: self.backups)
    @rule(who=PEOPLE, pick=PICKS, data=st.data())
    def update_backup(self, who: int, pick: int, data: st.DataObject) -> None:
        """A person PATCHes a backup with arbitrary changes (most break some rule)."""
        self._patch(who, pick, data, kind_appropriate=False)

    @precondition(lambda self: self.backups)
    @rule(who=PEOPLE, pick=PICKS, data=st.data())
    def configure_backup(self, who: int, pick: int, data: st.DataObject) -> None:
        """A person PATCHes a backup with changes its kind takes (so backups activate)."""
        self._patch(who, pick, data, kind_appropriate=True)

    def _patch(self, who: int, pick: int, data: st.DataObject, *, kind_appropriate: bool) -> None:
        self._tick()
        person = self._person(who)
        backup = self._pick_backup(pick)
        caller = self._caller(person)
        names = NAME_CHOICES.map(lambda choice: self._name(choice, backup.workspace_id))
        home_workers = [w for w, home in self.workers.items() if home == backup.workspace_id]
        known = st.sampled_from(home_workers) if home_workers else None
        if kind_appropriate:
            strategy = accepted_changes_for(
                backup.kind,
                names=names,
                worker_ids=known,
                retentions=st.one_of(st.sampled_from(RETENTION_POOL), retention_policies()),
            )
        else:
            strategy = backup_changes(
                names=names,
                worker_ids=st.one_of(st.uuids(), *([] if known is None else [known])),
                retentions=pooled_retention_policies(),
            )
        changes = data.draw(strategy, label="changes")
        note(f"{person.email} patches {backup.label} ({backup.kind}, {backup.state})")
        updated, error = attempt(lambda: self.facade.backups.update(caller, backup.id, changes))
        refusals = self._expected_update(person, backup, changes)
        self._check("update", error, refusals)
        if updated is None:
            return
        backup.apply(changes)
        assert stored_public(updated) == backup.public()
        self._expect(backup.workspace_id, "backup.update", person.actor, backup.id)

    def _expected_update(
        self, person: PersonModel, backup: BackupModel, changes: BackupChanges
    ) -> Refusals:
        scope = person.scope
        if scope is None:
            return frozenset({NoWorkspaceSelectedError})
        if self._role(person, scope) not in WRITES_BACKUPS:
            self._expect_denied(scope, "backup.update", person, backup)
            return frozenset({MissingPermissionError})
        if changes.name is not UNSET and not valid_name(changes.name):
            return frozenset({InvalidRequestError})
        if backup.workspace_id != scope:
            return frozenset({NotFoundError})
        stored = StoredConfig(
            backup.kind,
            None if backup.source is None else backup.source.type,
            isinstance(backup.destination, CustomerS3Destination),
            backup.has_destination_credentials,
        )
        worker_exists = (
            changes.worker_id is not UNSET and self.workers.get(changes.worker_id) == scope
        )
        reason = kind_rule_violation(stored, changes, worker_exists=worker_exists)
        if reason is not None:
            note(f"  kind rules refuse: {reason}")
            return frozenset({ValidationFailedError})
        if self.workspaces[scope].billing is BillingState.BLOCKED:
            return frozenset({BillingRestrictedError})
        # The remaining checks share one rank (contract section 1: "other 409/422").
        others: set[type[StrongroomError]] = set()
        sent = changes.retention
        if sent is not UNSET:
            if sent.lock_for > sent.expire_after:
                others.add(LockExceedsExpiryError)
            if backup.retention is not None and backup.retention != sent:
                others.add(RetentionImmutableError)
        if changes.name is not UNSET and self._name_taken(scope, changes.name, backup.id):
            others.add(NameTakenError)
        return frozenset(others)

    def _toggle(self, person: PersonModel, backup: BackupModel, action: str) -> None:
        caller = self._caller(person)
        note(f"{person.email} {action}s {backup.label}")
        call = {
            "pause": self.facade.backups.pause,
            "resume": self.facade.backups.resume,
            "delete": self.facade.backups.delete,
        }[action]
        result, error = attempt(lambda: call(caller, backup.id))
        scope = person.scope
        if scope is None:
            refusals: Refusals = frozenset({NoWorkspaceSelectedError})
        elif self._role(person, scope) not in WRITES_BACKUPS:
            refusals = frozenset({MissingPermissionError})
            self._expect_denied(scope, f"backup.{action}", person, backup)
        elif backup.workspace_id != scope:
            refusals = frozenset({NotFoundError})
        elif self.workspaces[scope].billing is BillingState.BLOCKED:
            refusals = frozenset({BillingRestrictedError})
        else:
            refusals = SUCCEEDS
        self._check(action, error, refusals)
        if error is not None:
            return
        self._expect(backup.workspace_id, f"backup.{action}", person.actor, backup.id)
        if action == "delete":
            del self.backups[backup.id]
            return
        assert isinstance(result, Backup)
        before = backup.state
        backup.paused = action == "pause"
        assert (result.paused, result.state) == (backup.paused, before)

    @precondition(lambda self: self.backups)
    @rule(who=PEOPLE, pick=PICKS, action=st.sampled_from(["pause", "resume"]))
    def pause_or_resume(self, who: int, pick: int, action: str) -> None:
        """Pause and resume are idempotent and never change ``state``."""
        self._tick()
        self._toggle(self._person(who), self._pick_backup(pick), action)

    @precondition(lambda self: self.backups)
    @rule(who=PEOPLE, pick=PICKS)
    def delete_backup(self, who: int, pick: int) -> None:
        """A person deletes a backup (its name becomes free again)."""
        self._tick()
        self._toggle(self._person(who), self._pick_backup(pick), "delete")

    # ------------------------------------------------------------------ reads

    @rule(who=PEOPLE, limit=st.integers(1, 4), pick=PICKS)
    def read_everything(self, who: int, limit: int, pick: int) -> None:
        """Every read succeeds in every billing state and shows what the model holds:
        the workspace, its quotas, its backups page by page, each backup, its audit trail;
        another workspace's backup is 404."""
        self._tick()
        person = self._person(who)
        caller = self._caller(person)
        scope = person.scope
        if scope is None:
            with pytest.raises(NoWorkspaceSelectedError):
                self.facade.backups.list_in(
                    caller, self._target(person, "own", pick), PageRequest()
                )
            return
        workspace = self.workspaces[scope]
        note(f"{person.email} reads {workspace.label} (billing {workspace.billing})")
        got = self.facade.workspaces.get(caller, scope)
        assert (got.name, got.billing_state) == (workspace.name, workspace.billing)
        quotas = {q.resource: q for q in self.facade.workspaces.quotas(caller, scope)}
        assert set(quotas) == set(QuotaResource)
        mine = [b for b in self.backups.values() if b.workspace_id == scope]
        backups_quota = quotas[QuotaResource.BACKUPS_PER_WORKSPACE]
        assert (backups_quota.limit, backups_quota.usage) == (workspace.backup_limit, len(mine))
        listed = list(
            self._pages(lambda page: self.facade.backups.list_in(caller, scope, page), limit)
        )
        assert [b.id for b in listed] == [b.id for b in reversed(mine)], "newest first"
        for backup in mine:
            assert stored_public(self.facade.backups.get(caller, backup.id)) == backup.public()
        events = list(
            self._pages(
                lambda page: self.facade.audit.events(caller, scope, AuditFilter(), page), limit
            )
        )
        assert {e.id for e in events} == self.audit_seen[scope]
        assert [e.occurred_at for e in events] == sorted(
            (e.occurred_at for e in events), reverse=True
        )
        elsewhere = [b for b in self.backups.values() if b.workspace_id != scope]
        if elsewhere:
            unseen = elsewhere[pick % len(elsewhere)]
            with pytest.raises(NotFoundError):
                self.facade.backups.get(caller, unseen.id)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def audit_trail_gains_exactly_the_expected_events(self) -> None:
        """Each successful mutation added one event with its action, actor and target;
        a refused one added none, except a permission refusal (one ``denied`` event)."""
        for workspace_id in self.workspaces:
            seen = self.audit_seen[workspace_id]
            new = [e for e in self._stored_events(workspace_id) if e.id not in seen]
            got = sorted(
                (e.action, self._who(e.actor), e.outcome.value, e.target_id or "") for e in new
            )
            wanted = sorted(
                (action, self._who(actor), outcome.value, target or "")
                for action, actor, outcome, target in self.expected.get(workspace_id, [])
            )
            assert got == wanted, f"{self.workspaces[workspace_id].label} audit: {got} != {wanted}"
            for event in new:
                assert event.target_type == event.action.partition(".")[0]
                if event.actor == SYSTEM_ACTOR:
                    assert event.request_id is None
            seen.update(e.id for e in new)
        self.expected.clear()

    @invariant()
    def listed_backups_match_the_model(self) -> None:
        """The ids, names, kinds, states, paused flags and configuration the facade lists
        are exactly the model's, workspace by workspace."""
        for workspace_id in self.workspaces:
            stored = {b.id: stored_public(b) for b in self._stored_backups(workspace_id)}
            modelled = {
                b.id: b.public() for b in self.backups.values() if b.workspace_id == workspace_id
            }
            assert stored == modelled

    @invariant()
    def retention_is_write_once_and_locks_stay_within_expiry(self) -> None:
        """Once a backup has retention it never changes, and no stored lock outlasts its
        expiry."""
        for workspace_id in self.workspaces:
            for backup in self._stored_backups(workspace_id):
                if backup.retention is None:
                    assert backup.id not in self.first_retention
                    continue
                assert backup.retention.lock_for <= backup.retention.expire_after
                first = self.first_retention.setdefault(backup.id, backup.retention)
                assert backup.retention == first

    @invariant()
    def names_are_unique_case_insensitively(self) -> None:
        """No workspace holds two backups whose names differ only in case."""
        for workspace_id in self.workspaces:
            keys = [b.name.casefold() for b in self._stored_backups(workspace_id)]
            assert len(keys) == len(set(keys))

    @invariant()
    def only_active_unpaused_scheduled_backups_have_a_next_run(self) -> None:
        """``next_run_at`` is set exactly for active, unpaused backups with a schedule."""
        for workspace_id in self.workspaces:
            for backup in self._stored_backups(workspace_id):
                runs = (
                    backup.state is BackupState.ACTIVE
                    and not backup.paused
                    and backup.schedule is not None
                )
                assert (backup.next_run_at is not None) == runs

    @invariant()
    def workspaces_and_memberships_match_the_model(self) -> None:
        """Every person's memberships, and every workspace's name, billing state and
        backup limit, are the model's."""
        for person in self.people:
            caller = self._caller(person)
            listed = self.facade.workspaces.memberships(caller, PageRequest(200)).items
            assert {(m.id, m.role) for m in listed} == {
                (w.id, w.roles[person.index])
                for w in self.workspaces.values()
                if person.index in w.roles
            }
        for workspace in self.workspaces.values():
            stored = self.facade.workspaces.find(workspace.id)
            assert (
                stored.name,
                stored.billing_state,
                stored.limit(QuotaResource.BACKUPS_PER_WORKSPACE),
            ) == (workspace.name, workspace.billing, workspace.backup_limit)


FacadeMachine.TestCase.settings = settings(stateful_step_count=30)
TestFacadeStateMachine = FacadeMachine.TestCase


def test_denied_attempts_on_unseen_backups_are_not_audited() -> None:
    """A viewer of one workspace who tries to change another workspace's backup is
    refused, and neither workspace's audit trail records the attempt."""
    facade = make_facade()
    owner = facade.access.authenticate(session_token(facade, "owner@example.com"))
    first = facade.workspaces.create(owner, "First")
    second = facade.workspaces.create(owner, "Second")
    owner = facade.access.authenticate(facade.sessions.switch(owner, first.id).token)
    hidden = facade.backups.create(owner, first.id, "hidden", BackupKind.MANUAL)
    viewer_token = session_token(facade, "viewer@example.com")
    viewer_user = facade.access.authenticate(viewer_token).user
    assert viewer_user is not None
    with facade.deps.uow() as uow:
        uow.memberships.add(
            Membership(second.id, viewer_user.id, "viewer", facade.deps.clock.now())
        )
        uow.commit()
    viewer = facade.access.authenticate(
        facade.sessions.switch(facade.access.authenticate(viewer_token), second.id).token
    )
    with pytest.raises(ForbiddenError):
        facade.backups.update(viewer, hidden.id, BackupChanges(name="mine now"))
    for workspace in (first, second):
        with facade.deps.uow() as uow:
            events = uow.audit.list(workspace.id, AuditFilter(), PageRequest(200)).items
        assert [e for e in events if e.outcome is Outcome.DENIED] == []
