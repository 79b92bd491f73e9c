"""Opening a Strongroom for a configuration: the adapters it names, owned for a lifetime.

With no ``STRONGROOM_DATABASE_URL`` the embedded default is SQLite at
``<data dir>/strongroom.db``; ``postgresql://...`` selects PostgreSQL, whose pool is opened
here (in the app's lifespan) and closed when the block ends.

The facade is async; ``open_blocking_facade`` gives synchronous callers (the CLI, scripts)
the same facade behind a blocking view that runs it on a private event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from strongroom.adapters.identity.oidc import OidcIdentityProvider, OidcSettings
from strongroom.adapters.mail import LoggingMailer, SmtpMailer, SmtpSettings
from strongroom.adapters.outbound.policy import Outbound
from strongroom.adapters.runtime.assurance import run_health_every, run_webhooks_every
from strongroom.adapters.runtime.blocking import EventLoopThread, blocking
from strongroom.adapters.runtime.executor import Executor
from strongroom.adapters.runtime.restores import RestoreRunner
from strongroom.adapters.sources.readers import Readers
from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.system import SecureIds
from strongroom.adapters.webhooks.sender import WebhookSender
from strongroom.entrypoints.assurance import equip_assurance, run_drills_every
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driven.identity import IdentityProvider
from strongroom.ports.driven.mailer import Mailer
from strongroom.ports.driven.storage import ObjectStorage
from strongroom.ports.driving import Strongroom

if TYPE_CHECKING:
    from strongroom.adapters.sql.postgres import PostgresDatabase

logger = logging.getLogger(__name__)


def database_url(settings: Settings) -> str:
    """The configured database URL, or the embedded SQLite file under the data dir."""
    return settings.database_url or f"sqlite:///{settings.data_dir / 'strongroom.db'}"


def sqlite_path(url: str) -> Path:
    """``sqlite:///relative/path`` or ``sqlite:////absolute/path`` (SQLAlchemy's form)."""
    if not url.startswith("sqlite:///"):
        raise ValueError("a SQLite URL looks like sqlite:///path/to/file.db")
    return Path(url.removeprefix("sqlite:///"))


def describe_storage(settings: Settings) -> str:
    """Where this configuration keeps its state, for start-up messages."""
    url = database_url(settings)
    if url.startswith("sqlite:"):
        return f"in SQLite at {sqlite_path(url)}"
    parts = urlsplit(url)
    return f"in PostgreSQL at {parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path}"


def serving_pool_options() -> dict[str, int]:
    """The pool of a serving process: all of its connections opened at the start and kept
    while idle (``min_size`` is ``max_size``). A pool that starts with one connection, or
    shrinks back to it after ten idle minutes, grows one connection at a time when requests
    arrive, and each new connection costs a connect and an authentication: the first
    requests of a burst would wait for them while the database idles."""
    from strongroom.adapters.sql.postgres import default_max_size  # noqa: PLC0415

    size = default_max_size()
    return {"min_size": size, "max_size": size}


def _postgres_adapter() -> type[PostgresDatabase]:
    """The PostgreSQL adapter, imported only when configured (it is an optional extra)."""
    try:
        module = importlib.import_module("strongroom.adapters.sql.postgres")
    except ModuleNotFoundError as error:
        raise SystemExit(
            "strongroom: PostgreSQL support is not installed: pip install 'strongroom[postgres]'"
        ) from error
    database: type[PostgresDatabase] = module.PostgresDatabase
    return database


def check_database(settings: Settings) -> None:
    """Connect to the configured database once and hang up (a server's start-up check):
    SQLite needs nothing (its file is made on open); PostgreSQL must answer and hold the
    database. Raises what the driver raises (``SystemExit`` when it is not installed)."""
    url = database_url(settings)
    if url.startswith("sqlite:"):
        return
    if not url.startswith(("postgresql://", "postgres://")):
        raise ValueError("STRONGROOM_DATABASE_URL must start with postgresql:// or sqlite:///")
    _postgres_adapter()
    psycopg = importlib.import_module("psycopg")
    psycopg.connect(url, connect_timeout=10).close()


