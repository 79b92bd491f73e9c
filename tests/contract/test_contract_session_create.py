"""A session's create, on every adapter, creates exactly when the domain's checks allow it
(``Access.session_caller``, ``Access.permits`` and the workspace's admission), over
generated sessions, memberships, roles and workspaces, and writes nothing otherwise.

The use case decides on what the store's joined read answers (the session's grant, the
workspace and its backup count) and the store only writes, guarded by that count: this
holds each adapter's read to what the domain needs to decide as it would on its own reads.
"""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any, cast
from uuid import uuid4

import attrs
import pytest
from contract_records import (
    T0,
    Adapter,
    SqlAdapter,
    audit_event,
    backup,
    session,
    unique,
    user,
    workspace,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.runtime.blocking import blocking
from strongroom.domain.audit import Outcome
from strongroom.domain.backups import BackupKind
from strongroom.domain.billing import BillingState, GatedOperation
from strongroom.domain.errors import StrongroomError, UnauthenticatedError
from strongroom.domain.pagination import PageRequest
from strongroom.domain.permissions import BUILTIN_ROLES, Permission, Role
from strongroom.domain.principals import Actor, PrincipalType
from strongroom.domain.quotas import QuotaResource
from strongroom.domain.tokens import TokenKind, format_token, hash_token
from strongroom.domain.workspaces import Admission, Membership, admits
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driven.repositories import AuditFilter
from strongroom.ports.driving.access import Access, Bearer
from strongroom.ports.driving.backups import CREATE_BACKUP
from strongroom.ports.driving.dependencies import Dependencies

NOW = T0 + timedelta(hours=1)
ADMIT = Admission(GatedOperation.CONFIG_WRITE, QuotaResource.BACKUPS_PER_WORKSPACE)
ACCESS = Access(cast(Dependencies, SimpleNamespace(clock=ManualClock(NOW))))
TINY = timedelta(microseconds=1)

# Mostly the permissions that tell the roles apart (the viewer lacks the writes), so that
# requested and held permissions meet often; now and then any other.
FOCUS = [Permission.BACKUPS_WRITE, Permission.BACKUPS_READ, Permission.WORKSPACES_WRITE]
permissions = st.sampled_from(FOCUS) | st.sampled_from(FOCUS) | st.sampled_from(list(Permission))


@attrs.frozen
class Case:
    """One generated state: the session, its person's membership, the workspace."""

    token_known: bool
    scope: str  # the session's workspace: "target", "other" or "none"
    revoked: bool
    expires_in: timedelta
    # A built-in slug; "custom"; "shadowed" (the built-in viewer, with a custom role of
    # the same slug stored beside it, which the built-in outranks); "dangling" (a slug
    # with no role); "none" (no membership).
    role: str
    custom_permissions: frozenset[Permission]
    billing_state: BillingState
    limit: int | None  # the backups quota override (0 is unlimited), None for the default
    existing: int


cases = st.builds(
    Case,
    token_known=st.sampled_from([True, True, True, False]),
    scope=st.sampled_from(["target", "target", "target", "other", "none"]),
    revoked=st.sampled_from([False, False, False, True]),
    expires_in=st.sampled_from(
        [timedelta(days=1), timedelta(days=1), TINY, timedelta(0), -TINY, -timedelta(days=1)]
    ),
    role=st.sampled_from(
        [*sorted(BUILTIN_ROLES), "custom", "custom", "shadowed", "shadowed", "dangling", "none"]
    ),
    custom_permissions=st.frozensets(permissions, max_size=3),
    billing_state=st.sampled_from(list(BillingState)),
    limit=st.none() | st.integers(min_value=0, max_value=3),
    existing=st.integers(min_value=0, max_value=3),
)

# The boundaries, every run: a role shadowing a built-in one, the instant of expiry, a
# role that no longer exists, another workspace of the same person.
LIVE = {
    "token_known": True,
    "scope": "target",
    "revoked": False,
    "expires_in": timedelta(days=1),
    "custom_permissions": frozenset({Permission.BACKUPS_WRITE}),
    "billing_state": BillingState.ACTIVE,
    "limit": None,
    "existing": 0,
}
BOUNDARIES = [
    Case(**{**LIVE, "role": "shadowed"}),
    Case(**{**LIVE, "role": "custom"}),
    Case(**{**LIVE, "role": "admin", "expires_in": timedelta(0)}),
    Case(**{**LIVE, "role": "admin", "expires_in": TINY}),
    Case(**{**LIVE, "role": "dangling"}),
    Case(**{**LIVE, "role": "admin", "scope": "other"}),
    Case(**{**LIVE, "role": "member", "limit": 2, "existing": 2}),
    Case(**{**LIVE, "role": "member", "limit": 0, "existing": 3}),
]


def _examples(boundaries: list[Case]) -> Any:
    def decorate(test: Any) -> Any:
        for case in reversed(boundaries):
            test = example(case=case)(test)
        return test

    return decorate


def _domain_allows(adapter: Adapter, token_hash: str, workspace: Any, case: Case) -> bool:
    """What the ordinary checks decide: the session's caller, the permission, admission."""
    with adapter.uow() as uow:
        grant = uow.sessions.find(token_hash)
    try:
        caller = ACCESS.session_caller(grant, token_hash, None)
    except UnauthenticatedError:
        return False
    return Access.permits(caller, CREATE_BACKUP, workspace.id) and admits(
        workspace, ADMIT, case.existing
    )


def _seed(adapter: Adapter, case: Case) -> tuple[Any, Any, str]:
    """The person, the target workspace and the session token to present."""
    ada = user()
    overrides = {} if case.limit is None else {QuotaResource.BACKUPS_PER_WORKSPACE: case.limit}
    target = workspace(ada, billing_state=case.billing_state, quota_overrides=overrides)
    other = workspace(ada)
    scope = {"target": target.id, "other": other.id, "none": None}[case.scope]
    token = format_token(TokenKind.SESSION, uuid4().bytes * 2)
    mine = attrs.evolve(
        session(ada.id, scope),
        token_hash=hash_token(token),
        expires_at=NOW + case.expires_in,
        revoked_at=T0 if case.revoked else None,
    )
    records: list[Any] = [ada, target, other, mine]
    records += [backup(target.id) for _ in range(case.existing)]
    slugs = {"custom": unique("custom"), "shadowed": "viewer", "dangling": unique("gone")}
    slug = slugs.get(case.role, case.role)
    if case.role != "none":
        records += [
            Membership(target.id, ada.id, slug, T0),
            Membership(other.id, ada.id, slug, T0),
        ]
    adapter.store(*records)
    if case.role in ("custom", "shadowed"):
        for where in (target.id, other.id):
            adapter.add_role(where, Role(slug, "Custom", case.custom_permissions, builtin=False))
    unknown = format_token(TokenKind.SESSION, uuid4().bytes * 2)
    return ada, target, token if case.token_known else unknown


def _stored(adapter: Adapter, workspace_id: Any) -> tuple[int, list[Any]]:
    with adapter.uow() as uow:
        counted = uow.backups.count(workspace_id)
        events = uow.audit.list(workspace_id, AuditFilter(), PageRequest(50, None)).items
    # A refused permission is audited as denied (contract 10): only the creates count.
    created = [e for e in events if e.action == "backup.create" and e.outcome is Outcome.SUCCESS]
    return counted, created


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=cases)
@_examples(BOUNDARIES)
def test_a_create_creates_exactly_when_the_domain_allows(adapter: Adapter, case: Case) -> None:
    """The backup, one more in the count and its event by the session's person, when the
    domain's checks pass; a refusal and nothing written when any refuses."""
    ada, target, token = _seed(adapter, case)
    expected = _domain_allows(adapter, hash_token(token), target, case)
    facade: Any = blocking(bootstrap(uow=adapter.async_uow, clock=ManualClock(NOW)))
    try:
        created = facade.backups.create(Bearer(token), target.id, "nightly", BackupKind.MANUAL)
    except StrongroomError:
        created = None
    assert (created is not None) is expected
    counted, events = _stored(adapter, target.id)
    if created is not None:
        assert counted == case.existing + 1
        assert [(e.target_id, e.actor) for e in events] == [
            (str(created.id), Actor(PrincipalType.USER, ada.id))
        ]
        with adapter.uow() as uow:
            assert uow.backups.get(target.id, created.id) == created
    else:
        assert (counted, events) == (case.existing, [])


@pytest.mark.parametrize("name", ["sqlite", "postgres"])
def test_a_repeated_create_writes_nothing_twice(name: str, request: pytest.FixtureRequest) -> None:
    """The same counted write run again (a retry after a lost answer) finds its backup:
    True, one backup, one event, even when the first reached the bound."""
    adapter = SqlAdapter(name, request.getfixturevalue(f"{name}_database").uow)
    ada = user()
    target = workspace(ada, quota_overrides={QuotaResource.BACKUPS_PER_WORKSPACE: 1})
    mine = session(ada.id, target.id)
    adapter.store(ada, target, mine, Membership(target.id, ada.id, "admin", T0))
    candidate = backup(target.id)
    event = attrs.evolve(audit_event(target.id), target_id=str(candidate.id))
    for _ in range(2):
        with adapter.uow() as uow:
            assert uow.backups.add_counted(candidate, event, 1)
            uow.commit()
    counted, events = _stored(adapter, target.id)
    assert (counted, len(events)) == (1, 1)
