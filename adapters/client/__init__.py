"""The Strongroom Python SDK: ``Client`` (blocking) and ``AsyncClient`` (asyncio).

    from strongroom.client import Client

    with Client("https://strongroom.example", token="bks_...") as client:
        for backup in client.list_backups.iterate(workspace_id):
            print(backup.name, backup.state)

Every API operation is a method named after its operation id (``get_backup``,
``create_backup``, ``list_runs``...); answers are typed attrs models; refusals raise an
``ApiError`` subclass carrying ``code``, ``message``, ``request_id`` and ``status``.
Creating POSTs carry an ``Idempotency-Key`` (one per call, reused on its retries);
connection errors, 429, 502 and 503 are retried with backoff (``Retry-After`` honoured).

The models are the server's own (``strongroom.adapters.wire``), read with a tolerant
converter. This package imports only them, the pure domain, the standard library, httpx2,
attrs, cattrs and zstandard (directory archives): it installs without the server's
database and storage drivers.
"""

from strongroom.adapters.wire.artifacts import (
    Artifact,
    Download,
    MultipartUpload,
    SingleUpload,
    UploadPart,
    UploadPlan,
)
from strongroom.adapters.wire.audit import Actor, AuditEvent, Target
from strongroom.adapters.wire.backups import Backup
from strongroom.adapters.wire.claims import Claim
from strongroom.adapters.wire.idp import (
    AccessToken,
    AuthorizationServerMetadata,
    DeviceAuthorization,
    SignupResult,
)
from strongroom.adapters.wire.invitations import Invitation, Membership
from strongroom.adapters.wire.machines import ApiKey, ApiKeyWithToken, Worker, WorkerWithToken
from strongroom.adapters.wire.members import Member, Role
from strongroom.adapters.wire.pages import Page
from strongroom.adapters.wire.runs import Heartbeat, ProgressReport, Run
from strongroom.adapters.wire.runs import ProgressShape as Progress
from strongroom.adapters.wire.sessions import CliConfig, Me, Principal, Session, User
from strongroom.adapters.wire.sessions import PermissionEntry as Permission
from strongroom.adapters.wire.sources import (
    Credentials,
    CustomerS3Destination,
    PostgresCredentials,
    PostgresSource,
    Retention,
    S3Credentials,
    S3Source,
    ServiceDestination,
)
from strongroom.adapters.wire.sources import DestinationShape as Destination
from strongroom.adapters.wire.sources import ScheduleShape as Schedule
from strongroom.adapters.wire.sources import SourceShape as Source
from strongroom.adapters.wire.system import Health, Readiness, ReadinessChecks
from strongroom.adapters.wire.workspaces import MemberWorkspace, Quota, Workspace
from strongroom.client.batches import (
    DownloadUrl,
    DownloadUrls,
    Encryption,
    UploadItem,
    UploadPlans,
)
from strongroom.client.calls import NO_RETRY, RetryPolicy
from strongroom.client.clients import AsyncClient, Client, Stored
from strongroom.client.endpoints import UNSET, Unset
from strongroom.client.errors import (
    ApiError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    ConnectionFailedError,
    NotFoundError,
    OAuthError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    ValidationFailedError,
)
from strongroom.domain.runs import FINISHED_STATES as FINISHED_RUN_STATES

__all__ = [
    "FINISHED_RUN_STATES",
    "NO_RETRY",
    "UNSET",
    "AccessToken",
    "Actor",
    "ApiError",
    "ApiKey",
    "ApiKeyWithToken",
    "Artifact",
    "AsyncClient",
    "AuditEvent",
    "AuthenticationError",
    "AuthorizationServerMetadata",
    "Backup",
    "BadRequestError",
    "Claim",
    "CliConfig",
    "Client",
    "ConflictError",
    "ConnectionFailedError",
    "Credentials",
    "CustomerS3Destination",
    "Destination",
    "DeviceAuthorization",
    "Download",
    "DownloadUrl",
    "DownloadUrls",
    "Encryption",
    "Health",
    "Heartbeat",
    "Invitation",
    "Me",
    "Member",
    "MemberWorkspace",
    "Membership",
    "MultipartUpload",
    "NotFoundError",
    "OAuthError",
    "Page",
    "Permission",
    "PermissionDeniedError",
    "PostgresCredentials",
    "PostgresSource",
    "Principal",
    "Progress",
    "ProgressReport",
    "Quota",
    "RateLimitedError",
    "Readiness",
    "ReadinessChecks",
    "Retention",
    "RetryPolicy",
    "Role",
    "Run",
    "S3Credentials",
    "S3Source",
    "Schedule",
    "ServerError",
    "ServiceDestination",
    "Session",
    "SignupResult",
    "SingleUpload",
    "Source",
    "Stored",
    "Target",
    "Unset",
    "UploadItem",
    "UploadPart",
    "UploadPlan",
    "UploadPlans",
    "User",
    "ValidationFailedError",
    "Worker",
    "WorkerWithToken",
    "Workspace",
]
