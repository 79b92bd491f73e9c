"""The permission catalog as the documents write it out: the spec's eleven slugs, the
contract's eleven and section 15's ``artifacts:hold`` (the domain's enum and the API's
catalog are both held to it)."""

from __future__ import annotations

CATALOG = frozenset(
    {
        "backups:read",
        "backups:write",
        "backups:trigger",
        "runs:read",
        "artifacts:upload",
        "artifacts:confirm",
        "artifacts:read",
        "artifacts:download",
        "artifacts:delete",
        "artifacts:hold",
        "workspaces:read",
        "workspaces:write",
        "members:read",
        "members:write",
        "invitations:read",
        "invitations:write",
        "roles:read",
        "roles:write",
        "workers:read",
        "workers:write",
        "api_keys:read",
        "api_keys:write",
        "audit:read",
    }
)
