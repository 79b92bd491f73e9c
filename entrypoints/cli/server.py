"""The ``strongroom`` command: ``serve``, ``migrate`` and the operator's ``admin`` commands.

Every command takes ``--data-dir`` and ``--database-url`` (flags win over ``STRONGROOM_*``).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any
from uuid import UUID

import uvicorn

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.sql.migrate import Migration
from strongroom.domain.billing import BillingState
from strongroom.domain.errors import StrongroomError
from strongroom.domain.quotas import QuotaResource
from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.logs import configure_logging
from strongroom.entrypoints.service import describe_storage, open_blocking_facade, open_database
from strongroom.entrypoints.settings import Settings


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None, help="data directory")
    parser.add_argument("--database-url", default=None, help="postgresql://... or sqlite:///...")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="strongroom", description="Strongroom backup service")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the HTTP API")
    _common(serve)
    serve.add_argument("--host", default=None, help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port to listen on (8080)")
    serve.add_argument("--access-log", action="store_true", help="log every request")
    serve.add_argument(
        "--shutdown-timeout",
        type=int,
        default=None,
        help="seconds a stop waits for requests in flight (30)",
    )
    serve.add_argument(
        "--no-migrate", action="store_true", help="do not apply pending migrations at start"
    )
    serve.set_defaults(run=_serve)

    migrate = commands.add_parser("migrate", help="apply pending database migrations")
    _common(migrate)
    migrate.set_defaults(run=_migrate)

    retention = commands.add_parser("retention", help="the retention job").add_subparsers(
        dest="retention_command", required=True
    )
    retention_run = retention.add_parser(
        "run", help="remove expired artifacts and records, abort stale multipart uploads; once"
    )
    _common(retention_run)
    retention_run.set_defaults(run=_retention_run)

    admin = commands.add_parser("admin", help="operator commands").add_subparsers(
        dest="admin_command", required=True
    )
    billing = admin.add_parser("billing", help="set a workspace's billing state")
    _common(billing)
    billing.add_argument("workspace_id", type=UUID)
    billing.add_argument("state", choices=[state.value for state in BillingState])
    billing.set_defaults(run=_admin_billing)

    quota = admin.add_parser("quota", help="set a workspace's limit (0 means unlimited)")
    _common(quota)
    quota.add_argument("workspace_id", type=UUID)
    quota.add_argument("resource", choices=[resource.value for resource in QuotaResource])
    quota.add_argument("limit", type=int)
    quota.set_defaults(run=_admin_quota)

    user_add = admin.add_parser("user-add", help="add a built-in identity provider account")
    _common(user_add)
    user_add.add_argument("email")
    user_add.add_argument("--name", default=None, help="display name (default: the email)")
    user_add.add_argument(
        "--password-stdin",
        action="store_true",
        required=True,
        help="read the password from standard input",
    )
    user_add.set_defaults(run=_admin_user_add)
    return parser


def _settings(arguments: argparse.Namespace, **extra: Any) -> Settings:
    return Settings.from_env(
        data_dir=arguments.data_dir, database_url=arguments.database_url, **extra
    )


def _serve(arguments: argparse.Namespace) -> int:
    """Run the API under uvicorn (uvloop, httptools) until SIGTERM or SIGINT.

    A stop drains: the listening socket closes at once (new connections are refused),
    idle connections close, requests in flight finish (for at most the shutdown timeout,
    then they are cancelled), and only then does the lifespan close the facade and its
    database pool. The process then exits 0.
    """
    settings = _settings(
        arguments,
        host=arguments.host,
        port=arguments.port,
        access_log=arguments.access_log or None,
        shutdown_timeout=arguments.shutdown_timeout,
    )
    configure_logging(settings.log_format)
    app = create_app(settings, migrate=not arguments.no_migrate)
    print(
        f"Strongroom listening on http://{settings.host}:{settings.port} "
        f"(state {describe_storage(settings)}; data dir {settings.data_dir})",
        flush=True,
    )
    signal.signal(signal.SIGTERM, _after_drain)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        access_log=False,  # Strongroom's own access events replace uvicorn's
        log_config=None,  # configure_logging above formats every logger
        timeout_graceful_shutdown=settings.shutdown_timeout,
    )
    return 0


def _after_drain(_signal: int, _frame: FrameType | None) -> None:
    """What a SIGTERM does outside uvicorn's own handling: nothing.

    uvicorn handles the stop, then raises the signal once more with the handler it found
    in place; with the default one the process would die by SIGTERM after a clean drain
    (exit status 143) instead of exiting 0.
    """


def _migrate(arguments: argparse.Namespace) -> int:
    settings = _settings(arguments)

    async def migrate() -> list[Migration]:
        async with open_database(settings, migrate=False) as database:
            return await asyncio.to_thread(database.migrate)

    applied = asyncio.run(migrate())
    names = ", ".join(migration.name for migration in applied) or "none pending"
    print(f"database {describe_storage(settings)}: applied {names}")
    return 0


def _retention_run(arguments: argparse.Namespace) -> int:
    with open_blocking_facade(_settings(arguments)) as facade:
        report = facade.retention.run()
    print(
        f"retention: removed {report.removed} expired artifacts (kept {report.kept_last} "
        f"last of their backup, {report.kept_locked} locked, {report.failed} failed); "
        f"aborted {report.aborted_uploads} stale uploads; purged "
        f"{report.purged_idempotency_keys} expired idempotency keys and "
        f"{report.purged_failed_logins} old failed sign-ins"
    )
    return 1 if report.failed else 0


def _admin_billing(arguments: argparse.Namespace) -> int:
    with open_blocking_facade(_settings(arguments)) as facade:
        workspace = facade.workspaces.set_billing_state(
            arguments.workspace_id, BillingState(arguments.state)
        )
    print(f"workspace {workspace.id} billing state is now {workspace.billing_state.value}")
    return 0


def _admin_quota(arguments: argparse.Namespace) -> int:
    if arguments.limit < 0:
        raise SystemExit("strongroom: error: a limit is 0 (unlimited) or more")
    resource = QuotaResource(arguments.resource)
    with open_blocking_facade(_settings(arguments)) as facade:
        workspace = facade.workspaces.set_quota(arguments.workspace_id, resource, arguments.limit)
    print(f"workspace {workspace.id} {resource.value} limit is now {workspace.limit(resource)}")
    return 0


def _admin_user_add(arguments: argparse.Namespace) -> int:
    password = sys.stdin.readline().rstrip("\r\n")
    with open_blocking_facade(_settings(arguments)) as facade:
        if not isinstance(facade.deps.identity, BuiltinIdentityProvider):
            raise SystemExit("strongroom: error: accounts exist only in the built-in provider")
        # A blocking view: add_account returns the account, not a coroutine.
        provider: Any = facade.deps.identity
        account = provider.add_account(arguments.email, password, arguments.name or arguments.email)
    print(f"account {account.id} added for {account.email}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; domain refusals exit 1 with their message."""
    arguments = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = arguments.run
    try:
        return run(arguments)
    except StrongroomError as error:
        print(f"strongroom: {error.code}: {error.message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
