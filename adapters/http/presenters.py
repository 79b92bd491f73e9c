"""Domain objects as the JSON the API returns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from strongroom.domain.artifacts import Artifact
from strongroom.domain.audit import AuditEvent
from strongroom.domain.backups import Backup, CustomerS3Destination, PostgresSource, S3Source
from strongroom.domain.invitations import Invitation
from strongroom.domain.machines import ApiKey, Worker, in_catalog_order
from strongroom.domain.pagination import Page
from strongroom.domain.permissions import Permission, Role
from strongroom.domain.principals import Caller
from strongroom.domain.quotas import Quota
from strongroom.domain.runs import Run
from strongroom.domain.users import User
from strongroom.domain.workspaces import Member, Membership, MemberWorkspace, Workspace
from strongroom.ports.driven.storage import PresignedRequest
from strongroom.ports.driving.artifacts import UploadPlan
from strongroom.ports.driving.machines import IssuedApiKey, IssuedWorker
from strongroom.ports.driving.sessions import IssuedSession


def timestamp(moment: datetime | None) -> str | None:
    """RFC 3339 in UTC with a ``Z`` suffix (millisecond precision)."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def listing(page: Page[Any], present: Any) -> dict[str, Any]:
    """The list envelope ``{data, next_cursor}``."""
    return {
        "data": [present(item) for item in page.items],
        "next_cursor": None if page.next_cursor is None else page.next_cursor.encode(),
    }


def member_workspace(item: MemberWorkspace) -> dict[str, Any]:
    """A workspace in the caller's membership list."""
    workspace = item.workspace
    return {
        "id": str(workspace.id),
        "name": workspace.name,
        "idp_org_id": workspace.idp_org_id,
        "role": item.role,
    }


def workspace(item: Workspace) -> dict[str, Any]:
    """A single workspace."""
    return {
        "id": str(item.id),
        "name": item.name,
        "idp_org_id": item.idp_org_id,
        "created_at": timestamp(item.created_at),
        "updated_at": timestamp(item.updated_at),
    }


def quotas(items: list[Quota]) -> dict[str, Any]:
    """The quotas list."""
    return {
        "data": [{"resource": q.resource.value, "limit": q.limit, "usage": q.usage} for q in items],
        "next_cursor": None,
    }


def _source(item: Backup) -> dict[str, Any] | None:
    source = item.source
    if isinstance(source, S3Source):
        return {
            "type": "s3",
            "endpoint": source.endpoint,
            "bucket": source.bucket,
            "prefix": source.prefix,
        }
    if isinstance(source, PostgresSource):
        return {
            "type": "postgres",
            "host": source.host,
            "port": source.port,
            "database": source.database,
        }
    return None


def backup(item: Backup) -> dict[str, Any]:
    """A backup; credentials are write-only and never appear."""
    destination: dict[str, Any] = {"type": "service"}
    if isinstance(item.destination, CustomerS3Destination):
        destination = {
            "type": "customer_s3",
            "endpoint": item.destination.endpoint,
            "bucket": item.destination.bucket,
            "prefix": item.destination.prefix,
        }
    retention = item.retention
    return {
        "id": str(item.id),
        "workspace_id": str(item.workspace_id),
        "name": item.name,
        "kind": item.kind.value,
        "state": item.state.value,
        "paused": item.paused,
        "source": _source(item),
        "has_credentials": item.has_credentials,
        "schedule": None
        if item.schedule is None
        else {"cron": item.schedule.cron, "timezone": item.schedule.timezone},
        "worker_id": None if item.worker_id is None else str(item.worker_id),
        "retention": None
        if retention is None
        else {
            "expire_after": retention.expire_after.isoformat(),
            "lock_for": retention.lock_for.isoformat(),
        },
        "destination": destination,
        "next_run_at": timestamp(item.next_run_at),
        "created_at": timestamp(item.created_at),
        "updated_at": timestamp(item.updated_at),
    }


def run(item: Run) -> dict[str, Any]:
    """A run; ``artifact_count`` and ``bytes`` count its available artifacts."""
    return {
        "id": str(item.id),
        "backup_id": str(item.backup_id),
        "workspace_id": str(item.workspace_id),
        "state": item.state.value,
        "trigger": item.trigger.value,
        "worker_id": None if item.worker_id is None else str(item.worker_id),
        "created_at": timestamp(item.created_at),
        "started_at": timestamp(item.started_at),
        "finished_at": timestamp(item.finished_at),
        "artifact_count": item.artifact_count,
        "bytes": item.bytes,
        "error": item.error,
    }


def artifact(item: Artifact) -> dict[str, Any]:
    """An artifact record."""
    return {
        "id": str(item.id),
        "run_id": str(item.run_id),
        "backup_id": str(item.backup_id),
        "name": item.name,
        "size": item.size,
        "sha256": item.sha256,
        "state": item.state.value,
        "storage": item.storage.value,
        "created_at": timestamp(item.created_at),
        "expires_at": timestamp(item.expires_at),
        "locked_until": timestamp(item.locked_until),
    }


def absolute(url: str, base_url: str) -> str:
    """A presigned URL; the local-disk storage's paths are resolved against ``base_url``."""
    return base_url + url if url.startswith("/") else url


