"""Every operation of the Strongroom API, described once for both clients.

Each method below is a typed signature: its path placeholders, its query or body fields,
its answer. ``Client`` and ``AsyncClient`` inherit them (sync and async methods); a test
holds this list to the server's ``/openapi.json``. Method names are the operation ids in
snake case. Parameters an update leaves alone default to ``UNSET``; ``None`` clears.

Not here, by design: the presigned storage routes (``PUT``/``GET /storage/{key}``; use
``upload`` and ``download``), and the identity provider's HTML pages for people
(``GET``/``POST /idp/device``), the ``/docs`` page.
"""

# mypy: disable-error-code="empty-body"
# The bodies are empty on purpose: the decorators read only the signatures.

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from strongroom.adapters.wire.artifacts import (
    Artifact,
    Download,
    Downloads,
    UploadPlan,
    UploadPlans,
    UploadRequest,
)
from strongroom.adapters.wire.audit import AuditEvent
from strongroom.adapters.wire.backups import Backup, DrillPolicyShape, FreshnessPolicy
from strongroom.adapters.wire.backups import EncryptionShape as Encryption
from strongroom.adapters.wire.claims import Claim
from strongroom.adapters.wire.drills import Drill
from strongroom.adapters.wire.health import Health as BackupHealth
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
from strongroom.adapters.wire.proofs import Proof
from strongroom.adapters.wire.restores import Restore
from strongroom.adapters.wire.retention import RetentionVerdict
from strongroom.adapters.wire.runs import Heartbeat, ProgressReport, Run
from strongroom.adapters.wire.sessions import CliConfig, Me, Session
from strongroom.adapters.wire.sessions import PermissionEntry as Permission
from strongroom.adapters.wire.sources import Credentials, Retention, S3Credentials
from strongroom.adapters.wire.sources import DestinationShape as Destination
from strongroom.adapters.wire.sources import ScheduleShape as Schedule
from strongroom.adapters.wire.sources import SourceShape as Source
from strongroom.adapters.wire.system import Health, Readiness
from strongroom.adapters.wire.webhooks import Delivery, Webhook, WebhookWithSecret
from strongroom.adapters.wire.workspaces import MemberWorkspace, Quota, Workspace
from strongroom.client.endpoints import UNSET, Unset, endpoint, paged

ID = UUID | str


