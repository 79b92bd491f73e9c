"""What a violated constraint means, for both dialects.

Each dialect's driver errors are translated in one function of its own module
(``sqlite.py``, ``postgres.py``); both ask ``refusal`` what a constraint violation is, so
that SQLite, PostgreSQL and the in-memory adapter refuse the same things with the same
errors and messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from strongroom.adapters.sql.rows import Params
from strongroom.domain.errors import NameTakenError
from strongroom.ports.driven.repositories import IntegrityViolationError

# Unique constraints that are refusals a use case expects, by constraint name. Every other
# violated constraint is a bug: ``IntegrityViolationError``.
_REFUSALS: Mapping[str, Callable[[Params], Exception]] = {
    "backups_name_unique": lambda params: NameTakenError(
        f"a backup named {params['name']!r} already exists"
    ),
    "roles_pkey": lambda params: NameTakenError(
        f"a role with slug {params['slug']!r} already exists"
    ),
    "accounts_email_unique": lambda _params: NameTakenError(
        "an account with this email already exists"
    ),
}


def refusal(constraint: str | None, params: Params, detail: str) -> Exception:
    """The port-level error for a violated ``constraint`` of a statement run with ``params``."""
    make = _REFUSALS.get(constraint or "")
    return make(params) if make is not None else IntegrityViolationError(detail)


DATABASE_UNAVAILABLE = "the database is unavailable"
