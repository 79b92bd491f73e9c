"""The server's own commands: ``serve``, ``migrate``, ``retention run`` and ``admin``.

Every command takes ``--data-dir`` and ``--database-url`` (flags win over
``STRONGROOM_*``) and ``--json``. They act on the configured database directly, not
through the API. A server process (``serve``, ``scheduler``, ``executor``) first opens
what it will run on (database, migrations, object storage, the port): a missing piece is
one line, ``strongroom: error: ...`` (with ``--json`` the error envelope on standard
output), and exit 1, before anything says it is listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

import attrs
import click

from strongroom.domain.billing import BillingState
from strongroom.domain.errors import StrongroomError
from strongroom.domain.quotas import QuotaResource
from strongroom.entrypoints.cli.context import JSON_FLAG, CommandError
from strongroom.entrypoints.logs import configure_logging
from strongroom.entrypoints.settings import Settings

if TYPE_CHECKING:
    from strongroom.adapters.sql.migrate import Migration

# The server's machinery (the HTTP app, uvicorn, the database adapters) is imported by the
# command that runs it, so that the client's commands start without loading it.

F = TypeVar("F", bound=Callable[..., Any])


def storage_options(command: F) -> F:
    """``--data-dir``, ``--database-url`` and ``--json``, as every server command takes
    them (``--json`` arrives as ``as_json`` and sends the command's errors out as JSON)."""
    command = click.option(
        "--json", "as_json", is_flag=True, help="print JSON (for scripts) instead of text"
    )(command)
    command = click.option(
        "--database-url", default=None, help="postgresql://... or sqlite:///..."
    )(command)
    return click.option(
        "--data-dir", type=click.Path(path_type=Path), default=None, help="data directory"
    )(command)


def say(as_json: bool, value: dict[str, Any], line: str) -> None:
    """``value`` as one line of JSON with ``--json``, else ``line``."""
    if as_json:
        click.echo(json.dumps(value, sort_keys=True, default=str))
    else:
        click.echo(line)


def json_errors(as_json: bool) -> None:
    """Report the running command's failures as the JSON envelope when ``--json``."""
    click.get_current_context().meta[JSON_FLAG] = as_json


def one_line(error: BaseException) -> str:
    """The first line of what ``error`` says (its type when it says nothing)."""
    said = str(error).strip().splitlines()
    return said[0] if said else type(error).__name__


@contextlib.contextmanager
def startup_errors(what: str) -> Iterator[None]:
    """Whatever stops the block from opening the configured storage, as one line
    (``CommandError`` ``startup_failed``); the service's own refusals pass as they are."""
    try:
        yield
    except (StrongroomError, click.ClickException):
        raise
    except SystemExit as error:  # a missing extra names the pip command that installs it
        message = str(error.code).removeprefix("strongroom: ")
        raise CommandError(message, "startup_failed") from error
    except Exception as error:
        raise CommandError(f"{what}: {one_line(error)}", "startup_failed") from error


def preflight(settings: Settings, *, listen: bool = False) -> None:
    """Reach what a server process runs on before it says it runs: the database (one
    connection), the object storage (its bucket made when missing), and with ``listen``
    the address. A missing piece is a ``CommandError`` (``startup_failed``) of one line."""
    from strongroom.entrypoints.service import check_database, open_storage  # noqa: PLC0415

    with startup_errors("cannot start"):
        check_database(settings)
        try:
            open_storage(settings, settings.resolved_secret_key())
        except StrongroomError as error:  # the store's refusal, as the service words it
            message = f"cannot start: {error.message} ({error.code})"
            raise CommandError(message, "startup_failed") from error
    if listen:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((settings.host, settings.port))
            except OSError as error:
                raise CommandError(
                    f"cannot listen on {settings.host}:{settings.port}: {error.strerror}",
                    "startup_failed",
                ) from error


def settings_of(data_dir: Path | None, database_url: str | None, **extra: Any) -> Settings:
    """The settings of the environment, with the command's flags on top."""
    return Settings.from_env(data_dir=data_dir, database_url=database_url, **extra)


def process_command(
    group: click.Group, name: str, help_text: str, run: Callable[[Settings], None]
) -> None:
    """Add ``strongroom NAME``: a long-running process of the service (``run(settings)``
    until SIGTERM), with the common storage options. The scheduler and the executor are
    added this way: ``process_command(cli, "scheduler", "...", run_scheduler)``."""

    @group.command(name, help=help_text)
    @storage_options
    def command(data_dir: Path | None, database_url: str | None, as_json: bool) -> int:
        json_errors(as_json)
        settings = settings_of(data_dir, database_url)
        configure_logging(settings.log_format)
        preflight(settings)
        from strongroom.entrypoints.service import describe_storage  # noqa: PLC0415

        state = describe_storage(settings)
        say(as_json, {"started": name, "state": state}, f"Strongroom {name} started ({state})")
        run(settings)
        return 0


def register(cli: click.Group) -> None:
    """Add the server's commands to ``cli``."""
    cli.add_command(serve)
    cli.add_command(migrate)
    cli.add_command(retention)
    cli.add_command(admin)
    process_command(
        cli,
        "scheduler",
        "run the scheduler alone (no HTTP API)",
        _run_scheduler,
    )
    process_command(
        cli,
        "executor",
        "run the service executors of cloud runs, and the restore runner, alone",
        _run_executor,
    )


@contextlib.contextmanager
def _blocking_facade(data_dir: Path | None, database_url: str | None) -> Iterator[Any]:
    """The blocking facade of the configured service; a storage that does not open is
    one line (``startup_errors``)."""
    from strongroom.entrypoints.service import open_blocking_facade  # noqa: PLC0415

    opened = open_blocking_facade(settings_of(data_dir, database_url))
    with startup_errors("cannot open the service's storage"):
        facade = opened.__enter__()
    try:
        yield facade
    except BaseException as error:
        if not opened.__exit__(type(error), error, error.__traceback__):
            raise
    else:
        opened.__exit__(None, None, None)


def _run_scheduler(settings: Settings) -> None:
    # Imported when run: the client's install has no database drivers to import.
    from strongroom.entrypoints.scheduler import run_scheduler  # noqa: PLC0415

    asyncio.run(run_scheduler(settings))


def _run_executor(settings: Settings) -> None:
    # Imported when run: the source readers need the server's extras (minio).
    from strongroom.entrypoints.executor import run_executor  # noqa: PLC0415

    asyncio.run(run_executor(settings))


@click.command(help="run the HTTP API")
@storage_options
@click.option("--host", default=None, help="address to listen on (127.0.0.1)")
@click.option("--port", type=int, default=None, help="port to listen on (8080)")
@click.option("--access-log", is_flag=True, help="log every request")
@click.option(
    "--shutdown-timeout",
    type=int,
    default=None,
    help="seconds a stop waits for requests in flight (30)",
)
@click.option("--no-migrate", is_flag=True, help="do not apply pending migrations at start")
def serve(
    data_dir: Path | None,
    database_url: str | None,
    as_json: bool,
    host: str | None,
    port: int | None,
    access_log: bool,
    shutdown_timeout: int | None,
    no_migrate: bool,
) -> int:
    """Run the API under uvicorn (uvloop, httptools) until SIGTERM or SIGINT.

    A stop drains: the listening socket closes at once (new connections are refused),
    idle connections close, requests in flight finish (for at most the shutdown timeout,
    then they are cancelled), and only then does the lifespan close the facade and its
    database pool. The process then exits 0. With ``--json`` the line that says where it
    listens is a JSON object (``listening``, ``state``, ``data_dir``).
    """
    json_errors(as_json)
    settings = settings_of(
        data_dir,
        database_url,
        host=host,
        port=port,
        access_log=access_log or None,
        shutdown_timeout=shutdown_timeout,
    )
    from strongroom.entrypoints.http import create_app, run_until_stopped  # noqa: PLC0415
    from strongroom.entrypoints.service import describe_storage  # noqa: PLC0415

    configure_logging(settings.log_format)
    preflight(settings, listen=True)
    app = create_app(settings, migrate=not no_migrate)
    url, state = f"http://{settings.host}:{settings.port}", describe_storage(settings)
    say(
        as_json,
        {"listening": url, "state": state, "data_dir": str(settings.data_dir)},
        f"Strongroom listening on {url} (state {state}; data dir {settings.data_dir})",
    )
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, _after_drain)
    try:
        started = run_until_stopped(
            app,
            host=settings.host,
            port=settings.port,
            loop="uvloop",
            http="httptools",
            access_log=False,  # Strongroom's own access events replace uvicorn's
            log_config=None,  # configure_logging above formats every logger
            timeout_graceful_shutdown=settings.shutdown_timeout,
            **settings.proxy_options,
        )
    except SystemExit:  # uvicorn's own exit when its start fails (the log says why)
        started = False
    if not started:
        raise CommandError("the server could not start (the log above says why)", "startup_failed")
    return 0


