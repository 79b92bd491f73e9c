"""Per-workspace and per-user limits; a limit of 0 means unlimited."""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType

import attrs

from strongroom.domain.errors import QuotaExceededError


class QuotaResource(StrEnum):
    """Every per-workspace quota resource, in the order the quotas endpoint lists them."""

    BACKUPS_PER_WORKSPACE = "backups_per_workspace"
    WORKERS_PER_WORKSPACE = "workers_per_workspace"
    API_KEYS_PER_WORKSPACE = "api_keys_per_workspace"
    MEMBERS_PER_WORKSPACE = "members_per_workspace"
    STORAGE_BYTES = "storage_bytes"


DEFAULT_LIMITS: MappingProxyType[QuotaResource, int] = MappingProxyType(
    {
        QuotaResource.BACKUPS_PER_WORKSPACE: 100,
        QuotaResource.WORKERS_PER_WORKSPACE: 10,
        QuotaResource.API_KEYS_PER_WORKSPACE: 25,
        QuotaResource.MEMBERS_PER_WORKSPACE: 0,
        QuotaResource.STORAGE_BYTES: 0,
    }
)

WORKSPACES_PER_USER_RESOURCE = "workspaces_per_user"
WORKSPACES_PER_USER = 5


@attrs.frozen
class Quota:
    """One resource's effective limit and current usage."""

    resource: QuotaResource
    limit: int
    usage: int


def ensure_room(resource: str, limit: int, usage: int, adding: int = 1) -> None:
    """Raise ``QuotaExceededError`` when adding ``adding`` to ``usage`` would pass ``limit``."""
    if limit and usage + adding > limit:
        raise QuotaExceededError(resource, limit)
