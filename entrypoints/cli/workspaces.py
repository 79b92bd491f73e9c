"""``workspace list|create|use``."""

from __future__ import annotations

import attrs
import click

from strongroom.entrypoints.cli.context import Session, client_command, emit


@click.group(help="workspaces you belong to")
def workspace() -> None:
    """``workspace list|create|use``."""


@workspace.command("list", help="the workspaces you belong to")
@client_command
def list_(session: Session) -> None:
    """Every workspace of the caller, the selected one marked."""
    current = session.stored.workspace_id if session.from_file else None
    rows = [
        {**attrs.asdict(w, recurse=False), "current": str(w.id) == current}
        for w in session.signed_in().list_workspaces.iterate()
    ]
    emit(session, rows, columns=["id", "name", "role", "current"])


@workspace.command(help="create a workspace (you become its admin)")
@client_command
@click.argument("name")
@click.option("--use", "select", is_flag=True, help="select it for the next commands")
def create(
    session: Session,
    name: str,
    select: bool,
) -> None:
    """Create a workspace named NAME."""
    created = session.signed_in().create_workspace(name)
    if select:
        session.use_workspace(created.id)
    emit(session, created)


@workspace.command(help="select the workspace the next commands act on")
@client_command
@click.argument("workspace_ref", metavar="ID|NAME")
def use(session: Session, workspace_ref: str) -> None:
    """Scope the stored session to a workspace (by id or name)."""
    workspace_id = session.resolve_workspace(workspace_ref)
    if not (session.from_file and session.stored.workspace_id == str(workspace_id)):
        session.use_workspace(workspace_id)
    emit(
        session,
        {"workspace_id": workspace_id},
        message=f"Using workspace {workspace_id}",
    )
