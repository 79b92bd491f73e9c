"""The unit of work collects audit events and writes them with its commit, on every
adapter: committed together with the change, dropped with a rollback."""

from __future__ import annotations

import pytest
from contract_records import Adapter, audit_event, user, workspace

from strongroom.domain.pagination import PageRequest
from strongroom.ports.driven.repositories import AuditFilter


def _actions(adapter: Adapter, workspace_id: object) -> list[str]:
    with adapter.uow() as uow:
        page = uow.audit.list(workspace_id, AuditFilter(), PageRequest(50))
    return sorted(event.action for event in page.items)


def test_collected_events_are_written_by_the_commit(adapter: Adapter) -> None:
    """Every event collected before ``commit`` is stored with the unit's change."""
    ada = user()
    target = workspace(ada)
    adapter.store(ada)
    with adapter.uow() as uow:
        uow.workspaces.add(target)
        uow.collect(audit_event(target.id, action="workspace.create"))
        uow.collect(audit_event(target.id, action="workspace.update"))
        uow.commit()
    assert _actions(adapter, target.id) == ["workspace.create", "workspace.update"]


def test_collected_events_go_with_a_rollback(adapter: Adapter) -> None:
    """Leaving the unit without ``commit`` (or on an error) drops what it collected."""
    ada = user()
    target = workspace(ada)
    adapter.store(ada, target)
    with adapter.uow() as uow:
        uow.collect(audit_event(target.id, action="workspace.update"))

    def fail() -> None:
        with adapter.uow() as uow:
            uow.collect(audit_event(target.id, action="workspace.update"))
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        fail()
    assert _actions(adapter, target.id) == []


def test_events_collected_after_a_commit_wait_for_the_next(adapter: Adapter) -> None:
    """A commit writes what was collected before it, once; later events need another."""
    ada = user()
    target = workspace(ada)
    adapter.store(ada, target)
    with adapter.uow() as uow:
        uow.collect(audit_event(target.id, action="workspace.update"))
        uow.commit()
        uow.collect(audit_event(target.id, action="billing.update"))
    assert _actions(adapter, target.id) == ["workspace.update"]
