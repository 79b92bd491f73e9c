"""The SDK's ``Client`` seen as the narrow APIs that push, the agent and restore use."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from strongroom.adapters.wire.artifacts import UploadRequest
from strongroom.adapters.wire.backups import Backup
from strongroom.adapters.wire.claims import Claim
from strongroom.adapters.wire.runs import Heartbeat, ProgressReport, Run
from strongroom.client.clients import Client
from strongroom.client.uploads import Plan


class ClientApi:
    """``PushApi`` and ``AgentApi`` over one ``Client``."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def get_backup(self, backup_id: str) -> Backup:
        """``GET /v1/backups/{id}``."""
        return self.client.get_backup(backup_id)

    def create_run(self, backup_id: str) -> Run:
        """``POST /v1/runs``."""
        return self.client.start_run(backup_id)

    def get_run(self, run_id: str) -> Run:
        """``GET /v1/runs/{id}``."""
        return self.client.get_run(run_id)

    def upload_url(self, run_id: str, name: str, size: int, sha256: str) -> Plan:
        """``POST /v1/runs/{id}/upload-url``."""
        return self.client.request_upload(run_id, name, size, sha256)

    def confirm(self, run_id: str) -> Run:
        """``POST /v1/runs/{id}/confirm``."""
        return self.client.confirm_run(run_id)

    def upload_urls(self, run_id: str, items: Sequence[UploadRequest]) -> list[Plan]:
        """``POST /v1/runs/{id}/upload-urls`` (in batches of 1000)."""
        plans: list[Plan] = []
        for start in range(0, len(items), 1000):
            batch = list(items[start : start + 1000])
            plans.extend(self.client.request_uploads(run_id, batch).data)
        return plans

    def confirm_snapshot(self, run_id: str, references: Sequence[str]) -> Run:
        """``POST /v1/runs/{id}/confirm`` with the snapshot's references."""
        ids: list[UUID | str] = [*references]
        return self.client.confirm_run(run_id, references=ids)

    def claim(self, wait_seconds: int) -> Claim | None:
        """``POST /v1/claims`` (long poll)."""
        return self.client.claim_run(wait_seconds=wait_seconds)

    def heartbeat(
        self, run_id: str, bytes_done: int, bytes_total: int | None, message: str | None
    ) -> Heartbeat:
        """``POST /v1/runs/{id}/heartbeat`` with progress."""
        report = ProgressReport(bytes_done=bytes_done, bytes_total=bytes_total, message=message)
        return self.client.heartbeat_run(run_id, progress=report)

    def fail(self, run_id: str, error: str) -> Run:
        """``POST /v1/runs/{id}/fail``."""
        return self.client.fail_run(run_id, error)
