"""Every request and response shape of the API, once: attrs models with their descriptions.

A model decorated ``@view_of(D)`` is how the domain class ``D`` appears on the wire: it is
presented field by field from a ``D`` (``get`` reads another attribute), and a nested
request value of type ``D`` is structured through it. Request models are closed (unknown
fields are refused); response schemas stay open. The OpenAPI components are generated
from these classes (``openapi.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar, Literal
from uuid import UUID

import attrs

from strongroom.adapters.http.wire import (
    Email,
    Endpoint,
    Name,
    NonEmpty,
    Port,
    RoleSlug,
    Uri,
    configure_views,
    meta,
    view_of,
    write_only,
)
from strongroom.adapters.identity import builtin
from strongroom.domain import audit, backups, principals, workspaces
from strongroom.domain import runs as domain_runs
from strongroom.domain.artifacts import (
    MAX_ARTIFACT_NAME,
    MAX_ARTIFACT_SIZE,
    ArtifactState,
    ArtifactStorage,
    Verification,
)
from strongroom.domain.artifacts import Artifact as DomainArtifact
from strongroom.domain.audit import Outcome
from strongroom.domain.backups import (
    UNSET,
    BackupChanges,
    BackupKind,
    BackupState,
    Destination,
    RetentionPolicy,
    Schedule,
    Source,
    Unset,
)
from strongroom.domain.durations import Duration
from strongroom.domain.invitations import Invitation as DomainInvitation
from strongroom.domain.invitations import InvitationState
from strongroom.domain.machines import ApiKey as DomainApiKey
from strongroom.domain.machines import Worker as DomainWorker
from strongroom.domain.permissions import Permission
from strongroom.domain.permissions import Role as DomainRole
from strongroom.domain.principals import PrincipalType
from strongroom.domain.quotas import DEFAULT_LIMITS, QuotaResource
from strongroom.domain.quotas import Quota as DomainQuota
from strongroom.domain.restores import MAX_RESTORE_ERROR, RestoreState
from strongroom.domain.restores import Restore as DomainRestore
from strongroom.domain.users import User as DomainUser
from strongroom.ports.driven.identity import CliConfig as DomainCliConfig
from strongroom.ports.driving.claims import ClaimedRun
from strongroom.ports.driving.members import UNSET as KEEP
from strongroom.ports.driving.members import _Unset as Keep
from strongroom.ports.driving.sessions import IssuedSession

TIMESTAMP = "RFC 3339 timestamp in UTC with a `Z` suffix."
PRESIGNED = "Presigned; bound to this method and object."
ENDPOINT = (
    "An http(s) URL such as `https://host:port` (port 1..65535, IPv6 literals in brackets, "
    "no user part)."
)
SEEN = "Recorded at most once a minute."
SHA256_EXAMPLE = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
Check = Literal["ok", "unavailable"]
DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
AUTHORIZATION_CODE_GRANT = "authorization_code"

# --------------------------------------------------------------------------------------
# Errors and the system


@attrs.frozen
class ErrorBody:
    """What went wrong."""

    code: str
    """Stable machine-readable code; branch on it, never on `message`. Every code and its status is
    listed under `x-error-codes`."""
    message: str
    """Human-readable; its wording may change."""
    request_id: str
    """Equals the response's `X-Request-ID` header (`req_<uuid>` when generated)."""
    detail: str | None = attrs.field(default=None, metadata=meta(optional=True))
    """Only when the server does not run in production: the underlying failure of a 500 or 502."""


@attrs.frozen
class Error:
    """The error envelope of every failure (except `POST /idp/token`)."""

    error: ErrorBody


@attrs.frozen
class OAuthError:
    """OAuth's own error format, of `POST /idp/token` and `POST /idp/device/code`."""

    error: Literal[
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unsupported_grant_type",
        "authorization_pending",
        "slow_down",
        "expired_token",
        "access_denied",
    ]
    """RFC 6749 / RFC 8628 error code."""
    error_description: str
    """Human-readable explanation."""


@attrs.frozen
class Health:
    """The process is running."""

    status: Literal["ok"] = "ok"


@attrs.frozen
class ReadinessChecks:
    """Each dependency's answer."""

    database: Check
    storage: Check


