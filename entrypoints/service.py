"""Opening a Strongroom for a configuration: the adapters it names, owned for a lifetime.

With no ``STRONGROOM_DATABASE_URL`` the embedded default is SQLite at
``<data dir>/strongroom.db``; ``postgresql://...`` selects PostgreSQL, whose pool is opened
here (in the app's lifespan) and closed when the block ends.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.entrypoints.settings import Settings
from strongroom.ports.storage import ObjectStorage
from strongroom.ports.usecases import Strongroom

Database = SqliteDatabase | PostgresDatabase
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


@contextmanager
def open_database(settings: Settings, *, migrate: bool | None = None) -> Iterator[Database]:
    """The configured database, open for the block, migrated when ``migrate`` says so.

    ``None`` is the default policy: SQLite is migrated (zero set-up), PostgreSQL is not
    (``serve`` passes True unless ``--no-migrate``). A migration lock makes concurrent
    starts of several instances safe.
    """
    url = database_url(settings)
    if url.startswith("sqlite:"):
        path = sqlite_path(url)
        path.parent.mkdir(parents=True, exist_ok=True)
        with SqliteDatabase(path) as sqlite:
            if migrate is not False:
                sqlite.migrate()
            yield sqlite
        return
    if not url.startswith(("postgresql://", "postgres://")):
        raise ValueError("STRONGROOM_DATABASE_URL must start with postgresql:// or sqlite:///")
    with PostgresDatabase.from_url(url) as postgres:
        if migrate:
            postgres.migrate()
        yield postgres


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
        )
        storage.ensure_bucket()
        return storage
    return LocalDiskStorage(settings.data_dir / "objects", secret_key.encode())


@contextmanager
def open_facade(settings: Settings, *, migrate: bool | None = None) -> Iterator[Strongroom]:
    """A facade for ``settings``; what it opens is closed when the block ends."""
    with open_database(settings, migrate=migrate) as database:
        secret_key = settings.resolved_secret_key()
        yield bootstrap(
            uow=database.uow,
            secret_key=secret_key,
            signup_enabled=settings.signup_enabled,
            storage=open_storage(settings, secret_key),
            multipart_threshold=settings.multipart_threshold,
        )


class RetentionLoop:
    """Runs the retention job every ``interval`` seconds on a daemon thread until stopped."""

    def __init__(self, facade: Strongroom, interval: float) -> None:
        self._facade = facade
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="retention", daemon=True)

    def start(self) -> None:
        """Begin; the first run comes one interval after the start."""
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to end and wait for a run in progress."""
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._facade.retention.run()
            except Exception:
                logger.exception("the retention job failed; it runs again next interval")


@contextmanager
def open_serving_facade(settings: Settings, *, migrate: bool | None = None) -> Iterator[Strongroom]:
    """``open_facade`` plus the retention job on an interval (``STRONGROOM_RETENTION_INTERVAL``
    seconds; 0 turns it off), for ``serve`` and the ASGI factory."""
    with open_facade(settings, migrate=migrate) as facade:
        if settings.retention_interval <= 0:
            yield facade
            return
        loop = RetentionLoop(facade, settings.retention_interval)
        loop.start()
        try:
            yield facade
        finally:
            loop.stop()
