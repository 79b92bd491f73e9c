"""A session's grant from the ``g_*`` columns of a statement that joins the session's
look-up with what a request reads (one round trip per request)."""

from __future__ import annotations

import operator
from collections.abc import Callable

from strongroom.adapters.sql import rows
from strongroom.adapters.sql.rows import Codec, Row
from strongroom.ports.driven.repositories import (
    SessionGrant,
)


def joined_session(row: Row) -> Row:
    """The session's columns (``g_*``) of a row that joins a session with its read."""
    # keys(): iterating a sqlite3.Row yields its values, not its column names.
    return {name[2:]: row[name] for name in row.keys() if name.startswith("g_")}  # noqa: SIM118


_GRANTS_KEPT = 4096


# Decoded grants by their joined columns' values (see ``joined_grant``).
_grants: dict[tuple[object, ...], SessionGrant] = {}


_ROLE_PERMISSIONS = "g_role_permissions"


# The other ``g_*`` columns' getter, by the row's columns (one entry per statement).
_grant_columns: dict[tuple[str, ...], Callable[[Row], tuple[object, ...]]] = {}


def _grant_columns_of(row: Row) -> Callable[[Row], tuple[object, ...]]:
    """A getter of the row's ``g_*`` columns but the role's permissions, in order."""
    columns = tuple(row.keys())
    getter = _grant_columns.get(columns)
    if getter is None:
        names = [n for n in columns if n.startswith("g_") and n != _ROLE_PERMISSIONS]
        if len(names) < 2 or _ROLE_PERMISSIONS not in columns:
            raise ValueError(f"not a session's joined columns: {columns}")
        getter = _grant_columns[columns] = operator.itemgetter(*names)
    return getter


def joined_grant(row: Row, codec: Codec) -> SessionGrant:
    """``session_grant_from_row`` of a row's ``g_*`` columns, decoded once per distinct
    set of values: the grant is a pure function of them (frozen values; every column that
    a check reads, the revocation and expiry included, is part of the key), so this
    caches no decision, only the decoding (the database is asked at every request)."""
    permissions = row[_ROLE_PERMISSIONS]
    if isinstance(permissions, list):  # a PostgreSQL array (SQLite keeps JSON text)
        permissions = tuple(permissions)
    key = (type(codec), permissions, *_grant_columns_of(row)(row))
    grant = _grants.get(key)
    if grant is None:
        grant = rows.session_grant_from_row(joined_session(row), codec)
        if len(_grants) >= _GRANTS_KEPT:
            _grants.clear()
        _grants[key] = grant
    return grant