@attrs.frozen
class Readiness:
    """Whether the database and object storage answer."""

    status: Check
    checks: ReadinessChecks


@attrs.frozen
class StoredResult:
    """An object stored through a presigned URL."""

    status: Literal["stored"] = "stored"


@attrs.frozen
class EmptyBody:
    """No body, or `{}`."""


# --------------------------------------------------------------------------------------
# Access


@attrs.frozen
class PermissionEntry:
    """A permission of the catalog."""

    __schema_name__: ClassVar[str] = "Permission"
    slug: Permission
    description: str


@view_of(DomainUser)
@attrs.frozen
class User:
    """A person."""

    id: UUID
    email: Email
    name: str


@attrs.frozen
class Principal:
    """Who calls."""

    type: Literal["user", "api_key", "worker"]
    id: UUID


@attrs.frozen
class Me:
    """The caller."""

    principal: Principal = attrs.field(metadata=meta(get="actor"))
    user: User | None = attrs.field(metadata=meta(optional=True))
    """Present only when the caller is a person."""
    workspace_id: UUID | None
    """The workspace the credential is scoped to."""
    permissions: list[Permission] = attrs.field(
        metadata=meta(get=lambda caller: sorted(caller.permissions))
    )
    """Sorted; empty when no workspace is selected."""


@view_of(DomainCliConfig)
@attrs.frozen
class CliConfig:
    """Absolute URLs built from `STRONGROOM_PUBLIC_URL`, else from the request's own scheme
    and host."""

    issuer: Uri
    client_id: str = attrs.field(metadata=meta(schema={"examples": [builtin.CLIENT_ID]}))
    device_authorization_endpoint: Uri
    token_endpoint: Uri
    scopes: list[str]
    authorization_endpoint: Uri | None = None
    """The authorization-code grant with PKCE, for browsers (the dashboard's client is
    `strongroom-web` with the built-in provider); null when the provider has none."""


@attrs.frozen
class SwitchWorkspace:
    """`POST /v1/auth/switch`."""

    workspace_id: UUID


@view_of(IssuedSession)
@attrs.frozen
class Session:
    """A session and its token."""

    __location__: ClassVar[str] = "/v1/me"

    __secret__: ClassVar[bool] = True  # never stored by a cache (conventions.no_store)

    token: str
    """The session token (`bks_...`), the bearer for `/v1`; shown only here."""
    expires_at: datetime
    user: User
    workspace_id: UUID | None
    """The workspace the session is scoped to; null after sign-in."""


# --------------------------------------------------------------------------------------
# Workspaces, members, roles, invitations


@attrs.frozen
class WorkspaceCreate:
    """`POST /v1/workspaces`."""

    name: Name


@attrs.frozen
class WorkspaceUpdate(WorkspaceCreate):
    """`PATCH /v1/workspaces/{wid}`."""


@view_of(workspaces.Workspace)
@attrs.frozen
class Workspace:
    """A single workspace."""

    __location__: ClassVar[str] = "/v1/workspaces/{id}"

    id: UUID
    name: str
    idp_org_id: str
    """The workspace's organization at the identity provider."""
    created_at: datetime
    updated_at: datetime


@view_of(workspaces.MemberWorkspace)
@attrs.frozen
class MemberWorkspace:
    """A workspace in the list of the caller's memberships."""

    id: UUID = attrs.field(metadata=meta(get="workspace.id"))
    name: str = attrs.field(metadata=meta(get="workspace.name"))
    idp_org_id: str = attrs.field(metadata=meta(get="workspace.idp_org_id"))
    role: str
    """The caller's role in the workspace, e.g. `admin`."""


@view_of(DomainQuota)
@attrs.frozen
class Quota:
    """A quota resource's effective limit and usage."""

    resource: QuotaResource
    limit: int = attrs.field(
        metadata=meta(
            "The effective limit; 0 means unlimited. Defaults: "
            + ", ".join(f"`{resource}` {limit}" for resource, limit in DEFAULT_LIMITS.items())
            + ".",
            schema={"minimum": 0},
        )
    )
    usage: int = attrs.field(metadata=meta(schema={"minimum": 0}))