class Operations:
    """The API's operations; see ``Client`` and ``AsyncClient``."""

    # -- service -----------------------------------------------------------------------

    @endpoint("GET", "/healthz", auth=False)
    def get_health(self) -> Health:
        """The process answers (liveness)."""

    @endpoint("GET", "/readyz", auth=False)
    def get_readiness(self) -> Readiness:
        """The database and storage answer (readiness)."""

    @endpoint("GET", "/metrics", auth=False)
    def get_metrics(self) -> str:
        """Prometheus metrics, as text."""

    @endpoint("GET", "/openapi.json", auth=False)
    def get_open_api_document(self) -> dict[str, Any]:
        """The OpenAPI document of the server."""

    @endpoint("GET", "/v1/permissions")
    def list_permissions(self) -> Page[Permission]:
        """The permission catalog."""

    @endpoint("GET", "/v1/me")
    def get_me(self) -> Me:
        """The caller: principal, user, workspace and permissions."""

    # -- identity ----------------------------------------------------------------------

    @endpoint("GET", "/v1/auth/cli/config", auth=False)
    def get_cli_config(self) -> CliConfig:
        """Where a command-line client signs in (device flow endpoints)."""

    @endpoint("GET", "/.well-known/oauth-authorization-server", auth=False)
    def get_authorization_server_metadata(self) -> AuthorizationServerMetadata:
        """RFC 8414 metadata of the built-in identity provider."""

    @endpoint("GET", "/.well-known/oauth-authorization-server/idp", auth=False)
    def get_authorization_server_metadata_of_issuer(self) -> AuthorizationServerMetadata:
        """RFC 8414 metadata, at the issuer-specific address."""

    @endpoint("POST", "/idp/signup", body="form", auth=False)
    def idp_signup(self, email: str, password: str, name: str) -> SignupResult:
        """Create a built-in provider account (when sign-up is enabled)."""

    @endpoint("POST", "/idp/device/code", body="form", auth=False)
    def idp_device_code(self, client_id: str | None = "strongroom-cli") -> DeviceAuthorization:
        """Start the device flow (RFC 8628): a code for a person to approve."""

    @endpoint("POST", "/idp/token", body="form", auth=False)
    def idp_token(
        self,
        device_code: str | None = None,
        grant_type: str = "urn:ietf:params:oauth:grant-type:device_code",
        client_id: str | None = "strongroom-cli",
        code: str | None = None,
        code_verifier: str | None = None,
        redirect_uri: str | None = None,
    ) -> AccessToken:
        """Poll the device flow (``device_code``); raises ``OAuthError``
        (``authorization_pending``, ``slow_down``, ``expired_token``, ``access_denied``)
        until approved. With ``grant_type="authorization_code"``, ``client_id=
        "strongroom-web"``, ``code``, ``code_verifier`` and ``redirect_uri``: redeem an
        authorization code (PKCE)."""

    @endpoint("POST", "/v1/auth/sessions", body="json", creates=True)
    def create_session(self, idempotency_key: str | None = None) -> Session:
        """Exchange the identity provider access token this client holds as its token
        for a session (``bks_``)."""

    @endpoint("POST", "/v1/auth/switch", body="json", creates=True)
    def switch_workspace(self, workspace_id: ID, idempotency_key: str | None = None) -> Session:
        """A new session scoped to ``workspace_id``; the current token is revoked."""

    @endpoint("DELETE", "/v1/auth/sessions/current")
    def delete_current_session(self) -> None:
        """Sign out: revoke the token this client holds."""

    # -- workspaces --------------------------------------------------------------------

    @paged("/v1/workspaces")
    def list_workspaces(
        self, limit: int | None = None, cursor: str | None = None
    ) -> Page[MemberWorkspace]:
        """The workspaces the caller belongs to."""

    @endpoint("POST", "/v1/workspaces", body="json", creates=True)
    def create_workspace(self, name: str, idempotency_key: str | None = None) -> Workspace:
        """Create a workspace; the caller becomes its admin."""

    @endpoint("GET", "/v1/workspaces/{workspace_id}")
    def get_workspace(self, workspace_id: ID) -> Workspace:
        """One workspace."""

    @endpoint("PATCH", "/v1/workspaces/{workspace_id}", body="json")
    def update_workspace(
        self, workspace_id: ID, name: str, if_match: str | None = None
    ) -> Workspace:
        """Rename a workspace."""

    @endpoint("DELETE", "/v1/workspaces/{workspace_id}")
    def delete_workspace(self, workspace_id: ID) -> None:
        """Delete a workspace and revoke its sessions, API keys and workers."""

    @endpoint("GET", "/v1/workspaces/{workspace_id}/quotas")
    def list_quotas(self, workspace_id: ID) -> Page[Quota]:
        """The workspace's limits and usage."""

    @paged("/v1/workspaces/{workspace_id}/audit")
    def list_audit_events(
        self,
        workspace_id: ID,
        limit: int | None = None,
        cursor: str | None = None,
        action: str | None = None,
        actor_id: ID | None = None,
        since: datetime | None = None,
    ) -> Page[AuditEvent]:
        """The workspace's audit list, newest first."""

    # -- members, roles, invitations ---------------------------------------------------

    @paged("/v1/workspaces/{workspace_id}/members")
    def list_members(
        self, workspace_id: ID, limit: int | None = None, cursor: str | None = None
    ) -> Page[Member]:
        """The workspace's members."""

    @endpoint("GET", "/v1/workspaces/{workspace_id}/members/{user_id}")
    def get_member(self, workspace_id: ID, user_id: ID) -> Member:
        """One member."""

    @endpoint("PATCH", "/v1/workspaces/{workspace_id}/members/{user_id}", body="json")
    def update_member(
        self, workspace_id: ID, user_id: ID, role: str, if_match: str | None = None
    ) -> Member:
        """Change a member's role."""

    @endpoint("DELETE", "/v1/workspaces/{workspace_id}/members/{user_id}")
    def delete_member(self, workspace_id: ID, user_id: ID) -> None:
        """Remove a member."""

    @paged("/v1/workspaces/{workspace_id}/roles")
    def list_roles(
        self, workspace_id: ID, limit: int | None = None, cursor: str | None = None
    ) -> Page[Role]:
        """The workspace's roles, built-in and custom."""

    @endpoint("POST", "/v1/workspaces/{workspace_id}/roles", body="json", creates=True)
    def create_role(
        self,
        workspace_id: ID,
        slug: str,
        name: str,
        permissions: list[str],
        idempotency_key: str | None = None,
    ) -> Role:
        """Create a custom role."""

    @endpoint("GET", "/v1/workspaces/{workspace_id}/roles/{slug}")
    def get_role(self, workspace_id: ID, slug: str) -> Role:
        """One role."""

    @endpoint("PATCH", "/v1/workspaces/{workspace_id}/roles/{slug}", body="json")
    def update_role(
        self,
        workspace_id: ID,
        slug: str,
        name: str | Unset = UNSET,
        permissions: list[str] | Unset = UNSET,
        if_match: str | None = None,
    ) -> Role:
        """Rename a custom role or change its permissions."""

    @endpoint("DELETE", "/v1/workspaces/{workspace_id}/roles/{slug}")
    def delete_role(self, workspace_id: ID, slug: str) -> None:
        """Delete a custom role no member holds."""

    @paged("/v1/workspaces/{workspace_id}/invitations")
    def list_invitations(
        self, workspace_id: ID, limit: int | None = None, cursor: str | None = None
    ) -> Page[Invitation]:
        """The workspace's invitations."""

    @endpoint("POST", "/v1/workspaces/{workspace_id}/invitations", body="json", creates=True)
    def create_invitation(
        self, workspace_id: ID, email: str, role: str, idempotency_key: str | None = None
    ) -> Invitation:
        """Invite a person by email."""

    @endpoint("GET", "/v1/workspaces/{workspace_id}/invitations/{invitation_id}")
    def get_invitation(self, workspace_id: ID, invitation_id: ID) -> Invitation:
        """One invitation and its state."""

    @endpoint("POST", "/v1/invitations/{invitation_id}/accept", body="json")
    def accept_invitation(self, invitation_id: ID) -> Membership:
        """Accept an invitation sent to the caller's email."""

    # -- machine credentials -----------------------------------------------------------

    @paged("/v1/api-keys")
    def list_api_keys(self, limit: int | None = None, cursor: str | None = None) -> Page[ApiKey]:
        """The workspace's API keys."""

    @endpoint("POST", "/v1/api-keys", body="json", creates=True)
    def create_api_key(
        self,
        name: str,
        permissions: list[str],
        expires_at: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> ApiKeyWithToken:
        """Create an API key; its ``token`` is in this answer only."""

    @endpoint("GET", "/v1/api-keys/{api_key_id}")
    def get_api_key(self, api_key_id: ID) -> ApiKey:
        """One API key."""

    @endpoint("DELETE", "/v1/api-keys/{api_key_id}")
    def delete_api_key(self, api_key_id: ID) -> None:
        """Delete (revoke) an API key."""

    @paged("/v1/workers")
    def list_workers(self, limit: int | None = None, cursor: str | None = None) -> Page[Worker]:
        """The workspace's workers."""

    @endpoint("POST", "/v1/workers", body="json", creates=True)
    def create_worker(self, name: str, idempotency_key: str | None = None) -> WorkerWithToken:
        """Create a worker credential; its ``token`` is in this answer only."""

    @endpoint("GET", "/v1/workers/{worker_id}")
    def get_worker(self, worker_id: ID) -> Worker:
        """One worker."""

    @endpoint("DELETE", "/v1/workers/{worker_id}")
    def delete_worker(self, worker_id: ID) -> None:
        """Delete (revoke) a worker."""

    @endpoint("POST", "/v1/workers/{worker_id}/rotate", body="json")
    def rotate_worker(self, worker_id: ID) -> WorkerWithToken:
        """A new token for a worker; the old one stops working."""

    # -- backups -----------------------------------------------------------------------

    @paged("/v1/workspaces/{workspace_id}/backups")
    def list_backups(
        self, workspace_id: ID, limit: int | None = None, cursor: str | None = None
    ) -> Page[Backup]:
        """The workspace's backups."""

    @endpoint("POST", "/v1/workspaces/{workspace_id}/backups", body="json", creates=True)
    def create_backup(
        self,
        workspace_id: ID,
        name: str,
        kind: str,
        idempotency_key: str | None = None,
        encryption: Encryption | Unset = UNSET,
        drill: DrillPolicyShape | Unset = UNSET,
    ) -> Backup:
        """Create a backup (``local``, ``manual`` or ``cloud``), a draft until complete."""

    @endpoint("GET", "/v1/backups/{backup_id}")
    def get_backup(self, backup_id: ID) -> Backup:
        """One backup."""

    @endpoint("PATCH", "/v1/backups/{backup_id}", body="json")
    def update_backup(
        self,
        backup_id: ID,
        name: str | Unset = UNSET,
        source: Source | Unset = UNSET,
        credentials: Credentials | Unset = UNSET,
        schedule: Schedule | Unset | None = UNSET,
        worker_id: ID | Unset = UNSET,
        retention: Retention | Unset = UNSET,
        destination: Destination | Unset = UNSET,
        destination_credentials: S3Credentials | Unset = UNSET,
        encryption: Encryption | Unset | None = UNSET,
        freshness: FreshnessPolicy | Unset | None = UNSET,
        drill: DrillPolicyShape | Unset | None = UNSET,
        if_match: str | None = None,
    ) -> Backup:
        """Change a backup's configuration (only the fields given)."""

    @endpoint("DELETE", "/v1/backups/{backup_id}")
    def delete_backup(self, backup_id: ID) -> None:
        """Delete a backup."""

    @endpoint("POST", "/v1/backups/{backup_id}/pause", body="json")
    def pause_backup(self, backup_id: ID) -> Backup:
        """Pause a backup's schedule and triggers."""

    @endpoint("POST", "/v1/backups/{backup_id}/resume", body="json")
    def resume_backup(self, backup_id: ID) -> Backup:
        """Resume a paused backup (idempotent)."""

    @endpoint("POST", "/v1/backups/{backup_id}/trigger", body="json", creates=True)
    def trigger_backup(self, backup_id: ID, idempotency_key: str | None = None) -> Run:
        """Queue a run now (``trigger: "api"``)."""

    # -- runs --------------------------------------------------------------------------

    @endpoint("POST", "/v1/runs", body="json", creates=True)
    def start_run(self, backup_id: ID, idempotency_key: str | None = None) -> Run:
        """Start a run of a manual backup, driven by this client."""

    @endpoint("GET", "/v1/runs/{run_id}")
    def get_run(self, run_id: ID) -> Run:
        """One run."""

    @paged("/v1/backups/{backup_id}/runs")
    def list_runs(
        self,
        backup_id: ID,
        limit: int | None = None,
        cursor: str | None = None,
        state: str | None = None,
    ) -> Page[Run]:
        """A backup's runs, newest first (optionally of one ``state``)."""

    @endpoint("POST", "/v1/runs/{run_id}/cancel", body="json")
    def cancel_run(self, run_id: ID) -> Run:
        """Cancel a queued run, or ask a running one to stop."""

    @endpoint("POST", "/v1/claims", body="json")
    def claim_run(self, wait_seconds: int | None = None) -> Claim | None:
        """(Worker) claim the oldest queued run; ``None`` when nothing came within
        ``wait_seconds``."""

    @endpoint("POST", "/v1/runs/{run_id}/heartbeat", body="json")
    def heartbeat_run(
        self, run_id: ID, progress: ProgressReport | Unset | None = UNSET
    ) -> Heartbeat:
        """(Worker) extend the lease and report progress; says whether to cancel."""

    @endpoint("POST", "/v1/runs/{run_id}/fail", body="json")
    def fail_run(self, run_id: ID, error: str) -> Run:
        """Fail a run with a message (its pending artifacts are aborted)."""

    @endpoint("POST", "/v1/runs/{run_id}/upload-url", body="json")
    def request_upload(self, run_id: ID, name: str, size: int, sha256: str) -> UploadPlan:
        """Announce an artifact; presigned URLs to upload it (single or multipart)."""

    @endpoint("POST", "/v1/runs/{run_id}/upload-urls", body="json")
    def request_uploads(self, run_id: ID, artifacts: list[UploadRequest]) -> UploadPlans:
        """Announce many artifacts at once; an upload plan for each, in the order asked."""

    @endpoint("POST", "/v1/runs/{run_id}/confirm", body="json")
    def confirm_run(self, run_id: ID, references: list[ID] | Unset = UNSET) -> Run:
        """Finish a run: its announced artifacts are checked and become available;
        ``references``: artifacts of earlier runs of the backup its snapshot uses."""

    # -- artifacts ---------------------------------------------------------------------

    @paged("/v1/workspaces/{workspace_id}/artifacts")
    def list_artifacts(
        self,
        workspace_id: ID,
        limit: int | None = None,
        cursor: str | None = None,
        state: str | None = None,
    ) -> Page[Artifact]:
        """The workspace's artifacts (``state="deleted"``: only deleted ones)."""

    @endpoint("GET", "/v1/artifacts/{artifact_id}")
    def get_artifact(self, artifact_id: ID) -> Artifact:
        """One artifact, whatever its state."""

    @endpoint("POST", "/v1/artifacts/download-urls", body="json")
    def request_downloads(self, artifact_ids: list[ID]) -> Downloads:
        """Presigned URLs to download many artifacts, in the order asked."""

    @endpoint("POST", "/v1/artifacts/{artifact_id}/download-url", body="json")
    def request_download(self, artifact_id: ID) -> Download:
        """A presigned URL to download an artifact."""

    @endpoint("DELETE", "/v1/artifacts/{artifact_id}")
    def delete_artifact(self, artifact_id: ID) -> None:
        """Delete an artifact (not inside its lock, not a backup's last)."""

    @endpoint("POST", "/v1/artifacts/{artifact_id}/verify", body="json")
    def verify_artifact(self, artifact_id: ID) -> Artifact:
        """Ask the service to re-read an artifact and record its verification (202)."""

    @endpoint("POST", "/v1/artifacts/{artifact_id}/hold", body="json")
    def hold_artifact(self, artifact_id: ID) -> Artifact:
        """Put an artifact under legal hold: never deleted or expired until released."""

    @endpoint("DELETE", "/v1/artifacts/{artifact_id}/hold")
    def release_artifact(self, artifact_id: ID) -> Artifact:
        """Release an artifact's legal hold (its lock stays as it is)."""

    @endpoint("POST", "/v1/runs/{run_id}/hold", body="json")
    def hold_run(self, run_id: ID) -> Run:
        """Put every artifact of a run under legal hold."""

    @endpoint("DELETE", "/v1/runs/{run_id}/hold")
    def release_run(self, run_id: ID) -> Run:
        """Release the legal hold of every artifact of a run."""

    @paged("/v1/backups/{backup_id}/retention")
    def explain_retention(
        self, backup_id: ID, limit: int | None = None, cursor: str | None = None
    ) -> Page[RetentionVerdict]:
        """Each successful run, newest first: kept or expiring, and why."""

    # -- assurance ---------------------------------------------------------------------

    @endpoint("POST", "/v1/backups/{backup_id}/drills")
    def create_drill(self, backup_id: ID) -> Drill:
        """Ask for a restore drill of the backup's newest copy (queued, 202)."""

    @paged("/v1/backups/{backup_id}/drills")
    def list_drills(
        self, backup_id: ID, limit: int | None = None, cursor: str | None = None
    ) -> Page[Drill]:
        """The backup's drills, newest first."""

    @endpoint("GET", "/v1/workspaces/{workspace_id}/proof")
    def get_proof(self, workspace_id: ID) -> Proof:
        """The workspace's signed immutability proof (check it with ``proof verify``)."""

    # -- restores ----------------------------------------------------------------------

    @endpoint("POST", "/v1/artifacts/{artifact_id}/restores", body="json", creates=True)
    def create_restore(
        self,
        artifact_id: ID,
        target: Source,
        credentials: Credentials,
        idempotency_key: str | None = None,
    ) -> Restore:
        """Restore a cloud artifact into a bucket or an empty database (queued, 202). Its
        retries reuse one ``Idempotency-Key``: a lost answer never starts a second restore."""

    @endpoint("GET", "/v1/restores/{restore_id}")
    def get_restore(self, restore_id: ID) -> Restore:
        """A restore and its state."""

    # -- health and webhooks -----------------------------------------------------------

    @paged("/v1/workspaces/{workspace_id}/health")
    def list_health(
        self, workspace_id: ID, limit: int | None = None, cursor: str | None = None
    ) -> Page[BackupHealth]:
        """Every backup's health, late and failing first."""

    @endpoint("POST", "/v1/workspaces/{workspace_id}/webhooks", body="json")
    def create_webhook(
        self, workspace_id: ID, url: str, events: list[str], secret: str | None = None
    ) -> WebhookWithSecret:
        """Subscribe a URL to events; the signing ``secret`` is in this answer only."""

    @paged("/v1/workspaces/{workspace_id}/webhooks")
    def list_webhooks(
        self, workspace_id: ID, limit: int | None = None, cursor: str | None = None
    ) -> Page[Webhook]:
        """The workspace's webhooks."""

    @endpoint("GET", "/v1/webhooks/{webhook_id}")
    def get_webhook(self, webhook_id: ID) -> Webhook:
        """One webhook."""

    @endpoint("PATCH", "/v1/webhooks/{webhook_id}", body="json")
    def update_webhook(
        self,
        webhook_id: ID,
        url: str | Unset = UNSET,
        events: list[str] | Unset = UNSET,
        if_match: str | None = None,
    ) -> Webhook:
        """Change a webhook's URL or events."""

    @endpoint("DELETE", "/v1/webhooks/{webhook_id}")
    def delete_webhook(self, webhook_id: ID) -> None:
        """Delete a webhook and its delivery log."""

    @paged("/v1/webhooks/{webhook_id}/deliveries")
    def list_deliveries(
        self, webhook_id: ID, limit: int | None = None, cursor: str | None = None
    ) -> Page[Delivery]:
        """A webhook's deliveries with every attempt."""

    @endpoint("POST", "/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", body="json")
    def redeliver(self, webhook_id: ID, delivery_id: ID) -> Delivery:
        """Queue a delivery again at once."""

    @endpoint("POST", "/v1/webhooks/{webhook_id}/ping", body="json")
    def ping_webhook(self, webhook_id: ID) -> Delivery:
        """Queue a ``webhook.ping`` to the webhook."""
