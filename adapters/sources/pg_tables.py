"""What a PostgreSQL database holds, table by table: its rows and a checksum of them.

Recorded when a ``postgres`` source is dumped (in the dump's own snapshot) and read again
from the scratch database a restore drill made (contract 16), so the two compare. A
table's checksum is the md5 of its rows' md5s in order (``md5(string_agg(md5(t::text),
'' ORDER BY md5(t::text)))``): 32 bytes a row go through ``string_agg``, so a table of
tens of millions of rows stays under PostgreSQL's 1 GB value limit. The session settings
that shape a row's text are fixed on both sides.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from strongroom.domain.drills import TableFacts

# Settings that decide how a row prints (``t::text``): the same on both sides.
SESSION = (
    "SET TimeZone = 'UTC'",
    "SET DateStyle = 'ISO, YMD'",
    "SET IntervalStyle = 'postgres'",
    "SET extra_float_digits = 3",
    "SET bytea_output = 'hex'",
)
# The user tables a dump holds: ordinary tables outside the system schemas that no
# extension owns (partitions are tables of their own; their parents hold no rows).
TABLES = """
SELECT n.nspname, c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r'
  AND n.nspname NOT IN ('information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  AND NOT EXISTS (
    SELECT 1 FROM pg_depend d
    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
  )
ORDER BY 1, 2
"""
FACTS = (
    "SELECT count(*), coalesce(md5(string_agg(md5(t::text), '' ORDER BY md5(t::text))), '') "
    "FROM {} AS t"
)


def _query(schema: str, table: str) -> sql.Composed:
    return sql.SQL(FACTS).format(sql.Identifier(schema, table))


def table_name(schema: str, table: str) -> str:
    """How a table is named in a manifest and in a drill's findings."""
    return f"{schema}.{table}"


def read_tables(connection: Any) -> dict[str, TableFacts]:
    """Blocking: every user table's rows and checksum, on a ``psycopg.Connection``."""
    for setting in SESSION:
        connection.execute(setting)
    facts: dict[str, TableFacts] = {}
    for schema, table in connection.execute(TABLES).fetchall():
        rows, checksum = connection.execute(_query(schema, table)).fetchone()
        facts[table_name(schema, table)] = TableFacts(int(rows), str(checksum))
    return facts


async def read_tables_async(connection: Any) -> dict[str, TableFacts]:
    """``read_tables`` on a ``psycopg.AsyncConnection``."""
    for setting in SESSION:
        await connection.execute(setting)
    facts: dict[str, TableFacts] = {}
    listing = await connection.execute(TABLES)
    for schema, table in await listing.fetchall():
        found = await (await connection.execute(_query(schema, table))).fetchone()
        facts[table_name(schema, table)] = TableFacts(int(found[0]), str(found[1]))
    return facts
