"""Pages of a workspace's role list (contract section 1: every list paginates).

The list is the built-in roles in their fixed order, then the custom roles by slug in
code-point order. A role is keyed by its slug (built-in and custom slugs never clash), so
the cursor is the last slug shown and the next page holds the roles after it in that
order: keyset pagination that still works when the role a cursor names is deleted.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence

from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.permissions import BUILTIN_ROLES, Role, is_role_slug

_PREFIX = "role:"


def _order(slug: str) -> tuple[int, int, str]:
    """Built-in roles first, in their order; then custom roles by slug."""
    if slug in BUILTIN_ROLES:
        return (0, list(BUILTIN_ROLES).index(slug), "")
    return (1, 0, slug)


def encode_role_cursor(slug: str) -> str:
    """The opaque cursor naming ``slug`` as the last role of a page."""
    return base64.urlsafe_b64encode((_PREFIX + slug).encode()).decode().rstrip("=")


def decode_role_cursor(text: str) -> str:
    """The slug a cursor of the role list names; anything else is ``invalid_request``."""
    refusal = InvalidRequestError("cursor is not one this service issued")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError) as error:
        raise refusal from error
    prefix, _, slug = raw.partition(":")
    if prefix + ":" != _PREFIX or not is_role_slug(slug):
        raise refusal
    return slug


def page_of_roles(
    roles: Sequence[Role], limit: int, after: str | None
) -> tuple[list[Role], str | None]:
    """Up to ``limit`` roles in list order after the slug ``after``, and the cursor of
    the next page (``None`` on the last one)."""
    ordered = sorted(roles, key=lambda role: _order(role.slug))
    if after is not None:
        start = _order(after)
        ordered = [role for role in ordered if _order(role.slug) > start]
    shown = ordered[:limit]
    more = len(ordered) > limit
    return shown, encode_role_cursor(shown[-1].slug) if more else None
