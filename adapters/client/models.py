"""The API's answers as typed, frozen attrs classes (structured by ``converter``).

Field names follow the wire. Unknown fields in an answer are ignored, so a newer server
does not break an older client. Values the API sends as strings stay strings where the
set may grow (states, kinds, permission slugs); ids are ``UUID``, timestamps ``datetime``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar
from uuid import UUID

import attrs

T = TypeVar("T")

__all__ = [
    "FINISHED_RUN_STATES",
    "AccessToken",
    "Actor",
    "ApiKey",
    "ApiKeyWithToken",
    "Artifact",
    "AuditEvent",
    "AuthorizationServerMetadata",
    "Backup",
    "Claim",
    "CliConfig",
    "Credentials",
    "CustomerS3Destination",
    "Destination",
    "DeviceAuthorization",
    "Download",
    "Health",
    "Heartbeat",
    "Invitation",
    "Me",
    "Member",
    "MemberWorkspace",
    "Membership",
    "MultipartUpload",
    "Page",
    "Permission",
    "PostgresCredentials",
    "PostgresSource",
    "Principal",
    "Progress",
    "ProgressReport",
    "Quota",
    "Readiness",
    "ReadinessChecks",
    "Retention",
    "Role",
    "Run",
    "S3Credentials",
    "S3Source",
    "Schedule",
    "ServiceDestination",
    "Session",
    "SignupResult",
    "SingleUpload",
    "Source",
    "Stored",
    "Target",
    "UploadPart",
    "UploadPlan",
    "User",
    "Worker",
    "WorkerWithToken",
    "Workspace",
]


@attrs.frozen
class Page(Generic[T]):
    """One page of a list: its items and the cursor of the next page (``None``: the last)."""

    data: list[T]
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


# -- service ---------------------------------------------------------------------------


@attrs.frozen
class Health:
    """``GET /healthz``: the process answers."""

    status: str


@attrs.frozen
class ReadinessChecks:
    """Each dependency's state."""

    database: str
    storage: str


@attrs.frozen
class Readiness:
    """``GET /readyz``: ``ok`` when the database and storage answer."""

    status: str
    checks: ReadinessChecks


@attrs.frozen
class Permission:
    """One permission of the catalog."""

    slug: str
    description: str


# -- identity --------------------------------------------------------------------------


@attrs.frozen
class User:
    """A person."""

    id: UUID
    email: str
    name: str


@attrs.frozen
class Principal:
    """Who a credential belongs to: ``user``, ``api_key`` or ``worker``."""

    type: str
    id: UUID


@attrs.frozen
class Me:
    """``GET /v1/me``: the caller, its workspace and permissions there."""

    principal: Principal
    workspace_id: UUID | None
    permissions: list[str]
    user: User | None = None


@attrs.frozen
class Session:
    """A session token (``bks_``), shown once, and whom it belongs to."""

    token: str = attrs.field(repr=False)
    expires_at: datetime
    user: User
    workspace_id: UUID | None


@attrs.frozen
class CliConfig:
    """``GET /v1/auth/cli/config``: where a command-line client signs in."""

    issuer: str
    client_id: str
    device_authorization_endpoint: str
    token_endpoint: str
    scopes: list[str]
    authorization_endpoint: str | None = None


@attrs.frozen
class AuthorizationServerMetadata:
    """RFC 8414 metadata of the built-in identity provider."""

    issuer: str
    device_authorization_endpoint: str
    token_endpoint: str
    grant_types_supported: list[str]
    response_types_supported: list[str] = attrs.field(factory=list)
    token_endpoint_auth_methods_supported: list[str] = attrs.field(factory=list)
    scopes_supported: list[str] = attrs.field(factory=list)
    service_documentation: str | None = None
    authorization_endpoint: str | None = None


@attrs.frozen
class DeviceAuthorization:
    """RFC 8628 device authorization: the code a person approves and how to poll."""

    device_code: str = attrs.field(repr=False)
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: int
    interval: int


@attrs.frozen
class AccessToken:
    """An identity provider access token, to exchange at ``create_session``."""

    access_token: str = attrs.field(repr=False)
    token_type: str
    expires_in: int


@attrs.frozen
class SignupResult:
    """A built-in provider account just created."""

    user_id: UUID
    email: str


# -- workspaces ------------------------------------------------------------------------


@attrs.frozen
class Workspace:
    """A workspace."""

    id: UUID
    name: str
    idp_org_id: str
    created_at: datetime
    updated_at: datetime


@attrs.frozen
class MemberWorkspace:
    """A workspace the caller belongs to, with the caller's role there."""

    id: UUID
    name: str
    idp_org_id: str
    role: str


@attrs.frozen
class Quota:
    """One limit of a workspace (0: unlimited) and its usage."""

    resource: str
    limit: int
    usage: int


@attrs.frozen
class Actor:
    """Who did something: ``user``, ``api_key``, ``worker`` or ``system`` (no id)."""

    type: str
    id: UUID | None


@attrs.frozen
class Target:
    """What an audit event is about."""

    type: str
    id: str | None


@attrs.frozen
class AuditEvent:
    """One entry of a workspace's audit list."""

    id: UUID
    occurred_at: datetime
    actor: Actor
    action: str
    target: Target
    request_id: str | None
    outcome: str
    changes: dict[str, Any] | None


@attrs.frozen
class Member:
    """A person's membership of a workspace."""

    user_id: UUID
    email: str
    name: str
    role: str
    joined_at: datetime


@attrs.frozen
class Membership:
    """An accepted invitation."""

    workspace_id: UUID
    user_id: UUID
    role: str
    joined_at: datetime


@attrs.frozen
class Role:
    """A role: built-in (immutable) or custom."""

    slug: str
    name: str
    permissions: list[str]
    builtin: bool


