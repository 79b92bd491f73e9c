"""The ``strongroom`` command: the server's own commands (``serve``, ``migrate``,
``retention``, ``admin``; see ``server``) and the command-line client of the API
(``login``, ``workspace``, ``backup``, ``run``, ``artifact``...; contract 12).

Exit codes: 0 success, 1 an error (the API's message and request id on standard error),
2 a usage error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from strongroom.client import ApiError, AuthenticationError
from strongroom.domain.errors import StrongroomError
from strongroom.entrypoints.cli import (
    artifacts,
    auth,
    backups,
    keys,
    machines,
    proof,
    restores,
    retention,
    runs,
    server,
    snapshots,
    status,
    transfers,
    workspaces,
)


class StrongroomGroup(click.Group):
    """The root command: refusals become exit code 1 with a message on standard error."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ApiError as error:
            request = f", request {error.request_id}" if error.request_id else ""
            click.echo(f"strongroom: error: {error.message} ({error.code}{request})", err=True)
            if isinstance(error, AuthenticationError):
                click.echo("strongroom: sign in again with `strongroom login`", err=True)
            ctx.exit(1)
        except StrongroomError as error:
            click.echo(f"strongroom: {error.code}: {error.message}", err=True)
            ctx.exit(1)


@click.group(
    cls=StrongroomGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Strongroom backup service: run the server, or use the API from the command line.",
)
@click.version_option(package_name="strongroom", prog_name="strongroom")
def cli() -> None:
    """The ``strongroom`` command."""


server.register(cli)
for command in retention.COMMANDS:
    server.retention.add_command(command)
for command in (
    auth.login,
    auth.logout,
    auth.whoami,
    workspaces.workspace,
    backups.backup,
    runs.run,
    artifacts.artifact,
    keys.key,
    proof.proof,
    status.status,
    *transfers.COMMANDS,
    *machines.COMMANDS,
    *restores.COMMANDS,
    *snapshots.COMMANDS,
):
    cli.add_command(command)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; its exit code (usage errors raise SystemExit 2)."""
    try:
        result = cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="strongroom",
            standalone_mode=False,
        )
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except click.ClickException as error:
        error.show()
        raise SystemExit(error.exit_code) from None
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