@view_of(principals.Actor)
@attrs.frozen
class Actor:
    """Who acted."""

    type: PrincipalType
    id: UUID | None
    """Null for the `system` actor."""


@attrs.frozen
class Target:
    """What was acted on."""

    type: str = attrs.field(metadata=meta(get="target_type"))
    """The resource, e.g. `backup`."""
    id: str | None = attrs.field(metadata=meta(get="target_id"))


@view_of(audit.Change)
@attrs.frozen
class Change:
    """A field's value before and after."""

    before: Any = attrs.field(metadata=meta(rename="from"))
    after: Any = attrs.field(metadata=meta(rename="to"))


@view_of(audit.AuditEvent)
@attrs.frozen
class AuditEvent:
    """A mutation, or a mutation refused for a missing permission."""

    id: UUID
    occurred_at: datetime
    actor: Actor
    action: str
    """`<resource>.<verb>`, e.g. `workspace.create`, `backup.update`."""
    target: Target = attrs.field(metadata=meta(get=lambda event: event))
    request_id: str | None
    outcome: Outcome
    changes: dict[str, Change] | None
    """`{field: {from, to}}`, never a secret."""


@view_of(workspaces.Member)
@attrs.frozen
class Member:
    """A member of the workspace; `user_id` is the `{id}` of its routes."""

    user_id: UUID
    email: Email
    name: str
    role: RoleSlug
    joined_at: datetime


@attrs.frozen
class MemberUpdate:
    """`PATCH /v1/workspaces/{wid}/members/{id}`."""

    role: RoleSlug


@view_of(DomainRole)
@attrs.frozen
class Role:
    """A built-in or custom role."""

    __location__: ClassVar[str] = "/v1/workspaces/{wid}/roles/{slug}"

    slug: RoleSlug
    name: str
    permissions: frozenset[Permission]
    builtin: bool
    """Built-in roles (`admin`, `member`, `viewer`) are immutable."""


PERMISSIONS = {"type": "array", "items": {"$ref": "#/components/schemas/PermissionSlug"}}
MINE = "A subset of the caller's own permissions (more: 403)"


@attrs.frozen
class RoleCreate:
    """`POST /v1/workspaces/{wid}/roles`."""

    slug: RoleSlug
    name: Name
    permissions: list[str] = attrs.field(metadata=meta(f"{MINE}.", schema=PERMISSIONS))


@attrs.frozen
class RoleUpdate:
    """`PATCH /v1/workspaces/{wid}/roles/{slug}`: every field is optional."""

    name: Name | Keep = KEEP
    permissions: list[str] | Keep = attrs.field(default=KEEP, metadata=meta(schema=PERMISSIONS))


@attrs.frozen
class InvitationCreate:
    """`POST /v1/workspaces/{wid}/invitations`."""

    email: Email
    role: RoleSlug


@view_of(DomainInvitation)
@attrs.frozen
class Invitation:
    """An invitation to join a workspace."""

    id: UUID
    email: Email
    role: RoleSlug
    state: InvitationState
    """`expired` once `expires_at` has passed unused."""
    expires_at: datetime
    """Seven days after creation."""
    created_at: datetime


@view_of(workspaces.Membership)
@attrs.frozen
class Membership:
    """The membership an accepted invitation made."""

    workspace_id: UUID
    user_id: UUID
    role: RoleSlug
    joined_at: datetime


# --------------------------------------------------------------------------------------
# API keys and workers


@attrs.frozen
class ApiKeyCreate:
    """`POST /v1/api-keys`."""

    name: Name
    permissions: list[str] = attrs.field(
        metadata=meta(
            f"{MINE}; slugs outside the catalog: 422 `validation_failed`.", schema=PERMISSIONS
        )
    )
    expires_at: datetime | None = None
    """Optional; after it the key answers 401. Must be in the future."""


@view_of(DomainApiKey)
@attrs.frozen
class ApiKey:
    """An API key; its token is never shown again after creation."""

    __location__: ClassVar[str] = "/v1/api-keys/{id}"

    id: UUID
    name: str
    permissions: frozenset[Permission]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None = attrs.field(metadata=meta(SEEN))


