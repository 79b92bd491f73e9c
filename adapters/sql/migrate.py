"""The migration runner: numbered plain-SQL files per dialect, applied in order, once.

Migrations live in ``migrations/<dialect>/NNNN_name.sql`` (numbered from 1, each number
once; a gap is allowed, see ``read_migrations``). Each one is applied in its own
transaction together with the row that records it in ``schema_migrations``, under a lock
that serialises migrators (PostgreSQL: an advisory lock; SQLite: the write lock of BEGIN
IMMEDIATE); which migrations are pending is decided inside that lock. Running the
migrator again, or several at once, applies each file exactly once.

A migration must be able to run inside a transaction (PostgreSQL: no ``CREATE INDEX
CONCURRENTLY``; SQLite: no ``PRAGMA foreign_keys`` changes, no ``VACUUM``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Protocol

import attrs

from strongroom.adapters.sql.catalog import Dialect

_FILE_NAME = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")
VERSION_TABLE = "schema_migrations"


class MigrationFileError(Exception):
    """The migration files are misnamed, share a number, or do not start at 1."""


@attrs.frozen
class Migration:
    """One numbered schema change."""

    version: int
    name: str
    sql: str = attrs.field(repr=False)


@cache
def migrations_for(dialect: Dialect) -> tuple[Migration, ...]:
    """Every migration of ``dialect``, in order."""
    return read_migrations(files("strongroom.adapters.sql").joinpath("migrations", dialect.value))


def read_migrations(folder: Traversable) -> tuple[Migration, ...]:
    """The migrations of one folder, in order; refuses misnamed files, a number used twice
    and a first number other than 1. A gap is allowed: branches developed side by side
    reserve their numbers, and a database that applied a later number first still gets an
    earlier one when it arrives (``run_migrations`` applies whatever is not recorded)."""
    found: list[Migration] = []
    for entry in folder.iterdir():
        if not entry.name.endswith(".sql"):
            continue
        named = _FILE_NAME.match(entry.name)
        if named is None:
            raise MigrationFileError(f"{entry.name} is not named NNNN_name.sql")
        found.append(
            Migration(int(named["version"]), named["name"], entry.read_text(encoding="utf-8"))
        )
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if len(set(versions)) != len(versions) or (versions and versions[0] != 1):
        raise MigrationFileError(
            f"migrations must be numbered from 1, each number once: {versions}"
        )
    return tuple(found)


def canonical_schema(dialect: Dialect) -> str:
    """The schema every migration together gives (``schema_<dialect>.sql``)."""
    resource = files("strongroom.adapters.sql").joinpath(f"schema_{dialect.value}.sql")
    return resource.read_text(encoding="utf-8")


class MigrationTarget(Protocol):
    """A database the runner migrates, in one dialect."""

    def apply_if_pending(self, migration: Migration) -> bool:
        """Under the migration lock and in one transaction: apply ``migration`` and record
        it, unless it is recorded already. Whether it was applied."""
        ...

    def applied_versions(self) -> set[int]:
        """The versions recorded so far (none before the first migration)."""
        ...


def run_migrations(target: MigrationTarget, migrations: Sequence[Migration]) -> list[Migration]:
    """Apply every pending migration in order; the ones this call applied."""
    done = target.applied_versions()
    return [
        migration
        for migration in migrations
        if migration.version not in done and target.apply_if_pending(migration)
    ]
