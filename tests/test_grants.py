"""Authorization runs once: ``Access.authorize`` returns a ``Grant`` that use cases take as
proof, and nothing else can stand in for one."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from strongroom.domain.backups import BackupKind
from strongroom.domain.errors import MissingPermissionError
from strongroom.domain.pagination import PageRequest
from strongroom.domain.workspaces import Membership
from strongroom.ports.driving.access import Access, Grant
from strongroom.ports.driving.backups import CREATE_BACKUP, READ_BACKUPS
from support.world import make_facade, session_token


def _admin_in_workspace(facade: Any) -> tuple[Any, UUID]:
    """A person's caller, scoped to a workspace she administers."""
    person = facade.access.authenticate(session_token(facade, "ada@example.com"))
    workspace = facade.workspaces.create(person, "Acme")
    issued = facade.sessions.switch(person, workspace.id)
    return facade.access.authenticate(issued.token), workspace.id


def _viewer_in(facade: Any, workspace_id: UUID) -> Any:
    """A viewer's caller in ``workspace_id``."""
    person = facade.access.authenticate(session_token(facade, "val@example.com"))
    with facade.deps.uow() as uow:
        uow.memberships.add(
            Membership(workspace_id, person.user.id, "viewer", person.user.created_at)
        )
        uow.commit()
    return facade.access.authenticate(facade.sessions.switch(person, workspace_id).token)


class TestGrants:
    """What a grant proves, and what it does not."""

    def test_a_grant_names_the_caller_the_requirement_and_the_workspace(self) -> None:
        """``authorize`` answers a grant of exactly what it checked."""
        facade = make_facade()
        admin, workspace_id = _admin_in_workspace(facade)
        grant = facade.access.authorize(admin, CREATE_BACKUP, workspace_id=workspace_id)
        assert isinstance(grant, Grant)
        assert (grant.caller, grant.requirement, grant.workspace_id) == (
            admin,
            CREATE_BACKUP,
            workspace_id,
        )

    def test_only_access_makes_grants(self) -> None:
        """A hand-made grant is refused at construction: it cannot skip the checks."""
        facade = make_facade()
        admin, workspace_id = _admin_in_workspace(facade)
        with pytest.raises(TypeError, match=r"Access\.authorize"):
            Grant(admin, CREATE_BACKUP, workspace_id, object())

    def test_a_use_case_takes_the_grant_without_checking_again(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Creating with a grant runs no second authorization."""
        facade = make_facade()
        admin, workspace_id = _admin_in_workspace(facade)
        grant = facade.access.authorize(admin, CREATE_BACKUP, workspace_id=workspace_id)
        checks: list[object] = []
        original = Access.authorize

        async def counting(self: Access, *args: Any, **kwargs: Any) -> Grant:
            checks.append(args[1])
            return await original(self, *args, **kwargs)

        monkeypatch.setattr(Access, "authorize", counting)
        created = facade.backups.create(grant, workspace_id, "Nightly", BackupKind.MANUAL)
        assert created.name == "Nightly"
        assert checks == []
        facade.backups.create(admin, workspace_id, "Weekly", BackupKind.MANUAL)
        assert checks == [CREATE_BACKUP]

    def test_a_grant_of_something_else_is_checked_again(self) -> None:
        """A viewer's read grant does not let her create: the create checks her and
        refuses."""
        facade = make_facade()
        _, workspace_id = _admin_in_workspace(facade)
        viewer = _viewer_in(facade, workspace_id)
        read = facade.access.authorize(viewer, READ_BACKUPS, workspace_id=workspace_id)
        with pytest.raises(MissingPermissionError):
            facade.backups.create(read, workspace_id, "Sneaky", BackupKind.MANUAL)
        assert facade.backups.list_in(read, workspace_id, PageRequest(50, None)).items == []