@attrs.frozen
class ApiKeyWithToken(ApiKey):
    """A new API key with its token."""

    __secret__: ClassVar[bool] = True  # never stored by a cache (conventions.no_store)

    token: str = ""
    """The key's bearer token (`bkk_...`), shown only here."""


@attrs.frozen
class WorkerCreate:
    """`POST /v1/workers`."""

    name: Name


@view_of(DomainWorker)
@attrs.frozen
class Worker:
    """A worker; its token is never shown again."""

    __location__: ClassVar[str] = "/v1/workers/{id}"

    id: UUID
    name: str
    created_at: datetime
    last_seen_at: datetime | None = attrs.field(metadata=meta(SEEN))


@attrs.frozen
class WorkerWithToken(Worker):
    """A worker with its new token."""

    __secret__: ClassVar[bool] = True  # never stored by a cache (conventions.no_store)

    token: str = ""
    """The worker's bearer token (`bkw_...`), shown only here; a rotation ends the previous one at
    once."""


# --------------------------------------------------------------------------------------
# Backups


@attrs.frozen
class S3Location:
    """The fields an S3 source and a `customer_s3` destination share (not a wire shape of
    its own)."""

    endpoint: Endpoint = attrs.field(metadata=meta(ENDPOINT))
    bucket: NonEmpty
    prefix: str | None = None
    """Null is the same as absent."""


@view_of(backups.S3Source)
@attrs.frozen
class S3Source(S3Location):
    """An S3 bucket the service reads (cloud backups)."""

    type: Literal["s3"] = "s3"


@view_of(backups.PostgresSource)
@attrs.frozen
class PostgresSource:
    """A PostgreSQL database the service dumps (cloud backups)."""

    host: NonEmpty
    port: Port
    database: NonEmpty
    type: Literal["postgres"] = "postgres"


@attrs.frozen
class S3Credentials:
    """Credentials of an S3 source or a `customer_s3` destination."""

    access_key_id: str
    secret_access_key: str


@attrs.frozen
class PostgresCredentials:
    """Credentials of a PostgreSQL source."""

    username: str
    password: str


@view_of(backups.Schedule)
@attrs.frozen
class ScheduleShape:
    """When a local or cloud backup runs."""

    __schema_name__: ClassVar[str] = "Schedule"
    cron: str = attrs.field(metadata=meta(schema={"format": "cron", "examples": ["0 3 * * *"]}))
    """A 5-field cron expression: numbers, `*`, ranges, steps within the field's range, lists and
    English month and weekday names (`jan`, `mon`); `L`, `?`, `W`, `#` and seconds are refused
    (400)."""
    timezone: str = attrs.field(
        metadata=meta(schema={"format": "time-zone", "examples": ["Europe/Paris"]})
    )
    """An IANA time zone name, e.g. `Europe/Paris`."""


@view_of(RetentionPolicy)
@attrs.frozen
class Retention:
    """How long artifacts are kept, and how long nobody can remove them."""

    expire_after: Duration
    """Longer than zero."""
    lock_for: Duration = attrs.field(metadata=meta(schema={"examples": ["P7D"]}))
    """`PT0S` means no lock; longer than `expire_after` gives 422 `lock_exceeds_expiry`."""


@view_of(backups.ServiceDestination)
@attrs.frozen
class ServiceDestination:
    """Artifacts go to the service's storage (the default)."""

    type: Literal["service"] = "service"


@view_of(backups.CustomerS3Destination)
@attrs.frozen
class CustomerS3Destination(S3Location):
    """Artifacts go only to the customer's own bucket and cannot be downloaded through the
    service."""

    type: Literal["customer_s3"] = "customer_s3"


@attrs.frozen
class BackupCreate:
    """`POST /v1/workspaces/{wid}/backups`."""

    name: Name
    kind: BackupKind
    """Immutable once set."""