def _after_drain(_signal: int, _frame: FrameType | None) -> None:
    """What a SIGTERM does outside uvicorn's own handling: nothing.

    uvicorn handles the stop, then raises the signal once more with the handler it found
    in place; with the default one the process would die by SIGTERM after a clean drain
    (exit status 143) instead of exiting 0.
    """


@click.command(help="apply pending database migrations")
@storage_options
def migrate(data_dir: Path | None, database_url: str | None, as_json: bool) -> int:
    """Apply pending migrations and name them."""
    from strongroom.entrypoints.service import describe_storage, open_database  # noqa: PLC0415

    json_errors(as_json)

    settings = settings_of(data_dir, database_url)

    async def apply() -> list[Migration]:
        async with open_database(settings, migrate=False) as database:
            return await asyncio.to_thread(database.migrate)

    with startup_errors("cannot migrate"):
        applied = asyncio.run(apply())
    names = [migration.name for migration in applied]
    state = describe_storage(settings)
    said = ", ".join(names) or "none pending"
    say(as_json, {"database": state, "applied": names}, f"database {state}: applied {said}")
    return 0


@click.group(help="the retention job")
def retention() -> None:
    """``retention run``."""


@retention.command(
    "run", help="remove expired artifacts and records, abort stale multipart uploads; once"
)
@storage_options
def retention_run(data_dir: Path | None, database_url: str | None, as_json: bool) -> int:
    """One pass of the retention job; exits 1 when an artifact could not be removed."""
    json_errors(as_json)
    with _blocking_facade(data_dir, database_url) as facade:
        report = facade.retention.run()
    say(
        as_json,
        attrs.asdict(report),
        f"retention: removed {report.removed} expired artifacts (kept {report.kept_last} "
        f"last of their backup, {report.kept_locked} locked, {report.failed} failed); "
        f"aborted {report.aborted_uploads} stale uploads; purged "
        f"{report.purged_idempotency_keys} expired idempotency keys and "
        f"{report.purged_failed_logins} old failed sign-ins",
    )
    return 1 if report.failed else 0