def upload_plan(plan: UploadPlan, base_url: str) -> dict[str, Any]:
    """``upload-url``: one presigned PUT, or the parts of a multipart upload."""
    if plan.request is not None:
        return {
            "artifact_id": str(plan.artifact.id),
            "method": plan.request.method,
            "url": absolute(plan.request.url, base_url),
            "headers": dict(plan.request.headers),
            "expires_at": timestamp(plan.expires_at),
        }
    return {
        "artifact_id": str(plan.artifact.id),
        "upload_id": plan.artifact.upload_id,
        "part_size": plan.part_size,
        "parts": [
            {
                "number": part.number,
                "size": part.size,
                "method": part.request.method,
                "url": absolute(part.request.url, base_url),
            }
            for part in plan.parts
        ],
        "stored_parts": list(plan.stored_parts),
        "expires_at": timestamp(plan.expires_at),
    }


def download(request: PresignedRequest, expires_at: datetime, base_url: str) -> dict[str, Any]:
    """``download-url``."""
    return {
        "method": request.method,
        "url": absolute(request.url, base_url),
        "expires_at": timestamp(expires_at),
    }


def audit_event(event: AuditEvent) -> dict[str, Any]:
    """An audit event."""
    return {
        "id": str(event.id),
        "occurred_at": timestamp(event.occurred_at),
        "actor": {
            "type": event.actor.type.value,
            "id": None if event.actor.id is None else str(event.actor.id),
        },
        "action": event.action,
        "target": {"type": event.target_type, "id": event.target_id},
        "request_id": event.request_id,
        "outcome": event.outcome.value,
        "changes": None
        if event.changes is None
        else {
            field: {"from": change.before, "to": change.after}
            for field, change in event.changes.items()
        },
    }


def user(item: User) -> dict[str, Any]:
    """A person."""
    return {"id": str(item.id), "email": item.email, "name": item.name}


def issued_session(issued: IssuedSession) -> dict[str, Any]:
    """A new session, with its token (shown once)."""
    return {
        "token": issued.token,
        "expires_at": timestamp(issued.expires_at),
        "user": user(issued.user),
        "workspace_id": None if issued.workspace_id is None else str(issued.workspace_id),
    }


def me(caller: Caller) -> dict[str, Any]:
    """Who the caller is and what it may do."""
    result: dict[str, Any] = {
        "principal": {"type": caller.actor.type.value, "id": str(caller.actor.id)},
        "workspace_id": None if caller.workspace_id is None else str(caller.workspace_id),
        "permissions": sorted(p.value for p in caller.permissions),
    }
    if caller.user is not None:
        result["user"] = user(caller.user)
    return result


def permission_catalog(entries: list[tuple[Permission, str]]) -> dict[str, Any]:
    """The permission catalog."""
    return {"data": [{"slug": p.value, "description": d} for p, d in entries], "next_cursor": None}


def api_key(item: ApiKey) -> dict[str, Any]:
    """An API key (its token is never shown again)."""
    return {
        "id": str(item.id),
        "name": item.name,
        "permissions": [p.value for p in in_catalog_order(item.permissions)],
        "created_at": timestamp(item.created_at),
        "expires_at": timestamp(item.expires_at),
        "last_used_at": timestamp(item.last_used_at),
    }


def issued_api_key(issued: IssuedApiKey) -> dict[str, Any]:
    """A new API key with its token (shown only in this response)."""
    return {**api_key(issued.key), "token": issued.token}


def worker(item: Worker) -> dict[str, Any]:
    """A worker (its token is never shown again)."""
    return {
        "id": str(item.id),
        "name": item.name,
        "created_at": timestamp(item.created_at),
        "last_seen_at": timestamp(item.last_seen_at),
    }


def issued_worker(issued: IssuedWorker) -> dict[str, Any]:
    """A worker with its new token (shown only in this response)."""
    return {**worker(issued.worker), "token": issued.token}


def member(item: Member) -> dict[str, Any]:
    """A member of a workspace; ``user_id`` is the ``{id}`` of the member routes."""
    return {
        "user_id": str(item.user_id),
        "email": item.email,
        "name": item.name,
        "role": item.role,
        "joined_at": timestamp(item.joined_at),
    }


def role(item: Role) -> dict[str, Any]:
    """A built-in or custom role."""
    return {
        "slug": item.slug,
        "name": item.name,
        "permissions": [p.value for p in in_catalog_order(item.permissions)],
        "builtin": item.builtin,
    }


def roles(items: list[Role], next_cursor: str | None = None) -> dict[str, Any]:
    """A page of the role list."""
    return {"data": [role(item) for item in items], "next_cursor": next_cursor}


def invitation(item: Invitation, now: datetime) -> dict[str, Any]:
    """An invitation; ``state`` is ``expired`` once ``expires_at`` has passed unused."""
    return {
        "id": str(item.id),
        "email": item.email,
        "role": item.role,
        "state": item.state(now).value,
        "expires_at": timestamp(item.expires_at),
        "created_at": timestamp(item.created_at),
    }


def membership(item: Membership) -> dict[str, Any]:
    """A membership just made by accepting an invitation."""
    return {
        "workspace_id": str(item.workspace_id),
        "user_id": str(item.user_id),
        "role": item.role,
        "joined_at": timestamp(item.joined_at),
    }
