"""Migrations: applying every migration gives the canonical schema, once, even when several
migrators run at the same time."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from strongroom.adapters.sql.catalog import Dialect
from strongroom.adapters.sql.migrate import (
    MigrationFileError,
    canonical_schema,
    migrations_for,
    read_migrations,
)
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.sqlite import SqliteDatabase, split_statements
from support.postgres import PostgresServer, scratch_database

Schema = dict[str, Any]


# SQLite: the structure the pragmas show, plus the CHECK constraints of each table's text.


def _checks(table_sql: str) -> list[str]:
    """Every ``CHECK (...)`` of a CREATE TABLE statement, whitespace-normalised."""
    text = re.sub(r"--[^\n]*", "", table_sql)
    found = []
    for start in (match.end() for match in re.finditer(r"\bCHECK\s*\(", text, re.IGNORECASE)):
        depth, end = 1, start
        while depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        found.append(" ".join(text[start : end - 1].split()))
    return sorted(found)


def sqlite_schema(connection: sqlite3.Connection) -> Schema:
    """Tables (columns, keys, indexes, foreign keys, checks, strictness), triggers, views."""
    schema: Schema = {}
    entries = connection.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_schema"
        " WHERE name NOT LIKE 'sqlite_%' AND tbl_name != 'schema_migrations'"
    ).fetchall()
    strict = {row[1]: row[5] for row in connection.execute("PRAGMA table_list")}
    for kind, name, _table, text in entries:
        if kind == "table":
            indexes = {}
            for index in connection.execute(f"PRAGMA index_list('{name}')"):
                columns = connection.execute(f"PRAGMA index_xinfo('{index[1]}')").fetchall()
                indexes[index[1]] = (index[2], index[3], index[4], [tuple(c) for c in columns])
            schema[f"table {name}"] = {
                "columns": {
                    column[1]: tuple(column[2:])
                    for column in connection.execute(f"PRAGMA table_xinfo('{name}')")
                },
                "foreign_keys": sorted(
                    tuple(fk[2:]) for fk in connection.execute(f"PRAGMA foreign_key_list('{name}')")
                ),
                "indexes": indexes,
                "checks": _checks(text),
                "strict": strict[name],
            }
        elif kind in ("trigger", "view"):
            schema[f"{kind} {name}"] = " ".join(text.split())
    return schema


# PostgreSQL: what the catalogs say about the public schema.


def postgres_schema(connection: psycopg.Connection[Any]) -> Schema:
    """Columns (generated ones' expressions too), constraints, indexes, sequences, views,
    triggers and functions of the public schema."""
    queries = {
        "columns": """
            SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default,
                   is_identity, identity_generation, character_maximum_length, is_generated,
                   generation_expression
            FROM information_schema.columns
            WHERE table_schema = 'public' AND table_name != 'schema_migrations'
        """,
        "constraints": """
            SELECT rel.relname, con.conname, pg_get_constraintdef(con.oid)
            FROM pg_constraint AS con
            JOIN pg_class AS rel ON rel.oid = con.conrelid
            JOIN pg_namespace AS ns ON ns.oid = rel.relnamespace
            WHERE ns.nspname = 'public' AND rel.relname != 'schema_migrations'
        """,
        "indexes": """
            SELECT tablename, indexname, indexdef FROM pg_indexes
            WHERE schemaname = 'public' AND tablename != 'schema_migrations'
        """,
        "sequences": """
            SELECT sequence_name, data_type FROM information_schema.sequences
            WHERE sequence_schema = 'public'
        """,
        "views": """
            SELECT table_name, view_definition FROM information_schema.views
            WHERE table_schema = 'public'
        """,
        "triggers": """
            SELECT event_object_table, trigger_name, action_statement
            FROM information_schema.triggers WHERE trigger_schema = 'public'
        """,
        "functions": """
            SELECT p.proname, pg_get_function_identity_arguments(p.oid), p.provolatile,
                   p.proparallel, p.prosrc
            FROM pg_proc AS p JOIN pg_namespace AS ns ON ns.oid = p.pronamespace
            WHERE ns.nspname = 'public'
        """,
    }
    return {
        name: sorted(tuple(row) for row in connection.execute(query))
        for name, query in queries.items()
    }


class TestSqliteMigrations:
    """SQLite."""

    def test_every_migration_gives_the_canonical_schema(self, tmp_path: Path) -> None:
        """The migrated database and one built from ``schema_sqlite.sql`` are the same."""
        with SqliteDatabase(tmp_path / "migrated.sqlite3") as migrated:
            applied = migrated.migrate()
            with closing(migrated.connect()) as connection:
                from_migrations = sqlite_schema(connection)
        assert [m.version for m in applied] == [m.version for m in migrations_for(Dialect.SQLITE)]
        with closing(sqlite3.connect(tmp_path / "canonical.sqlite3")) as canonical:
            canonical.executescript(canonical_schema(Dialect.SQLITE))
            from_canonical = sqlite_schema(canonical)
        assert from_migrations == from_canonical
        assert len(from_canonical) >= 12

    def test_migrating_again_applies_nothing(self, tmp_path: Path) -> None:
        """The version table remembers what was applied."""
        with SqliteDatabase(tmp_path / "db.sqlite3") as database:
            assert database.migrate()
            assert database.migrate() == []
            with closing(database.connect()) as connection:
                recorded = connection.execute("SELECT version, name FROM schema_migrations")
                assert [tuple(row) for row in recorded] == [
                    (m.version, m.name) for m in migrations_for(Dialect.SQLITE)
                ]

    def test_concurrent_migrators_apply_each_migration_once(self, tmp_path: Path) -> None:
        """Several processes starting at once: one applies, the others find nothing to do."""
        path = tmp_path / "db.sqlite3"
        applied = _concurrently(8, lambda: len(SqliteDatabase(path, busy_timeout=30).migrate()))
        assert sum(applied) == len(migrations_for(Dialect.SQLITE))

    def test_statements_are_split_where_sqlite_says_they_end(self) -> None:
        """Semicolons in strings and comments do not split; a missing one is refused."""
        script = (
            "-- a; comment\nCREATE TABLE t (a TEXT DEFAULT ';');\n\nINSERT INTO t VALUES ('x;y');\n"
        )
        assert list(split_statements(script)) == [
            "-- a; comment\nCREATE TABLE t (a TEXT DEFAULT ';');",
            "INSERT INTO t VALUES ('x;y');",
        ]
        with pytest.raises(ValueError, match="incomplete"):
            list(split_statements("CREATE TABLE t (a TEXT)\n-- no semicolon\n"))


class TestPostgresMigrations:
    """PostgreSQL."""

    def test_every_migration_gives_the_canonical_schema(self, pg_server: PostgresServer) -> None:
        """The migrated database and one built from ``schema_postgres.sql`` are the same."""
        with scratch_database(pg_server, "strongroom_migrated") as migrated_conninfo:
            with PostgresDatabase.from_url(migrated_conninfo, min_size=0) as migrated:
                applied = migrated.migrate()
                assert migrated.migrate() == []
            with psycopg.connect(migrated_conninfo) as connection:
                from_migrations = postgres_schema(connection)
                recorded = connection.execute("SELECT version, name FROM schema_migrations")
                assert recorded.fetchall() == [(m.version, m.name) for m in applied]
        assert [m.version for m in applied] == [m.version for m in migrations_for(Dialect.POSTGRES)]
        with (
            scratch_database(pg_server, "strongroom_canonical") as canonical_conninfo,
            psycopg.connect(canonical_conninfo, autocommit=True) as connection,
        ):
            connection.execute(canonical_schema(Dialect.POSTGRES).encode())
            from_canonical = postgres_schema(connection)
        assert from_migrations == from_canonical
        assert len(from_canonical["columns"]) > 50

    def test_concurrent_migrators_apply_each_migration_once(
        self, pg_server: PostgresServer
    ) -> None:
        """The advisory lock lets one migrator apply; the others find nothing to do."""
        with scratch_database(pg_server, "strongroom_race") as conninfo:

            def migrate() -> int:
                with PostgresDatabase.from_url(conninfo, min_size=0) as database:
                    return len(database.migrate())

            applied = _concurrently(6, migrate)
        assert sum(applied) == len(migrations_for(Dialect.POSTGRES))


class TestMigrationFiles:
    """The files themselves."""

    def test_both_dialects_have_the_same_migrations(self) -> None:
        """Every schema change is made for SQLite and PostgreSQL alike."""
        names = {d: [(m.version, m.name) for m in migrations_for(d)] for d in Dialect}
        assert names[Dialect.SQLITE] == names[Dialect.POSTGRES]

    @pytest.mark.parametrize(
        "files",
        [
            ["0001_initial.sql", "0001_twice.sql"],
            ["0001_initial.sql", "2_short.sql"],
            ["0002_no_first.sql"],
        ],
    )
    def test_misnamed_or_gapped_files_are_refused(self, tmp_path: Path, files: list[str]) -> None:
        """Files must be NNNN_name.sql, numbered from 1, each number once."""
        for name in files:
            (tmp_path / name).write_text("SELECT 1;")
        with pytest.raises(MigrationFileError):
            read_migrations(tmp_path)

    def test_a_gap_is_allowed(self, tmp_path: Path) -> None:
        """Numbers reserved by a branch not merged yet leave a gap; it is no error."""
        for name in ("0001_initial.sql", "0003_later.sql"):
            (tmp_path / name).write_text("SELECT 1;")
        assert [m.version for m in read_migrations(tmp_path)] == [1, 3]


def _concurrently(count: int, work: Callable[[], int]) -> list[int]:
    barrier = threading.Barrier(count)
    results: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        try:
            results.append(work())
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    return results