@asynccontextmanager
async def open_database(
    settings: Settings, *, migrate: bool | None = None, serving: bool = False
) -> AsyncIterator[SqliteDatabase | PostgresDatabase]:
    """The configured database, open for the block, migrated when ``migrate`` says so.

    ``None`` is the default policy: SQLite is migrated (zero set-up), PostgreSQL is not
    (``serve`` passes True unless ``--no-migrate``). A migration lock makes concurrent
    starts of several instances safe. A ``serving`` PostgreSQL pool opens all its
    connections at the start and keeps them (``serving_pool_options``).
    """
    url = database_url(settings)
    if url.startswith("sqlite:"):
        path = sqlite_path(url)
        path.parent.mkdir(parents=True, exist_ok=True)
        sqlite = SqliteDatabase(path)
        try:
            if migrate is not False:
                await asyncio.to_thread(sqlite.migrate)
            yield sqlite
        finally:
            await sqlite.aclose()
        return
    if not url.startswith(("postgresql://", "postgres://")):
        raise ValueError("STRONGROOM_DATABASE_URL must start with postgresql:// or sqlite:///")
    postgres = _postgres_adapter().from_url(url, **(serving_pool_options() if serving else {}))
    await postgres.open()
    try:
        if migrate:
            await asyncio.to_thread(postgres.migrate)
        yield postgres
    finally:
        await postgres.aclose()


def mailer_for(settings: Settings) -> Mailer:
    """SMTP when ``STRONGROOM_SMTP_HOST`` is set; otherwise messages go to the log."""
    if settings.smtp_host is None:
        return LoggingMailer()
    return SmtpMailer(
        SmtpSettings(
            host=settings.smtp_host,
            sender=settings.smtp_from,
            port=settings.smtp_port,
            username=settings.smtp_username,
            password=settings.smtp_password,
            starttls=settings.smtp_starttls,
        )
    )


def identity_for(settings: Settings) -> IdentityProvider | None:
    """An external OIDC provider when ``STRONGROOM_OIDC_ISSUER`` is set; ``None`` keeps the
    built-in one."""
    if settings.oidc_issuer is None or settings.oidc_client_id is None:
        return None
    issuer = settings.oidc_issuer.rstrip("/")
    return OidcIdentityProvider(
        OidcSettings(
            issuer=settings.oidc_issuer,
            client_id=settings.oidc_client_id,
            jwks_url=settings.oidc_jwks_url or f"{issuer}/.well-known/jwks.json",
            device_authorization_endpoint=settings.oidc_device_authorization_endpoint,
            token_endpoint=settings.oidc_token_endpoint,
            authorization_endpoint=settings.oidc_authorization_endpoint,
        ),
        SecureIds(),
    )


def open_storage(settings: Settings, secret_key: str) -> ObjectStorage:
    """The configured object storage: local disk under ``<data dir>/objects`` unless
    ``STRONGROOM_S3_ENDPOINT`` names an S3 store."""
    if settings.s3_endpoint:
        # minio is an optional extra (strongroom[s3]): imported only when configured.
        from strongroom.adapters.storage.s3 import S3Storage  # noqa: PLC0415

        if not (settings.s3_access_key and settings.s3_secret_key and settings.s3_bucket):
            raise ValueError(
                "STRONGROOM_S3_ENDPOINT needs STRONGROOM_S3_ACCESS_KEY, "
                "STRONGROOM_S3_SECRET_KEY and STRONGROOM_S3_BUCKET"
            )
        storage = S3Storage(
            settings.s3_endpoint,
            settings.s3_access_key,
            settings.s3_secret_key,
            settings.s3_bucket,
            settings.s3_region,
            timeout=settings.s3_timeout,
        )
        storage.ensure_bucket()
        return storage
    return LocalDiskStorage(settings.data_dir / "objects", secret_key.encode())


@asynccontextmanager
async def open_facade(
    settings: Settings, *, migrate: bool | None = None, serving: bool = False
) -> AsyncIterator[Strongroom]:
    """A facade for ``settings``; what it opens is closed when the block ends (``serving``:
    see ``open_database``)."""
    async with open_database(settings, migrate=migrate, serving=serving) as database:
        secret_key = settings.resolved_secret_key()
        signals = None
        if not isinstance(database, SqliteDatabase):
            # psycopg is an optional extra: imported only when PostgreSQL is configured.
            from strongroom.adapters.sql.listen import PostgresRunSignals  # noqa: PLC0415

            signals = PostgresRunSignals.for_database(database)
        try:
            facade = bootstrap(
                uow=database.uow,
                secret_key=secret_key,
                signup_enabled=settings.signup_enabled,
                mailer=mailer_for(settings),
                identity=identity_for(settings),
                storage=open_storage(settings, secret_key),
                multipart_threshold=settings.multipart_threshold,
                endpoint_policy=settings.endpoint_policy,
                signals=signals,
            )
            yield equip_assurance(facade, settings)
        finally:
            if signals is not None:
                await signals.aclose()


