"""The permission catalog and the built-in roles of contract section 3."""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from types import MappingProxyType

import attrs

from strongroom.domain.errors import InvalidRequestError, ValidationFailedError


class Permission(StrEnum):
    """Every permission slug a role or an API key can hold."""

    BACKUPS_READ = "backups:read"
    BACKUPS_WRITE = "backups:write"
    BACKUPS_TRIGGER = "backups:trigger"
    RUNS_READ = "runs:read"
    ARTIFACTS_UPLOAD = "artifacts:upload"
    ARTIFACTS_CONFIRM = "artifacts:confirm"
    ARTIFACTS_READ = "artifacts:read"
    ARTIFACTS_DOWNLOAD = "artifacts:download"
    ARTIFACTS_DELETE = "artifacts:delete"
    ARTIFACTS_HOLD = "artifacts:hold"
    WORKSPACES_READ = "workspaces:read"
    WORKSPACES_WRITE = "workspaces:write"
    MEMBERS_READ = "members:read"
    MEMBERS_WRITE = "members:write"
    INVITATIONS_READ = "invitations:read"
    INVITATIONS_WRITE = "invitations:write"
    ROLES_READ = "roles:read"
    ROLES_WRITE = "roles:write"
    WORKERS_READ = "workers:read"
    WORKERS_WRITE = "workers:write"
    API_KEYS_READ = "api_keys:read"
    API_KEYS_WRITE = "api_keys:write"
    AUDIT_READ = "audit:read"


DESCRIPTIONS: MappingProxyType[Permission, str] = MappingProxyType(
    {
        Permission.BACKUPS_READ: "Read backups and their configuration",
        Permission.BACKUPS_WRITE: "Create, change, pause, resume, trigger and delete backups",
        Permission.BACKUPS_TRIGGER: "Trigger runs of backups",
        Permission.RUNS_READ: "Read runs",
        Permission.ARTIFACTS_UPLOAD: "Start runs and obtain upload URLs for artifacts",
        Permission.ARTIFACTS_CONFIRM: "Confirm uploaded artifacts of a run",
        Permission.ARTIFACTS_READ: "List artifacts",
        Permission.ARTIFACTS_DOWNLOAD: "Obtain download URLs for artifacts",
        Permission.ARTIFACTS_DELETE: "Delete artifacts outside their lock window",
        Permission.ARTIFACTS_HOLD: "Place and release legal holds on artifacts",
        Permission.WORKSPACES_READ: "Read the workspace and its quotas",
        Permission.WORKSPACES_WRITE: "Rename and delete the workspace",
        Permission.MEMBERS_READ: "List members",
        Permission.MEMBERS_WRITE: "Change members' roles and remove members",
        Permission.INVITATIONS_READ: "List invitations",
        Permission.INVITATIONS_WRITE: "Invite people",
        Permission.ROLES_READ: "Read roles",
        Permission.ROLES_WRITE: "Create, change and delete custom roles",
        Permission.WORKERS_READ: "Read workers",
        Permission.WORKERS_WRITE: "Create, rotate and delete workers",
        Permission.API_KEYS_READ: "Read API keys",
        Permission.API_KEYS_WRITE: "Create and revoke API keys",
        Permission.AUDIT_READ: "Read the audit trail",
    }
)

ALL_PERMISSIONS: frozenset[Permission] = frozenset(Permission)


def parse_permissions(slugs: Sequence[str]) -> frozenset[Permission]:
    """Turn slugs into permissions; unknown slugs raise ``ValueError`` naming them."""
    unknown = sorted(slug for slug in slugs if slug not in Permission._value2member_map_)
    if unknown:
        raise ValueError(", ".join(unknown))
    return frozenset(Permission(slug) for slug in slugs)


_SLUG_LIKE = re.compile(r"[a-z_]{1,20}:[a-z_]{1,20}")


def requested_permissions(slugs: Sequence[str]) -> frozenset[Permission]:
    """The permissions a request names (an API key's, a custom role's); slugs outside the
    catalog are ``validation_failed``, named only when every one of them looks like a slug
    (arbitrary client text is never echoed)."""
    try:
        return parse_permissions(slugs)
    except ValueError:
        unknown = sorted({slug for slug in slugs if slug not in Permission._value2member_map_})
        shown = [slug for slug in unknown if _SLUG_LIKE.fullmatch(slug)]
        detail = f": {', '.join(shown)}" if len(shown) == len(unknown) else ""
        raise ValidationFailedError(f"unknown permissions{detail}") from None


@attrs.frozen
class Role:
    """A named set of permissions; built-in roles cannot be changed or deleted."""

    slug: str
    name: str
    permissions: frozenset[Permission]
    builtin: bool = False


_MEMBER_EXCLUDED = {
    Permission.WORKSPACES_WRITE,
    Permission.MEMBERS_WRITE,
    Permission.ROLES_WRITE,
    Permission.API_KEYS_WRITE,
    Permission.ARTIFACTS_DELETE,
    Permission.ARTIFACTS_HOLD,
}

ADMIN = Role("admin", "Admin", ALL_PERMISSIONS, builtin=True)
MEMBER = Role("member", "Member", ALL_PERMISSIONS - _MEMBER_EXCLUDED, builtin=True)
VIEWER = Role(
    "viewer",
    "Viewer",
    frozenset(p for p in Permission if p.value.endswith(":read")) | {Permission.ARTIFACTS_DOWNLOAD},
    builtin=True,
)
BUILTIN_ROLES: MappingProxyType[str, Role] = MappingProxyType(
    {role.slug: role for role in (ADMIN, MEMBER, VIEWER)}
)

# What a worker credential holds, whatever its workspace grants (contract section 10).
WORKER_PERMISSIONS: frozenset[Permission] = frozenset(
    {
        Permission.BACKUPS_READ,
        Permission.RUNS_READ,
        Permission.ARTIFACTS_UPLOAD,
        Permission.ARTIFACTS_CONFIRM,
    }
)


ROLE_SLUG = re.compile(r"[a-z][a-z0-9-]{1,39}")


def is_role_slug(slug: str) -> bool:
    """Whether ``slug`` is a well-formed role slug (``^[a-z][a-z0-9-]{1,39}$``)."""
    return ROLE_SLUG.fullmatch(slug) is not None


def check_role_slug(slug: str, field: str = "slug") -> str:
    """A well-formed role slug, or ``invalid_request`` naming ``field``."""
    if not is_role_slug(slug):
        raise InvalidRequestError(f"{field} must match ^[a-z][a-z0-9-]{{1,39}}$")
    return slug
