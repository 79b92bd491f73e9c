"""Look-ups the use cases share: an object of the caller's workspace, or 404.

Scoping to the workspace happens inside the repository query; what a worker may see is
narrowed here: only the backups assigned to it, and their runs. Anything else answers 404,
exactly as an object that does not exist.
"""

from __future__ import annotations

from typing import TypeVar
from uuid import UUID

from strongroom.domain.backups import Backup
from strongroom.domain.errors import NotFoundError
from strongroom.domain.principals import Caller
from strongroom.domain.runs import Run
from strongroom.domain.workspaces import Membership, Workspace
from strongroom.ports.driven.unit_of_work import UnitOfWork

T = TypeVar("T")


def existing(found: T | None, what: str) -> T:
    """``found``, or 404 naming ``what``."""
    if found is None:
        raise NotFoundError(what)
    return found


async def workspace(uow: UnitOfWork, workspace_id: UUID, *, for_update: bool = False) -> Workspace:
    """The workspace, locked until the unit of work ends when ``for_update``."""
    return existing(await uow.workspaces.get(workspace_id, for_update=for_update), "workspace")


async def membership(uow: UnitOfWork, workspace_id: UUID, user_id: UUID) -> Membership:
    """A person's membership of the workspace (404 names the member)."""
    return existing(await uow.memberships.get(workspace_id, user_id), "member")


async def backup(
    uow: UnitOfWork, workspace_id: UUID, backup_id: UUID, *, for_update: bool = False
) -> Backup:
    """A backup of the workspace, locked until the unit of work ends when ``for_update``."""
    found = await uow.backups.get(workspace_id, backup_id, for_update=for_update)
    return existing(found, "backup")


def visible_backup(caller: Caller, found: Backup) -> Backup:
    """A worker sees only the backups assigned to it; any other is 404 to it."""
    if caller.worker_id is not None and found.worker_id != caller.worker_id:
        raise NotFoundError("backup")
    return found


async def visible_run(
    caller: Caller, uow: UnitOfWork, workspace_id: UUID, found: Run | None
) -> Run:
    """The run, unless it is none or (for a worker) a run of a backup not assigned to it."""
    run = existing(found, "run")
    if caller.worker_id is not None:
        owner = await uow.backups.get(workspace_id, run.backup_id)
        if owner is None or owner.worker_id != caller.worker_id:
            raise NotFoundError("run")
    return run


async def uploadable_run(
    caller: Caller, uow: UnitOfWork, workspace_id: UUID, found: Run | None
) -> Run:
    """``visible_run``, and one the caller may upload into and confirm
    (``Run.takes_uploads_from``): else 404, as for a run that does not exist."""
    run = await visible_run(caller, uow, workspace_id, found)
    if not run.takes_uploads_from(caller.worker_id):
        raise NotFoundError("run")
    return run
