"""The ``strongroom`` command: the server's own commands (``serve``, ``migrate``,
``retention``, ``admin``; see ``server``) and the command-line client of the API
(``login``, ``workspace``, ``backup``, ``run``, ``artifact``...; contract 12).

Every command takes ``--json``. Exit codes (docs/clients.md): 0 success, 1 an error (the
API's message and request id on standard error), 2 a usage error, 130 an interrupted push.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

import click

from strongroom.client import ApiError, AuthenticationError
from strongroom.domain.errors import StrongroomError
from strongroom.entrypoints.cli import (
    api,
    artifacts,
    auth,
    backups,
    completion,
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
from strongroom.entrypoints.cli.context import JSON_FLAG


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for JSON (``--json`` before any ``--``)."""
    options = list(argv)
    if "--" in options:
        options = options[: options.index("--")]
    return "--json" in options


def report(error: Exception, as_json: bool, ctx: click.Context | None) -> int:
    """Say why the command failed, in the one style (``strongroom: error: ...`` on
    standard error; with ``--json`` the API's error envelope on standard output); the
    exit code."""
    code, exit_code, request_id = "failed", 1, None
    message = str(error)
    hint = None
    if isinstance(error, ApiError):
        code, message, request_id = error.code, error.message, error.request_id
        if isinstance(error, AuthenticationError):
            hint = "sign in again with `strongroom login`"
    elif isinstance(error, StrongroomError):
        code, message = error.code, error.message
    elif isinstance(error, click.UsageError):
        code, exit_code, message = "usage_error", error.exit_code, error.format_message()
        ctx = error.ctx or ctx
    elif isinstance(error, click.ClickException):
        code, exit_code = getattr(error, "code", code), error.exit_code
        message = error.format_message()
    elif isinstance(error, click.exceptions.Abort):
        code, message = "aborted", "aborted"
    if as_json:
        refusal: dict[str, Any] = {"code": code, "message": message, "request_id": request_id}
        if isinstance(error, ApiError) and error.detail is not None:
            refusal["detail"] = error.detail
        click.echo(json.dumps({"error": refusal}, indent=2))
        return exit_code
    if isinstance(error, click.UsageError) and ctx is not None:
        click.echo(ctx.get_usage(), err=True)
        click.echo(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.", err=True)
    said = f" ({code}, request {request_id})" if request_id else ""
    if isinstance(error, StrongroomError):
        said = f" ({code})"
    click.echo(f"strongroom: error: {message}{said}", err=True)
    if hint:
        click.echo(f"strongroom: {hint}", err=True)
    return exit_code


COMMAND_LINE: ContextVar[Sequence[str]] = ContextVar("command_line", default=())
FAILURES = (ApiError, StrongroomError, click.ClickException, click.exceptions.Abort)


class StrongroomGroup(click.Group):
    """The root command: every failure is reported in one style (see ``report``)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except FAILURES as error:
            as_json = bool(ctx.meta.get(JSON_FLAG, wants_json(COMMAND_LINE.get())))
            ctx.exit(report(error, as_json, ctx))

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        COMMAND_LINE.set(argv)
        try:
            result = super().main(
                argv, prog_name or "strongroom", complete_var, standalone_mode=False, **extra
            )
        except FAILURES as error:
            result = report(error, wants_json(argv), None)
        code = result if isinstance(result, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


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
    auth.auth,
    api.api,
    completion.completion,
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
    """Entry point of the console script; its exit code."""
    code: int = cli.main(
        args=list(argv) if argv is not None else None,
        prog_name="strongroom",
        standalone_mode=False,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