@attrs.frozen
class BackupUpdate:
    """Every field is optional; `kind` cannot be changed."""

    __unknown_notes__: ClassVar[Mapping[str, str]] = {
        "kind": " (the kind of a backup cannot be changed)"
    }
    __example_fields__: ClassVar[tuple[str, ...]] = (
        "source",
        "credentials",
        "schedule",
        "retention",
    )
    name: Name | Unset = UNSET
    source: Source | Unset = UNSET
    """Cloud backups only."""
    credentials: Mapping[str, str] | Unset = attrs.field(
        default=UNSET,
        metadata=write_only(S3Credentials | PostgresCredentials),
    )
    """Cloud backups only; the shape follows the source type. Write-only: never returned, logged
    or audited; encrypted at rest."""
    schedule: Schedule | Unset | None = UNSET
    """Not on manual backups; null removes it."""
    worker_id: UUID | Unset = UNSET
    """Local backups only: a worker of this workspace."""
    retention: RetentionPolicy | Unset = UNSET
    """Write-once: an identical policy is accepted again, another gives 409
    `retention_immutable`."""
    destination: Destination | Unset = UNSET
    destination_credentials: Mapping[str, str] | Unset = attrs.field(
        default=UNSET, metadata=write_only(S3Credentials)
    )
    """Only with a `customer_s3` destination (required when first setting one). Write-only."""

    def changes(self) -> BackupChanges:
        """The domain's changes: the fields share their names (the shapes of the
        credentials are checked as they are built)."""
        fields = attrs.fields(BackupUpdate)
        return BackupChanges(**{field.name: getattr(self, field.name) for field in fields})


@view_of(backups.Backup)
@attrs.frozen
class Backup:
    """A backup. Credentials are write-only and never appear."""

    __location__: ClassVar[str] = "/v1/backups/{id}"

    id: UUID
    workspace_id: UUID
    name: str
    kind: BackupKind
    state: BackupState
    """`active` once the kind's configuration is complete: cloud needs `source`, `credentials` and
    `retention`; local needs `worker_id` and `retention`; manual needs `retention`."""
    paused: bool
    """A paused backup keeps its state and is not scheduled."""
    source: Source | None
    has_credentials: bool
    """Whether source credentials are stored (never returned)."""
    schedule: Schedule | None
    worker_id: UUID | None
    retention: RetentionPolicy | None
    destination: Destination
    next_run_at: datetime | None
    created_at: datetime
    updated_at: datetime


# --------------------------------------------------------------------------------------
# Runs and artifacts


@attrs.frozen
class RunCreate:
    """`POST /v1/runs`."""

    backup_id: UUID
    """A manual backup."""


@view_of(domain_runs.Progress)
@attrs.frozen
class ProgressShape:
    """How far a running run's holder says it got, as of its last heartbeat."""

    __schema_name__: ClassVar[str] = "Progress"
    bytes_done: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    """Bytes processed so far."""
    bytes_total: int | None = attrs.field(metadata=meta(schema={"minimum": 0}))
    """Bytes to process, when the holder knows."""
    message: str | None = attrs.field(
        metadata=meta(schema={"maxLength": domain_runs.MAX_PROGRESS_MESSAGE})
    )
    """What the holder is doing, in its own words."""
    updated_at: datetime
    """The heartbeat that reported it."""


@view_of(domain_runs.Run)
@attrs.frozen
class Run:
    """One execution of a backup."""

    __location__: ClassVar[str] = "/v1/runs/{id}"

    id: UUID
    backup_id: UUID
    workspace_id: UUID
    state: domain_runs.RunState
    """`running` from `POST /v1/runs`, `queued` from `trigger`; `succeeded` once `confirm` found
    every announced artifact; `cancelled` by `cancel` (a queued run at once)."""
    trigger: domain_runs.RunTrigger
    """`manual` (`POST /v1/runs`), `api` (`trigger`) or `schedule`."""
    worker_id: UUID | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    artifact_count: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    """The run's `available` artifacts."""
    bytes: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    """Total size of the run's `available` artifacts."""
    error: str | None
    attempt: int = attrs.field(
        metadata=meta(
            f"1-based; a run whose lease expired is queued again with `attempt + 1`, up to "
            f"{domain_runs.MAX_ATTEMPTS}.",
            schema={"minimum": 1},
        )
    )
    lease_expires_at: datetime | None
    """When the holder's lease runs out; null unless the run is claimed."""
    cancel_requested: bool
    """A cancel of the `running` run was asked for; it becomes `cancelled` when its holder next
    heartbeats or fails, or its lease expires."""
    progress: domain_runs.Progress | None
    """What the run's holder last reported; null before any report."""


