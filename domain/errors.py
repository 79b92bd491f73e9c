"""The domain's error hierarchy: every refusal the service can give, without any HTTP in it.

Each error carries the contract's stable machine-readable ``code``; driving adapters map
codes to their own transport (the HTTP adapter maps them to status codes).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

# A field name a client sent is shown cut to this many characters (contract 13), and a
# message lists at most this many of them, so a huge or numerous name is never echoed whole.
MAX_SHOWN_FIELD_NAME = 100
MAX_SHOWN_FIELDS = 10


class StrongroomError(Exception):
    """Base of every error the service reports to a caller."""

    code: ClassVar[str] = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequestError(StrongroomError):
    """The request is malformed: bad JSON, bad id, unknown field, value out of range."""

    code = "invalid_request"


def shown_field(name: str) -> str:
    """A field name a client sent, as an error message shows it: its first 100 characters,
    ``...`` marking a cut."""
    if len(name) <= MAX_SHOWN_FIELD_NAME:
        return name
    return name[:MAX_SHOWN_FIELD_NAME] + "..."


class UnknownFieldError(InvalidRequestError):
    """A body holds fields the request does not take; the message names them (each cut to
    100 characters, at most ten of them, with ``prefix`` before each: ``source.``)."""

    def __init__(self, names: Iterable[str], *, prefix: str = "", note: str = "") -> None:
        ordered = sorted(names)
        shown = [prefix + shown_field(name) for name in ordered[:MAX_SHOWN_FIELDS]]
        more = len(ordered) - len(shown)
        listed = ", ".join(shown) + (f" (and {more} more)" if more else "")
        super().__init__(f"unknown field: {listed}{note}")
        self.fields = tuple(ordered)


class UnauthenticatedError(StrongroomError):
    """No credential, or one that is invalid, expired or revoked."""

    code = "unauthenticated"

    def __init__(self, message: str = "missing, invalid, expired or revoked credential") -> None:
        super().__init__(message)


class ForbiddenError(StrongroomError):
    """Authenticated, but not permitted to do this."""

    code = "forbidden"


class MissingPermissionError(ForbiddenError):
    """The credential lacks the permission the operation needs."""

    def __init__(self, permission: str) -> None:
        super().__init__(f"missing permission {permission}")
        self.permission = permission


class NoWorkspaceSelectedError(ForbiddenError):
    """A credential scoped to no workspace called a workspace-scoped operation."""

    def __init__(self) -> None:
        super().__init__("select a workspace first")


class WrongWorkspaceError(StrongroomError):
    """The caller is a member of the named workspace but its credential is scoped elsewhere."""

    code = "wrong_workspace"

    def __init__(self) -> None:
        super().__init__("this credential is scoped to another workspace; switch workspace first")


class NotFoundError(StrongroomError):
    """No such object in the caller's workspace (or it belongs to another one)."""

    code = "not_found"

    def __init__(self, what: str = "object") -> None:
        super().__init__(f"{what} not found")


class ConflictError(StrongroomError):
    """The request conflicts with the current state of the object."""

    code = "conflict"


class QuotaExceededError(ConflictError):
    """A limit has been reached; nothing was created."""

    code = "quota_exceeded"

    def __init__(self, resource: str, limit: int) -> None:
        super().__init__(f"quota exceeded: {resource} is limited to {limit}")
        self.resource = resource
        self.limit = limit


class RetentionImmutableError(ConflictError):
    """A different retention policy was sent after one was set."""

    code = "retention_immutable"

    def __init__(self) -> None:
        super().__init__("retention policy is write-once and is already set to another value")


class NameTakenError(ConflictError):
    """The name (or slug) is already used in this workspace."""

    code = "name_taken"


class InvalidStateError(ConflictError):
    """The object's state forbids the action."""

    code = "invalid_state"


class BillingRestrictedError(ConflictError):
    """The workspace's billing state refuses this write."""

    code = "billing_restricted"


class LastAdminError(ConflictError):
    """The operation would leave the workspace without an admin."""

    code = "last_admin"


class IdempotencyConflictError(ConflictError):
    """An Idempotency-Key was reused with a different request."""

    code = "idempotency_conflict"

    def __init__(self) -> None:
        super().__init__("this Idempotency-Key was already used with a different request")


class ArtifactLockedError(ConflictError):
    """An artifact is inside its lock window."""

    code = "artifact_locked"


class ArtifactHeldError(ConflictError):
    """An artifact is under a legal hold."""

    code = "artifact_held"


class ArtifactReferencedError(ConflictError):
    """A live snapshot references the artifact."""

    code = "artifact_referenced"


class LastArtifactError(ConflictError):
    """The artifact is the only one left for its backup."""

    code = "last_artifact"


class NotInOurStorageError(ConflictError):
    """The artifact was delivered only to the customer's own storage."""

    code = "not_in_our_storage"


class ArtifactMissingError(ConflictError):
    """An announced artifact is absent or different in storage."""

    code = "artifact_missing"


class ValidationFailedError(StrongroomError):
    """A well-formed value that the rules refuse (kind rules, unknown permissions, ...)."""

    code = "validation_failed"


class LockExceedsExpiryError(StrongroomError):
    """A retention policy whose lock is longer than its expiry."""

    code = "lock_exceeds_expiry"

    def __init__(self) -> None:
        super().__init__("lock_for must not be longer than expire_after")


class PreconditionFailedError(StrongroomError):
    """An ``If-Match`` precondition that the object's current version does not meet: the
    client read it before a change it has not seen, so nothing is changed."""

    code = "precondition_failed"

    def __init__(self, kind: str) -> None:
        super().__init__(f"the {kind} has changed since it was read (If-Match does not match)")


class RateLimitedError(StrongroomError):
    """Too many failed attempts; retry after ``retry_after`` seconds."""

    code = "rate_limited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


class UpstreamUnavailableError(StrongroomError):
    """A dependency (database, identity provider, billing, storage) failed; usually transient."""

    code = "upstream_unavailable"