@contextmanager
def open_blocking_facade(settings: Settings, *, migrate: bool | None = None) -> Iterator[Any]:
    """``open_facade`` for synchronous code: a blocking view of the facade (same methods,
    plain calls) whose coroutines run on a private event loop for the block's lifetime."""
    loop = EventLoopThread("strongroom-facade")
    opened = open_facade(settings, migrate=migrate)
    try:
        facade = loop.run(opened.__aenter__())
        try:
            yield blocking(facade, loop)
        except BaseException as error:
            if not loop.run(opened.__aexit__(type(error), error, error.__traceback__)):
                raise
        else:
            loop.run(opened.__aexit__(None, None, None))
    finally:
        loop.close()


async def run_retention_every(facade: Strongroom, interval: float) -> None:
    """Run the retention job every ``interval`` seconds, forever (cancel the task to stop);
    the first run comes one interval after the start."""
    while True:
        await asyncio.sleep(interval)
        try:
            await facade.retention.run()
        except Exception:
            logger.exception("the retention job failed; it runs again next interval")


async def run_leases_every(facade: Strongroom, interval: float) -> None:
    """Expire the leases of claimed runs every ``interval`` seconds, forever (cancel the
    task to stop): requeued, failed or cancelled (contract 11)."""
    while True:
        await asyncio.sleep(interval)
        try:
            await facade.leases.expire()
        except Exception:
            logger.exception("the lease job failed; it runs again next interval")


async def run_scheduler_every(facade: Strongroom, interval: float) -> None:
    """Queue the runs of due schedule slots, and the drills of due drill slots, every
    ``interval`` seconds, forever (cancel the task to stop); the first tick comes at once.
    Any number of processes may run it on one database: each slot gives exactly one run
    (contract 11), each drill slot one drill (contract 16)."""
    while True:
        try:
            await facade.scheduler.run_due()
        except Exception:
            logger.exception("the scheduler failed; it runs again next interval")
        try:
            await facade.drills.schedule_due()
        except Exception:
            logger.exception("the drill scheduler failed; it runs again next interval")
        await asyncio.sleep(interval)


async def run_verification_every(
    facade: Strongroom, pending_interval: float, sample_interval: float
) -> None:
    """Verify artifacts in the background, forever (cancel the task to stop): every
    ``pending_interval`` seconds those whose verification is pending (multipart uploads
    just confirmed), and every ``sample_interval`` seconds (0: never) also a batch of those
    not verified for that long, least recently verified first."""
    ticks = [interval for interval in (pending_interval, sample_interval) if interval > 0]
    if not ticks:
        return
    loop = asyncio.get_running_loop()
    sampled_at = loop.time()
    while True:
        await asyncio.sleep(min(ticks))
        verified_before = None
        if sample_interval > 0 and loop.time() - sampled_at >= sample_interval:
            sampled_at = loop.time()
            verified_before = facade.deps.clock.now() - timedelta(seconds=sample_interval)
        try:
            await facade.verification.run(verified_before)
        except Exception:
            logger.exception("artifact verification failed; it runs again next interval")


async def run_restores_every(runner: RestoreRunner, poll: float, lease: float = 60.0) -> None:
    """Run queued restores, forever (cancel the task to stop): when a restore is asked for
    (a wake-up, from any process on PostgreSQL) and at the latest every ``poll`` seconds,
    every restore queued by then, one after another (contract 11), each held on a lease of
    ``lease`` seconds (``STRONGROOM_EXECUTOR_LEASE``) renewed as it streams; restores whose
    runner died are queued again first. Any number of processes may run this at once: each
    restore is taken by exactly one. ``strongroom serve`` starts it
    (``STRONGROOM_RESTORE_POLL``); a process of its own (``strongroom executor``) may too."""
    held = timedelta(seconds=lease)
    while True:
        # Taken before the look, so a restore asked for during it still wakes the wait.
        ticket = runner.wakeup()
        try:
            while await runner.run_queued(lease=held):
                pass
        except Exception:
            logger.exception("the restore runner failed; it looks again next interval")
        try:
            await ticket.wait(poll)
        finally:
            ticket.close()