@attrs.frozen
class ClaimRequest:
    """`POST /v1/claims`."""

    wait_seconds: int = attrs.field(
        default=0,
        metadata=meta(
            f"How long to wait for a queued run (long poll), 0 to {domain_runs.MAX_CLAIM_WAIT}.",
            schema={"minimum": 0, "maximum": domain_runs.MAX_CLAIM_WAIT},
        ),
    )


@view_of(ClaimedRun)
@attrs.frozen
class Claim:
    """A claimed run, its backup and its lease."""

    run: Run
    backup: Backup
    lease_expires_at: datetime = attrs.field(metadata=meta(get="run.lease_expires_at"))
    """When the lease runs out unless a heartbeat extends it."""


@attrs.frozen
class ProgressReport:
    """How far the holder got."""

    bytes_done: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    """Bytes processed so far."""
    bytes_total: int | None = attrs.field(
        default=None, metadata=meta(schema={"minimum": 0}, optional=True)
    )
    """Bytes to process, when known."""
    message: str | None = attrs.field(
        default=None,
        metadata=meta(schema={"maxLength": domain_runs.MAX_PROGRESS_MESSAGE}, optional=True),
    )
    """What the holder is doing."""


@attrs.frozen
class HeartbeatRequest:
    """`POST /v1/runs/{run_id}/heartbeat`."""

    progress: ProgressReport | None = attrs.field(default=None, metadata=meta(optional=True))
    """Recorded on the run as of this heartbeat."""


@attrs.frozen
class Heartbeat:
    """The run's lease after a heartbeat."""

    lease_expires_at: datetime | None
    """The extended lease; null once the run was cancelled."""
    cancel_requested: bool
    """The run was cancelled: the holder stops its work now."""


@attrs.frozen
class FailRequest:
    """`POST /v1/runs/{run_id}/fail`."""

    error: str = attrs.field(
        metadata=meta(schema={"minLength": 1, "maxLength": domain_runs.MAX_ERROR})
    )
    """What went wrong, in the holder's words."""


@attrs.frozen
class RestoreCreate:
    """`POST /v1/artifacts/{aid}/restores`."""

    __example_fields__: ClassVar[tuple[str, ...]] = ("target", "credentials")
    target: Source
    """Where to restore: a bucket (`s3`, for an artifact of an `s3` source; created when it does
    not exist; objects go to `prefix` + their key) or an existing, empty PostgreSQL database
    (`postgres`, for an artifact of a `postgres` source). The type must be the artifact's source
    type (422 otherwise)."""
    credentials: Mapping[str, str] = attrs.field(
        metadata=write_only(S3Credentials | PostgresCredentials)
    )
    """The target's credentials, in the shape of its type. Write-only: never returned, logged or
    audited; encrypted at rest until the restore finishes, then erased."""


@view_of(DomainRestore)
@attrs.frozen
class Restore:
    """A restore of an artifact into a target, run by the service."""

    id: UUID
    artifact_id: UUID
    state: RestoreState
    """`queued` until the service takes it, `running`, then `succeeded` or `failed`."""
    target: Source
    """Where the artifact goes (never a secret)."""
    error: str | None = attrs.field(metadata=meta(schema={"maxLength": MAX_RESTORE_ERROR}))
    """Why it failed, in words free of secrets; null unless `failed`."""
    created_at: datetime
    finished_at: datetime | None
    """Null until it succeeds or fails."""


@attrs.frozen
class UploadRequest:
    """`POST /v1/runs/{run_id}/upload-url`."""

    name: str = attrs.field(
        metadata=meta(
            f"1 to {MAX_ARTIFACT_NAME} characters, no control characters; unique in the run "
            "(asking again for the same name, size and sha256 resumes).",
            schema={
                "minLength": 1,
                "maxLength": MAX_ARTIFACT_NAME,
                "pattern": "^[^\\x00-\\x1f\\x7f]*$",
            },
        )
    )
    size: int = attrs.field(metadata=meta(schema={"minimum": 0, "maximum": MAX_ARTIFACT_SIZE}))
    """Exact size in bytes."""
    sha256: str = attrs.field(
        metadata=meta(schema={"pattern": "^[0-9a-fA-F]{64}$", "examples": [SHA256_EXAMPLE]})
    )
    """Hex digest of the bytes."""


