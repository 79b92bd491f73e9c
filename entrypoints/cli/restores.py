"""``restore-job create|show|wait`` (the service restores a cloud artifact into a bucket or
an empty database) and ``artifact show|verify``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import click

from strongroom.adapters.wire.restores import Restore
from strongroom.adapters.wire.sources import SourceShape as Source
from strongroom.client import Artifact
from strongroom.entrypoints.cli.artifacts import artifact
from strongroom.entrypoints.cli.backups import _credentials_from_stdin, _json_option
from strongroom.entrypoints.cli.context import Session, client_command, emit

RESTORE_FIELDS = ["id", "artifact_id", "state", "target", "error", "created_at", "finished_at"]
RESTORE_DONE = ("succeeded", "failed")


def _poll(
    read: Callable[[], Any], done: Callable[[Any], bool], timeout: float | None, interval: float
) -> Any:
    """``read()`` until ``done`` says so or ``timeout`` seconds pass; the last answer."""
    deadline = None if timeout is None else time.monotonic() + timeout
    current = read()
    while not done(current):
        if deadline is not None and time.monotonic() >= deadline:
            break
        time.sleep(interval)
        current = read()
    return current


class RestoreIdType(click.ParamType[UUID]):
    """A restore's whole id: restores are printed whole (no table lists them, no list of
    them exists to look a prefix up in)."""

    name = "RESTORE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> UUID:
        try:
            return value if isinstance(value, UUID) else UUID(str(value))
        except ValueError:
            self.fail(
                f"{value!r} is not a restore id: give the whole id that "
                "`restore-job create` printed (restores have no list to look a prefix up in)",
                param,
                ctx,
            )


RESTORE_ID = RestoreIdType()


def _describe(restore: Restore) -> str:
    line = f"restore {restore.id} {restore.state}"
    return line + (f": {restore.error}" if restore.error else "")


@click.group("restore-job", help="restores the service runs: an artifact into a target")
def restore_job() -> None:
    """``restore-job create|show|wait``."""


@restore_job.command("create", help="restore a cloud artifact into a bucket or empty database")
@client_command
@click.argument("artifact_ref", metavar="ARTIFACT")
@click.option(
    "--target",
    required=True,
    help='JSON, e.g. {"type": "s3", "endpoint": "https://...", "bucket": "b", "prefix": ""} '
    'or {"type": "postgres", "host": "db", "port": 5432, "database": "empty"}',
)
@click.option(
    "--credentials-stdin",
    is_flag=True,
    required=True,
    help="read the target's credentials (JSON) from stdin (at a terminal: not shown)",
)
def create(session: Session, artifact_ref: str, target: str, credentials_stdin: bool) -> None:
    """Queue a restore of ARTIFACT_ID; ``restore-job wait ID`` follows it."""
    session.workspace_id()
    shape = _json_option(target, Source, "target")
    artifact_id = session.artifact_id(artifact_ref)
    restore = session.signed_in().create_restore(artifact_id, shape, _credentials_from_stdin())
    emit(
        session,
        restore,
        message=f"{_describe(restore)} (follow: strongroom restore-job wait {restore.id})",
    )


@restore_job.command("show", help="one restore and its state")
@client_command
@click.argument("restore_id", type=RESTORE_ID)
def show(session: Session, restore_id: UUID) -> None:
    """A restore's state, target and error."""
    session.workspace_id()
    emit(session, session.signed_in().get_restore(restore_id), columns=RESTORE_FIELDS)


@restore_job.command("wait", help="wait until a restore ends; exit 0 if it succeeded, 1 otherwise")
@client_command
@click.argument("restore_id", type=RESTORE_ID)
@click.option("--timeout", type=click.FloatRange(min=0), default=None, help="seconds (no limit)")
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True)
def wait(session: Session, restore_id: UUID, timeout: float | None, interval: float) -> None:
    """Poll the restore until it is succeeded or failed (or the timeout passes)."""
    session.workspace_id()
    client = session.signed_in()
    current: Restore = _poll(
        lambda: client.get_restore(restore_id),
        lambda found: found.state in RESTORE_DONE,
        timeout,
        interval,
    )
    emit(session, current, message=_describe(current))
    if current.state != "succeeded":
        if current.state not in RESTORE_DONE:
            click.echo(
                f"strongroom: restore {restore_id} still {current.state} (timeout)", err=True
            )
        raise click.exceptions.Exit(1)


@artifact.command("show", help="one artifact: size, sha256, state, lock and verification")
@client_command
@click.argument("artifact_ref", metavar="ARTIFACT")
def show_artifact(session: Session, artifact_ref: str) -> None:
    """An artifact of the workspace, whatever its state."""
    session.workspace_id()
    artifact_id = session.artifact_id(artifact_ref)
    emit(session, session.signed_in().get_artifact(artifact_id))


@artifact.command(
    "verify",
    help="have the service re-read an artifact and check its sha256; with --wait, exit 1 "
    "unless it is ok",
)
@client_command
@click.argument("artifact_ref", metavar="ARTIFACT")
@click.option("--wait", "wait_", is_flag=True, help="wait for the verifier's verdict")
@click.option("--timeout", type=click.FloatRange(min=0), default=None, help="seconds (no limit)")
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True)
def verify(
    session: Session, artifact_ref: str, wait_: bool, timeout: float | None, interval: float
) -> None:
    """Ask for a verification; ``--wait`` follows it to ``ok``, ``mismatch`` or ``missing``."""
    session.workspace_id()
    client = session.signed_in()
    artifact_id = session.artifact_id(artifact_ref)
    found: Artifact = client.verify_artifact(artifact_id)
    if wait_:
        found = _poll(
            lambda: client.get_artifact(artifact_id),
            lambda current: current.verification != "pending",
            timeout,
            interval,
        )
    verdict = found.verification or "pending"
    emit(session, found, message=f"artifact {artifact_id} verification {verdict}")
    if wait_ and verdict != "ok":
        raise click.exceptions.Exit(1)


COMMANDS = (restore_job,)
