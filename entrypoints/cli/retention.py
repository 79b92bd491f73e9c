"""``retention show|preview`` (beside the server's ``retention run``): each run of a
backup kept or expiring, with the reasons the service gives (contract 15); ``preview``
tries keep rules without setting them."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import click
import httpx2

from strongroom.client import Client
from strongroom.client.calls import Call
from strongroom.entrypoints.cli.context import Session, client_command, emit

COLUMNS = ["run", "finished", "verdict", "reasons"]
RULES = ("last", "hourly", "daily", "weekly", "monthly", "yearly")


def _pages(client: Client, method: str, path: str, body: Any = None) -> list[dict[str, Any]]:
    """Every verdict, following ``next_cursor``."""
    verdicts: list[dict[str, Any]] = []
    query = {"limit": "200"}
    while True:
        page: dict[str, Any] = client.perform(
            Call(method, path, httpx2.Response.json, query=query, json=body)
        )
        verdicts.extend(page["data"])
        if page["next_cursor"] is None:
            return verdicts
        query = {"limit": "200", "cursor": page["next_cursor"]}


def _print(session: Session, verdicts: list[dict[str, Any]]) -> None:
    if session.as_json:
        emit(session, verdicts)
        return
    rows = [
        {
            "run": verdict["run_id"],
            "finished": verdict["finished_at"],
            "verdict": "keep" if verdict["keep"] else "expire",
            "reasons": verdict["reasons"],
        }
        for verdict in verdicts
    ]
    emit(session, rows, columns=COLUMNS)


@click.command("show", help="each run of a backup, kept or expiring, with its reasons")
@client_command
@click.argument("backup_ref", metavar="BACKUP")
def show(session: Session, backup_ref: str) -> None:
    """What the backup's retention policy does with its runs now."""
    backup_id: UUID = session.backup_id(backup_ref)
    _print(session, _pages(session.signed_in(), "GET", f"/v1/backups/{backup_id}/retention"))


@click.command("preview", help="what keep rules would keep, without setting them")
@client_command
@click.argument("backup_ref", metavar="BACKUP")
@click.option("--expire-after", default=None, help="ISO duration (default: the backup's)")
@click.option("--lock-for", default=None, help="ISO duration (default: the backup's)")
@click.option("--keep-last", type=click.IntRange(0), default=None)
@click.option("--keep-hourly", type=click.IntRange(0), default=None)
@click.option("--keep-daily", type=click.IntRange(0), default=None)
@click.option("--keep-weekly", type=click.IntRange(0), default=None)
@click.option("--keep-monthly", type=click.IntRange(0), default=None)
@click.option("--keep-yearly", type=click.IntRange(0), default=None)
def preview(
    session: Session,
    backup_ref: str,
    expire_after: str | None,
    lock_for: str | None,
    **counts: int | None,
) -> None:
    """The verdicts of the proposed policy (the backup's durations unless given)."""
    client = session.signed_in()
    backup_id = session.backup_id(backup_ref)
    current = client.get_backup(backup_id).retention
    policy: dict[str, Any] = {
        "expire_after": expire_after or (current.expire_after if current else None),
        "lock_for": lock_for or (current.lock_for if current else "PT0S"),
    }
    if policy["expire_after"] is None:
        raise click.UsageError("the backup has no retention policy: give --expire-after")
    keep = {rule: counts[f"keep_{rule}"] for rule in RULES if counts[f"keep_{rule}"] is not None}
    body: dict[str, Any] = {"retention": {name: str(value) for name, value in policy.items()}}
    if keep:
        body["retention"]["keep"] = keep
    path = f"/v1/backups/{backup_id}/retention/preview"
    _print(session, _pages(client, "POST", path, body))


COMMANDS = (show, preview)
