"""``strongroom status``: the workspace's health at a glance (contract 16).

Every backup's health (``GET /v1/workspaces/{wid}/health``) as a table, late and failing
first, with the last drill of each backup that has one; ``--json`` prints the API's answer
(every page's items in one ``data`` list). Exit 0 when no backup is late or failing, 1
when any is, so a monitoring script can call it as is.
"""

from __future__ import annotations

from typing import Any

import click

from strongroom.entrypoints.cli.context import Session, client_command, emit_json, emit_table

# Shown first, in this order; the exit code is 1 when any backup has one of the first two.
ORDER = ("late", "failing", "never", "ok")
ALARMING = frozenset(ORDER[:2])
COLUMNS = ["status", "name", "last_success_at", "age", "last_failure", "last_drill"]


def _rank(status: str) -> int:
    return ORDER.index(status) if status in ORDER else len(ORDER)


def _age(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m"


@click.command(help="the workspace's backups: late and failing first; exit 1 if any")
@client_command
def status(session: Session) -> None:
    """Print the health table (or ``--json``) and exit 1 when a backup is late or failing."""
    client = session.signed_in()
    workspace_id = session.workspace_id()
    health = sorted(
        client.list_health.iterate(workspace_id, limit=200), key=lambda h: _rank(str(h.status))
    )
    if session.as_json:
        emit_json({"data": health, "next_cursor": None})
    else:
        names = {b.id: b.name for b in client.list_backups.iterate(workspace_id, limit=200)}
        rows: list[dict[str, Any]] = []
        for item in health:
            drills = client.list_drills(item.backup_id, limit=1).data
            failure = item.last_failure
            rows.append(
                {
                    "status": str(item.status),
                    "name": names.get(item.backup_id, str(item.backup_id)),
                    "last_success_at": item.last_success_at,
                    "age": _age(item.age_seconds),
                    "last_failure": None
                    if failure is None
                    else f"{failure.error or 'failed'} ({failure.at:%Y-%m-%d %H:%MZ})",
                    "last_drill": None
                    if not drills
                    else f"{drills[0].state} ({drills[0].created_at:%Y-%m-%d %H:%MZ})",
                }
            )
        emit_table(rows, COLUMNS)
    if any(str(item.status) in ALARMING for item in health):
        raise click.exceptions.Exit(1)
