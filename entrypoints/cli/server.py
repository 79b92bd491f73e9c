"""The server's own commands: ``serve``, ``migrate``, ``retention run`` and ``admin``.

Every command takes ``--data-dir`` and ``--database-url`` (flags win over
``STRONGROOM_*``). They act on the configured database directly, not through the API.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

import click

from strongroom.domain.billing import BillingState
from strongroom.domain.quotas import QuotaResource
from strongroom.entrypoints.logs import configure_logging
from strongroom.entrypoints.settings import Settings

if TYPE_CHECKING:
    from strongroom.adapters.sql.migrate import Migration

# The server's machinery (the HTTP app, uvicorn, the database adapters) is imported by the
# command that runs it, so that the client's commands start without loading it.

F = TypeVar("F", bound=Callable[..., Any])


def storage_options(command: F) -> F:
    """``--data-dir`` and ``--database-url``, as every server command takes them."""
    command = click.option(
        "--database-url", default=None, help="postgresql://... or sqlite:///..."
    )(command)
    return click.option(
        "--data-dir", type=click.Path(path_type=Path), default=None, help="data directory"
    )(command)


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
    def command(data_dir: Path | None, database_url: str | None) -> int:
        settings = settings_of(data_dir, database_url)
        configure_logging(settings.log_format)
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


def _blocking_facade(data_dir: Path | None, database_url: str | None) -> Any:
    """The blocking facade of the configured service (a context manager)."""
    from strongroom.entrypoints.service import open_blocking_facade  # noqa: PLC0415

    return open_blocking_facade(settings_of(data_dir, database_url))


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
    database pool. The process then exits 0.
    """
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
    app = create_app(settings, migrate=not no_migrate)
    print(
        f"Strongroom listening on http://{settings.host}:{settings.port} "
        f"(state {describe_storage(settings)}; data dir {settings.data_dir})",
        flush=True,
    )
    signal.signal(signal.SIGTERM, _after_drain)
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
    return 0 if started else STARTUP_FAILURE


STARTUP_FAILURE = 3  # uvicorn's exit status when the server could not start


def _after_drain(_signal: int, _frame: FrameType | None) -> None:
    """What a SIGTERM does outside uvicorn's own handling: nothing.

    uvicorn handles the stop, then raises the signal once more with the handler it found
    in place; with the default one the process would die by SIGTERM after a clean drain
    (exit status 143) instead of exiting 0.
    """


@click.command(help="apply pending database migrations")
@storage_options
def migrate(data_dir: Path | None, database_url: str | None) -> int:
    """Apply pending migrations and name them."""
    from strongroom.entrypoints.service import describe_storage, open_database  # noqa: PLC0415

    settings = settings_of(data_dir, database_url)

    async def apply() -> list[Migration]:
        async with open_database(settings, migrate=False) as database:
            return await asyncio.to_thread(database.migrate)

    applied = asyncio.run(apply())
    names = ", ".join(migration.name for migration in applied) or "none pending"
    print(f"database {describe_storage(settings)}: applied {names}")
    return 0


@click.group(help="the retention job")
def retention() -> None:
    """``retention run``."""


@retention.command(
    "run", help="remove expired artifacts and records, abort stale multipart uploads; once"
)
@storage_options
def retention_run(data_dir: Path | None, database_url: str | None) -> int:
    """One pass of the retention job; exits 1 when an artifact could not be removed."""
    with _blocking_facade(data_dir, database_url) as facade:
        report = facade.retention.run()
    print(
        f"retention: removed {report.removed} expired artifacts (kept {report.kept_last} "
        f"last of their backup, {report.kept_locked} locked, {report.failed} failed); "
        f"aborted {report.aborted_uploads} stale uploads; purged "
        f"{report.purged_idempotency_keys} expired idempotency keys and "
        f"{report.purged_failed_logins} old failed sign-ins"
    )
    return 1 if report.failed else 0


@click.group(help="operator commands")
def admin() -> None:
    """``admin billing|quota|user-add``."""


@admin.command(help="set a workspace's billing state")
@storage_options
@click.argument("workspace_id", type=click.UUID)
@click.argument("state", type=click.Choice([state.value for state in BillingState]))
def billing(data_dir: Path | None, database_url: str | None, workspace_id: UUID, state: str) -> int:
    """Set the billing state; the change applies on the next request."""
    with _blocking_facade(data_dir, database_url) as facade:
        workspace = facade.workspaces.set_billing_state(workspace_id, BillingState(state))
    print(f"workspace {workspace.id} billing state is now {workspace.billing_state.value}")
    return 0


@admin.command(help="set a workspace's limit (0 means unlimited)")
@storage_options
@click.argument("workspace_id", type=click.UUID)
@click.argument("resource", type=click.Choice([resource.value for resource in QuotaResource]))
@click.argument("limit", type=click.IntRange(min=0))
def quota(
    data_dir: Path | None, database_url: str | None, workspace_id: UUID, resource: str, limit: int
) -> int:
    """Set one quota; the change applies on the next request."""
    chosen = QuotaResource(resource)
    with _blocking_facade(data_dir, database_url) as facade:
        workspace = facade.workspaces.set_quota(workspace_id, chosen, limit)
    print(f"workspace {workspace.id} {chosen.value} limit is now {workspace.limit(chosen)}")
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
    email: str,
    name: str | None,
    password_stdin: bool,
) -> int:
    """Add an account of the built-in provider, its password read from standard input."""
    if not password_stdin:
        raise click.UsageError("the password is read from standard input: --password-stdin")
    from strongroom.adapters.identity.builtin import BuiltinIdentityProvider  # noqa: PLC0415

    password = sys.stdin.readline().rstrip("\r\n")
    with _blocking_facade(data_dir, database_url) as facade:
        if not isinstance(facade.identity, BuiltinIdentityProvider):
            raise click.ClickException("accounts exist only in the built-in provider")
        # A blocking view: add_account returns the account, not a coroutine.
        provider: Any = facade.identity
        account = provider.add_account(email, password, name or email)
    print(f"account {account.id} added for {account.email}")
    return 0
