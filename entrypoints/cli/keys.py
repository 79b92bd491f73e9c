"""``strongroom key create|show`` and the person's age identity (``--identity FILE``, or
``identity.txt`` in the config dir, made on first use where a command needs one)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from strongroom.client.snapshots import Identity, SnapshotKeyError, generate_identity
from strongroom.client.snapshots import load_identity as parse_identity
from strongroom.entrypoints.cli.config import config_dir
from strongroom.entrypoints.cli.context import CommandError, emit_json

F = TypeVar("F", bound=Callable[..., Any])
IDENTITY_FILE = "identity.txt"


def default_identity_path() -> Path:
    """The person's identity in the config dir."""
    return config_dir() / IDENTITY_FILE


def write_identity(path: Path) -> Identity:
    """A new identity written to ``path`` (mode 0600, never over an existing file)."""
    identity, text = generate_identity()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as error:
        raise CommandError(f"{path} exists: it is not replaced") from error
    with os.fdopen(fd, "w") as output:
        output.write(text)
    return identity


def read_identity(path: Path | None) -> Identity:
    """The identity at ``path`` (or the default one); a clear error when missing."""
    where = path or default_identity_path()
    try:
        return parse_identity(where.read_text())
    except FileNotFoundError as error:
        raise CommandError(
            f"no identity at {where}: run `strongroom key create` (or pass --identity FILE)"
        ) from error
    except (OSError, SnapshotKeyError) as error:
        raise CommandError(f"{where}: {error}") from error


def person_identity(path: Path | None = None, quiet: bool = False) -> Identity:
    """The identity at ``path``; without one, the default identity, made on first use
    (said on standard error unless ``quiet``: a script's stderr holds only errors)."""
    if path is None and not default_identity_path().exists():
        identity = write_identity(default_identity_path())
        if quiet:
            return identity
        click.echo(
            f"created your key {default_identity_path()} (recipient {identity.recipient}): "
            "keep a copy somewhere safe; without it snapshots cannot be restored",
            err=True,
        )
        return identity
    return read_identity(path)


def identity_option(function: F) -> F:
    """``--identity FILE``."""
    decorated: F = click.option(
        "--identity",
        "identity_path",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        envvar="STRONGROOM_IDENTITY",
        help="age identity file (default: identity.txt in the config dir)",
    )(function)
    return decorated


@click.group(help="your age key, which seals and opens snapshots")
def key() -> None:
    """``key create|show``."""


@key.command("create", help="make an age identity (mode 0600) and print its recipient")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def create(out: Path | None, as_json: bool) -> None:
    """Write a new identity to FILE (default: the config dir); print its recipient."""
    path = out or default_identity_path()
    identity = write_identity(path)
    if as_json:
        emit_json({"path": str(path), "recipient": identity.recipient})
        return
    click.echo(identity.recipient)
    click.echo(f"identity written to {path}: keep a copy somewhere safe", err=True)


@key.command("show", help="print the recipient (public key) of your identity")
@identity_option
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def show(identity_path: Path | None, as_json: bool) -> None:
    """The recipient of the identity."""
    identity = read_identity(identity_path)
    if as_json:
        emit_json({"recipient": identity.recipient})
        return
    click.echo(identity.recipient)