def executor_for(facade: Strongroom, settings: Settings) -> Executor:
    """The executor of cloud runs of ``facade`` configured by ``settings``."""
    runs = facade.service_runs.with_lease(timedelta(seconds=settings.executor_lease))
    return Executor(
        runs,
        Readers(settings.endpoint_policy),
        concurrency=settings.executors,
        poll=settings.executor_poll,
    )


@asynccontextmanager
async def open_serving_facade(
    settings: Settings, *, migrate: bool | None = None
) -> AsyncIterator[Strongroom]:
    """``open_facade`` plus the background jobs, for ``serve`` and the ASGI factory: the
    retention job on an interval (``STRONGROOM_RETENTION_INTERVAL`` seconds; 0 turns it
    off), the lease job (``STRONGROOM_LEASE_INTERVAL`` seconds; 0 turns it off), the
    scheduler (``STRONGROOM_SCHEDULER_INTERVAL`` seconds; 0 turns it off) and
    artifact verification (``STRONGROOM_VERIFY_PENDING_INTERVAL`` and
    ``STRONGROOM_VERIFY_INTERVAL``; both 0 turn it off), the restore runner
    (``STRONGROOM_RESTORE_POLL`` seconds; 0 turns it off), and the service executor of
    cloud runs (``STRONGROOM_EXECUTORS`` at once; 0 turns it off). A PostgreSQL pool is
    opened whole (``serving_pool_options``)."""
    async with open_facade(settings, migrate=migrate, serving=True) as facade:
        jobs = []
        if settings.retention_interval > 0:
            jobs.append(
                asyncio.create_task(
                    run_retention_every(facade, settings.retention_interval), name="retention"
                )
            )
        if settings.lease_interval > 0:
            jobs.append(
                asyncio.create_task(
                    run_leases_every(facade, settings.lease_interval), name="leases"
                )
            )
        if settings.scheduler_interval > 0:
            jobs.append(
                asyncio.create_task(
                    run_scheduler_every(facade, settings.scheduler_interval), name="scheduler"
                )
            )
        if settings.verify_pending_interval > 0 or settings.verify_interval > 0:
            jobs.append(
                asyncio.create_task(
                    run_verification_every(
                        facade, settings.verify_pending_interval, settings.verify_interval
                    ),
                    name="verification",
                )
            )
        if settings.restore_poll > 0:
            jobs.append(
                asyncio.create_task(
                    run_restores_every(
                        RestoreRunner(facade.restores),
                        settings.restore_poll,
                        settings.executor_lease,
                    ),
                    name="restores",
                )
            )
            jobs.append(
                asyncio.create_task(run_drills_every(facade, settings.restore_poll), name="drills")
            )
        jobs += assurance_jobs(facade, settings)
        stop_executor = asyncio.Event()
        if settings.executors > 0:
            executor = executor_for(facade, settings)
            jobs.append(asyncio.create_task(executor.run(stop_executor), name="executor"))
        try:
            yield facade
        finally:
            # The executor first releases its runs in flight; then every job is cancelled.
            stop_executor.set()
            for job in jobs:
                if job.get_name() == "executor":
                    with contextlib.suppress(Exception):
                        await job
            for job in jobs:
                job.cancel()
            for job in jobs:
                with contextlib.suppress(asyncio.CancelledError):
                    await job


def assurance_jobs(facade: Strongroom, settings: Settings) -> list[asyncio.Task[None]]:
    """The health evaluator (``STRONGROOM_HEALTH_INTERVAL``) and the webhook sender
    (``STRONGROOM_WEBHOOK_POLL``, ``STRONGROOM_WEBHOOK_CONCURRENCY``) of contract 16."""
    jobs = []
    if settings.health_interval > 0:
        jobs.append(
            asyncio.create_task(
                run_health_every(facade.health, settings.health_interval), name="health"
            )
        )
    if settings.webhook_poll > 0:
        sender = WebhookSender(
            facade.webhooks,
            Outbound(settings.endpoint_policy),
            facade.now,
            settings.webhook_concurrency,
        )
        jobs.append(
            asyncio.create_task(run_webhooks_every(sender, settings.webhook_poll), name="webhooks")
        )
    return jobs