@attrs.frozen
class Invitation:
    """An invitation to join a workspace."""

    id: UUID
    email: str
    role: str
    state: str
    expires_at: datetime
    created_at: datetime


@attrs.frozen
class ApiKey:
    """An API key (its token is shown only at creation)."""

    id: UUID
    name: str
    permissions: list[str]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None


@attrs.frozen
class ApiKeyWithToken(ApiKey):
    """An API key just created, with its ``bkk_`` token."""

    token: str = attrs.field(kw_only=True, repr=False)


@attrs.frozen
class Worker:
    """A worker credential of a workspace (its token is shown only at creation/rotation)."""

    id: UUID
    name: str
    created_at: datetime
    last_seen_at: datetime | None


@attrs.frozen
class WorkerWithToken(Worker):
    """A worker just created or rotated, with its ``bkw_`` token."""

    token: str = attrs.field(kw_only=True, repr=False)


# -- backups ---------------------------------------------------------------------------


@attrs.frozen
class S3Source:
    """An S3 bucket (and prefix) a cloud backup copies."""

    endpoint: str
    bucket: str
    prefix: str | None = None
    type: Literal["s3"] = "s3"


@attrs.frozen
class PostgresSource:
    """A PostgreSQL database a cloud backup dumps."""

    host: str
    port: int
    database: str
    type: Literal["postgres"] = "postgres"


@attrs.frozen
class S3Credentials:
    """Credentials of an S3 source or customer bucket (write-only)."""

    access_key_id: str
    secret_access_key: str = attrs.field(repr=False)


@attrs.frozen
class PostgresCredentials:
    """Credentials of a PostgreSQL source (write-only)."""

    username: str
    password: str = attrs.field(repr=False)


@attrs.frozen
class Schedule:
    """A cron expression evaluated in an IANA timezone."""

    cron: str
    timezone: str = "UTC"


@attrs.frozen
class Retention:
    """How long artifacts live (``expire_after``) and stay undeletable (``lock_for``)."""

    expire_after: str
    lock_for: str = "PT0S"


@attrs.frozen
class ServiceDestination:
    """Artifacts go to the service's own storage."""

    type: Literal["service"] = "service"


@attrs.frozen
class CustomerS3Destination:
    """Artifacts go to the customer's bucket."""

    endpoint: str
    bucket: str
    prefix: str | None = None
    type: Literal["customer_s3"] = "customer_s3"


Source = S3Source | PostgresSource
Credentials = S3Credentials | PostgresCredentials
Destination = ServiceDestination | CustomerS3Destination


@attrs.frozen
class Backup:
    """A backup definition."""

    id: UUID
    workspace_id: UUID
    name: str
    kind: str
    state: str
    paused: bool
    source: Source | None
    has_credentials: bool
    schedule: Schedule | None
    worker_id: UUID | None
    retention: Retention | None
    destination: Destination
    next_run_at: datetime | None
    created_at: datetime
    updated_at: datetime


# -- runs and artifacts ----------------------------------------------------------------


@attrs.frozen
class Progress:
    """A running run's last reported progress."""

    bytes_done: int
    bytes_total: int | None
    message: str | None
    updated_at: datetime


@attrs.frozen
class Run:
    """One execution of a backup."""

    id: UUID
    backup_id: UUID
    workspace_id: UUID
    state: str
    trigger: str
    worker_id: UUID | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    artifact_count: int
    bytes: int
    error: str | None
    attempt: int = 1
    lease_expires_at: datetime | None = None
    cancel_requested: bool = False
    progress: Progress | None = None

    @property
    def finished(self) -> bool:
        """Whether the run reached a final state."""
        return self.state in FINISHED_RUN_STATES


FINISHED_RUN_STATES = frozenset({"succeeded", "failed", "cancelled"})


@attrs.frozen
class Claim:
    """A run a worker claimed, its backup and its lease."""

    run: Run
    backup: Backup
    lease_expires_at: datetime


@attrs.frozen
class Heartbeat:
    """A heartbeat's answer: the new lease and whether the run should stop."""

    lease_expires_at: datetime | None
    cancel_requested: bool


@attrs.frozen
class ProgressReport:
    """Progress a worker reports with a heartbeat."""

    bytes_done: int
    bytes_total: int | None = None
    message: str | None = None


@attrs.frozen
class SingleUpload:
    """Upload an artifact in one ``PUT`` to ``url`` with ``headers``."""

    artifact_id: UUID
    method: str
    url: str
    headers: dict[str, str]
    expires_at: datetime


@attrs.frozen
class UploadPart:
    """One part of a multipart upload: ``PUT`` ``size`` bytes to ``url``."""

    number: int
    size: int
    method: str
    url: str


@attrs.frozen
class MultipartUpload:
    """Upload an artifact in parts; ``stored_parts`` are already stored (resume)."""

    artifact_id: UUID
    upload_id: str
    part_size: int
    parts: list[UploadPart]
    stored_parts: list[int]
    expires_at: datetime


UploadPlan = SingleUpload | MultipartUpload


@attrs.frozen
class Artifact:
    """A file a run stored."""

    id: UUID
    run_id: UUID
    backup_id: UUID
    name: str
    size: int
    sha256: str
    state: str
    storage: str
    created_at: datetime
    expires_at: datetime | None
    locked_until: datetime | None
    verification: str | None = None
    verified_at: datetime | None = None


@attrs.frozen
class Download:
    """A presigned download of an artifact."""

    method: str
    url: str
    expires_at: datetime


@attrs.frozen
class Stored:
    """What storage answered to an upload (``etag`` identifies a stored part)."""

    status: int
    etag: str | None