@click.group(help="operator commands")
def admin() -> None:
    """``admin billing|quota|user-add``."""


@admin.command(help="set a workspace's billing state")
@storage_options
@click.argument("workspace_id", type=click.UUID)
@click.argument("state", type=click.Choice([state.value for state in BillingState]))
def billing(
    data_dir: Path | None, database_url: str | None, as_json: bool, workspace_id: UUID, state: str
) -> int:
    """Set the billing state; the change applies on the next request."""
    json_errors(as_json)
    with _blocking_facade(data_dir, database_url) as facade:
        workspace = facade.workspaces.set_billing_state(workspace_id, BillingState(state))
    now = workspace.billing_state.value
    say(
        as_json,
        {"workspace_id": str(workspace.id), "billing_state": now},
        f"workspace {workspace.id} billing state is now {now}",
    )
    return 0


@admin.command(help="set a workspace's limit (0 means unlimited)")
@storage_options
@click.argument("workspace_id", type=click.UUID)
@click.argument("resource", type=click.Choice([resource.value for resource in QuotaResource]))
@click.argument("limit", type=click.IntRange(min=0))
def quota(
    data_dir: Path | None,
    database_url: str | None,
    as_json: bool,
    workspace_id: UUID,
    resource: str,
    limit: int,
) -> int:
    """Set one quota; the change applies on the next request."""
    json_errors(as_json)
    chosen = QuotaResource(resource)
    with _blocking_facade(data_dir, database_url) as facade:
        workspace = facade.workspaces.set_quota(workspace_id, chosen, limit)
    now = workspace.limit(chosen)
    say(
        as_json,
        {"workspace_id": str(workspace.id), "resource": chosen.value, "limit": now},
        f"workspace {workspace.id} {chosen.value} limit is now {now}",
    )
    return 0


@admin.command("user-add", help="add a built-in identity provider account")
@storage_options
@click.argument("email")
@click.option("--name", default=None, help="display name (default: the email)")
@click.option(
    "--password-stdin", is_flag=True, required=True, help="read the password from standard input"
)
def user_add(
    data_dir: Path | None,
    database_url: str | None,
    as_json: bool,
    email: str,
    name: str | None,
    password_stdin: bool,
) -> int:
    """Add an account of the built-in provider, its password read from standard input."""
    json_errors(as_json)
    if not password_stdin:
        raise click.UsageError("the password is read from standard input: --password-stdin")
    from strongroom.adapters.identity.builtin import BuiltinIdentityProvider  # noqa: PLC0415

    password = sys.stdin.readline().rstrip("\r\n")
    with _blocking_facade(data_dir, database_url) as facade:
        if not isinstance(facade.identity, BuiltinIdentityProvider):
            raise CommandError("accounts exist only in the built-in provider")
        # A blocking view: add_account returns the account, not a coroutine.
        provider: Any = facade.identity
        account = provider.add_account(email, password, name or email)
    say(
        as_json,
        {"account_id": str(account.id), "email": account.email},
        f"account {account.id} added for {account.email}",
    )
    return 0
