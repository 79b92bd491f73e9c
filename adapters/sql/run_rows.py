"""Runs, their artifacts and restores to query parameters and back (see ``rows``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from strongroom.adapters.sql.location_rows import source_from_json, source_to_json
from strongroom.adapters.sql.rows import (
    Codec,
    Params,
    Row,
    opt_timestamp,
    opt_uuid,
    read_opt_bytes,
    read_opt_timestamp,
    read_opt_uuid,
)
from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage, Verification
from strongroom.domain.audit import JsonValue
from strongroom.domain.restores import Restore, RestoreState, RestoreTarget
from strongroom.domain.runs import Progress, Run, RunState, RunTrigger


def run_params(run: Run, codec: Codec) -> Params:
    """The columns of a run."""
    return {
        "id": codec.uuid(run.id),
        "workspace_id": codec.uuid(run.workspace_id),
        "backup_id": codec.uuid(run.backup_id),
        "state": run.state.value,
        "trigger": run.trigger.value,
        "worker_id": opt_uuid(codec, run.worker_id),
        "created_at": codec.timestamp(run.created_at),
        "started_at": opt_timestamp(codec, run.started_at),
        "finished_at": opt_timestamp(codec, run.finished_at),
        "artifact_count": run.artifact_count,
        "bytes": run.bytes,
        "error": run.error,
        "attempt": run.attempt,
        "lease_expires_at": opt_timestamp(codec, run.lease_expires_at),
        "cancel_requested": run.cancel_requested,
        "progress": None if run.progress is None else codec.json(progress_to_json(run.progress)),
    }


def progress_to_json(progress: Progress) -> dict[str, JsonValue]:
    """A run's progress as a JSON object; ``updated_at`` to the microsecond, in UTC."""
    updated_at = progress.updated_at
    return {
        "bytes_done": progress.bytes_done,
        "bytes_total": progress.bytes_total,
        "message": progress.message,
        "updated_at": None if updated_at is None else updated_at.astimezone(UTC).isoformat(),
    }


def progress_from_json(value: Mapping[str, Any]) -> Progress:
    """A run's progress from its JSON object."""
    updated_at = value["updated_at"]
    return Progress(
        bytes_done=value["bytes_done"],
        bytes_total=value["bytes_total"],
        message=value["message"],
        updated_at=None if updated_at is None else datetime.fromisoformat(updated_at),
    )


def run_from_row(row: Row, codec: Codec) -> Run:
    """A run from its columns."""
    progress = row["progress"]
    return Run(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        backup_id=codec.read_uuid(row["backup_id"]),
        state=RunState(row["state"]),
        trigger=RunTrigger(row["trigger"]),
        created_at=codec.read_timestamp(row["created_at"]),
        worker_id=read_opt_uuid(codec, row["worker_id"]),
        started_at=read_opt_timestamp(codec, row["started_at"]),
        finished_at=read_opt_timestamp(codec, row["finished_at"]),
        artifact_count=row["artifact_count"],
        bytes=row["bytes"],
        error=row["error"],
        attempt=row["attempt"],
        lease_expires_at=read_opt_timestamp(codec, row["lease_expires_at"]),
        cancel_requested=bool(row["cancel_requested"]),
        progress=None if progress is None else progress_from_json(codec.read_json(progress)),
    )


def restore_params(restore: Restore, codec: Codec) -> Params:
    """The columns of a restore: the target as JSON, the credentials as sealed bytes."""
    return {
        "id": codec.uuid(restore.id),
        "workspace_id": codec.uuid(restore.workspace_id),
        "artifact_id": codec.uuid(restore.artifact_id),
        "target": codec.json(source_to_json(restore.target)),
        "state": restore.state.value,
        "sealed_credentials": restore.sealed_credentials,
        "error": restore.error,
        "created_at": codec.timestamp(restore.created_at),
        "started_at": opt_timestamp(codec, restore.started_at),
        "finished_at": opt_timestamp(codec, restore.finished_at),
        "attempt": restore.attempt,
        "lease_expires_at": opt_timestamp(codec, restore.lease_expires_at),
    }


def restore_from_row(row: Row, codec: Codec) -> Restore:
    """A restore from its columns."""
    target = source_from_json(codec.read_json(row["target"]))
    if not isinstance(target, RestoreTarget):
        raise ValueError(f"restore {row['id']} has a target of unknown type")
    return Restore(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        artifact_id=codec.read_uuid(row["artifact_id"]),
        target=target,
        state=RestoreState(row["state"]),
        created_at=codec.read_timestamp(row["created_at"]),
        started_at=read_opt_timestamp(codec, row["started_at"]),
        finished_at=read_opt_timestamp(codec, row["finished_at"]),
        error=row["error"],
        sealed_credentials=read_opt_bytes(row["sealed_credentials"]),
        attempt=row["attempt"],
        lease_expires_at=read_opt_timestamp(codec, row["lease_expires_at"]),
    )


def artifact_params(artifact: Artifact, codec: Codec) -> Params:
    """The columns of an artifact."""
    return {
        "id": codec.uuid(artifact.id),
        "workspace_id": codec.uuid(artifact.workspace_id),
        "backup_id": codec.uuid(artifact.backup_id),
        "run_id": codec.uuid(artifact.run_id),
        "name": artifact.name,
        "size": artifact.size,
        "sha256": artifact.sha256,
        "state": artifact.state.value,
        "storage": artifact.storage.value,
        "object_key": artifact.object_key,
        "upload_id": artifact.upload_id,
        "created_at": codec.timestamp(artifact.created_at),
        "expires_at": opt_timestamp(codec, artifact.expires_at),
        "locked_until": opt_timestamp(codec, artifact.locked_until),
        "verification": None if artifact.verification is None else artifact.verification.value,
        "verified_at": opt_timestamp(codec, artifact.verified_at),
        "held": artifact.held,
    }


def artifact_from_row(row: Row, codec: Codec) -> Artifact:
    """An artifact from its columns."""
    return Artifact(
        id=codec.read_uuid(row["id"]),
        workspace_id=codec.read_uuid(row["workspace_id"]),
        backup_id=codec.read_uuid(row["backup_id"]),
        run_id=codec.read_uuid(row["run_id"]),
        name=row["name"],
        size=row["size"],
        sha256=row["sha256"],
        state=ArtifactState(row["state"]),
        storage=ArtifactStorage(row["storage"]),
        object_key=row["object_key"],
        created_at=codec.read_timestamp(row["created_at"]),
        upload_id=row["upload_id"],
        expires_at=read_opt_timestamp(codec, row["expires_at"]),
        locked_until=read_opt_timestamp(codec, row["locked_until"]),
        verification=None if row["verification"] is None else Verification(row["verification"]),
        verified_at=read_opt_timestamp(codec, row["verified_at"]),
        held=bool(row["held"]),
    )