@attrs.frozen
class SingleUpload:
    """Below the multipart threshold: one PUT of the whole body."""

    artifact_id: UUID = attrs.field(metadata=meta(get="artifact.id"))
    method: Literal["PUT"] = attrs.field(metadata=meta(get="request.method"))
    url: Uri = attrs.field(metadata=meta(PRESIGNED))
    headers: dict[str, str] = attrs.field(metadata=meta(get="request.headers"))
    """Headers to send with the PUT."""
    expires_at: datetime


@attrs.frozen
class UploadPart:
    """One part's presigned PUT."""

    number: int = attrs.field(metadata=meta(schema={"minimum": 1}))
    size: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    method: Literal["PUT"] = attrs.field(metadata=meta(get="request.method"))
    url: Uri


@attrs.frozen
class MultipartUpload:
    """From the multipart threshold up: one PUT per part; `confirm` joins them."""

    artifact_id: UUID = attrs.field(metadata=meta(get="artifact.id"))
    upload_id: str = attrs.field(metadata=meta(get="artifact.upload_id"))
    part_size: int = attrs.field(metadata=meta(schema={"minimum": 1}))
    parts: list[UploadPart]
    stored_parts: list[int]
    """Parts already stored: a resuming client skips them."""
    expires_at: datetime


UploadPlan = SingleUpload | MultipartUpload


@attrs.frozen
class Download:
    """A presigned download."""

    __secret__: ClassVar[bool] = True  # never stored by a cache (conventions.no_store)

    method: Literal["GET"]
    url: Uri = attrs.field(metadata=meta(PRESIGNED))
    expires_at: datetime


@view_of(DomainArtifact)
@attrs.frozen
class Artifact:
    """A file of a run."""

    id: UUID
    run_id: UUID
    backup_id: UUID
    name: str
    size: int = attrs.field(metadata=meta(schema={"minimum": 0}))
    sha256: str = attrs.field(
        metadata=meta(schema={"pattern": "^[0-9a-f]{64}$", "examples": [SHA256_EXAMPLE]})
    )
    state: ArtifactState
    storage: ArtifactStorage
    created_at: datetime
    expires_at: datetime | None
    """From the backup's retention at confirmation."""
    locked_until: datetime | None
    """Nobody can remove it before (enforced by the storage itself)."""
    verification: Verification | None
    """What the last re-read of its bytes found: `pending` until a multipart upload is verified in
    the background, `ok`, `mismatch` or `missing`; null if never."""
    verified_at: datetime | None
    """When it was last verified."""


# --------------------------------------------------------------------------------------
# The built-in identity provider (URL-encoded forms in, JSON out)


@attrs.frozen
class SignupForm:
    """`POST /idp/signup`."""

    email: Email
    password: str = attrs.field(
        metadata=write_only(
            minLength=builtin.MIN_PASSWORD_LENGTH, maxLength=builtin.MAX_PASSWORD_LENGTH
        )
    )
    name: Name


@attrs.frozen
class SignupResult:
    """The new account."""

    __location__: ClassVar[str] = "/v1/me"

    user_id: UUID = attrs.field(metadata=meta(get="id"))
    email: Email


CLIENT_ID_FIELD: Any = attrs.field(
    default=None,
    metadata=meta(
        "The public client's id; or sent as the user name of HTTP Basic with an empty "
        "password (RFC 6749 section 2.3.1).",
        schema={"const": builtin.CLIENT_ID},
    ),
)


@attrs.frozen
class DeviceCodeForm:
    """`POST /idp/device/code`."""

    __ignores_unknown__: ClassVar[bool] = True  # OAuth ignores unrecognised parameters

    client_id: str | None = CLIENT_ID_FIELD


@view_of(builtin.DeviceAuthorization)
@attrs.frozen
class DeviceAuthorization:
    """RFC 8628 section 3.2."""

    device_code: str
    """Secret of the polling client."""
    user_code: str = attrs.field(
        metadata=meta(
            schema={
                "pattern": "^[B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4}$",
                "examples": ["WDJB-MJHT"],
            }
        )
    )
    """8 letters shown as `XXXX-XXXX`."""
    verification_uri: Uri
    verification_uri_complete: Uri
    expires_in: int
    """Seconds (600)."""
    interval: int
    """Seconds between polls (5)."""


@attrs.frozen
class DeviceDecisionForm:
    """`POST /idp/device`."""

    user_code: str = attrs.field(metadata=meta(schema={"minLength": 1}))
    """Case and hyphens do not matter."""
    email: Email
    password: str = attrs.field(metadata=write_only(minLength=1))
    decision: Literal["approve", "deny"]


@attrs.frozen
class DeviceDecision:
    """The JSON answer (with `Accept: application/json`)."""

    status: Literal["approved", "denied"]


@attrs.frozen
class TokenForm:
    """`POST /idp/token`."""

    __ignores_unknown__: ClassVar[bool] = True  # OAuth ignores unrecognised parameters
    grant_type: str = attrs.field(
        metadata=meta(schema={"enum": [DEVICE_CODE_GRANT, AUTHORIZATION_CODE_GRANT]})
    )
    device_code: str | None = attrs.field(default=None, metadata=meta(schema={"minLength": 1}))
    """The device grant's device code."""
    code: str | None = attrs.field(default=None, metadata=meta(schema={"minLength": 1}))
    """`authorization_code`: the code of the redirect (single-use, 60 seconds)."""
    code_verifier: str | None = attrs.field(
        default=None,
        metadata=meta(
            schema={
                "pattern": "^[A-Za-z0-9._~-]{43,128}$",
                "examples": ["dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"],  # RFC 7636 B
            }
        ),
    )
    """`authorization_code`: the PKCE verifier (RFC 7636), 43 to 128 characters."""
    redirect_uri: str | None = attrs.field(
        default=None, metadata=meta(schema={"examples": ["http://127.0.0.1:8080/app"]})
    )
    """`authorization_code`: the `redirect_uri` of the authorization request."""
    client_id: str | None = attrs.field(
        default=None, metadata=meta(schema={"enum": [builtin.CLIENT_ID, builtin.WEB_CLIENT_ID]})
    )
    """The public client's id (`strongroom-cli` for the device grant, `strongroom-web` for the
    authorization code); or sent as the user name of HTTP Basic with an empty password (RFC
    6749 section 2.3.1)."""


@attrs.frozen
class AuthorizationForm:
    """`POST /idp/authorize`: the authorization request's parameters and the sign-in."""

    response_type: Literal["code"]
    client_id: str = attrs.field(metadata=meta(schema={"const": builtin.WEB_CLIENT_ID}))
    redirect_uri: str = attrs.field(
        metadata=meta(schema={"examples": ["http://127.0.0.1:8080/app"]})
    )
    """On this server's own origin."""
    code_challenge: str = attrs.field(
        metadata=meta(
            schema={
                "pattern": "^[A-Za-z0-9_-]{43}$",
                "examples": ["E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"],  # RFC 7636 B
            }
        )
    )
    code_challenge_method: Literal["S256"]
    state: str = attrs.field(metadata=meta(schema={"minLength": 1}))
    email: Email
    password: str = attrs.field(metadata=write_only(minLength=1))


@view_of(builtin.AccessToken)
@attrs.frozen
class AccessToken:
    """An identity provider access token."""

    access_token: str
    """Accepted only by `POST /v1/auth/sessions`, never as a `/v1` bearer."""
    token_type: Literal["Bearer"]
    expires_in: int
    """Seconds."""


@attrs.frozen
class AuthorizationServerMetadata:
    """RFC 8414 authorization server metadata of the built-in identity provider."""

    issuer: Uri
    authorization_endpoint: Uri
    device_authorization_endpoint: Uri
    token_endpoint: Uri
    grant_types_supported: list[str]
    response_types_supported: list[str]
    """`code`: the authorization code grant, with PKCE."""
    code_challenge_methods_supported: list[str]
    """`S256` only (RFC 7636)."""
    token_endpoint_auth_methods_supported: list[str]
    """`none` (`client_id` in the form) or `client_secret_basic` with an empty secret."""
    scopes_supported: list[str]
    service_documentation: Uri


configure_views(globals())
