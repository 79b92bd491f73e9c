"""A person's view of a snapshot backup on the service (``artifacts:download``): its
artifacts, the sealed repository key, the indexes of earlier runs (to deduplicate from any
machine), a snapshot's manifest, and pack bytes by range through batched presigned URLs."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any
from uuid import UUID

import attrs

from strongroom.adapters.wire.artifacts import Artifact
from strongroom.client.batches import Encryption, backup_encryption
from strongroom.client.calls import Call
from strongroom.client.clients import Client
from strongroom.client.errors import NotFoundError
from strongroom.client.packs import UrlExpiredError, get_range
from strongroom.client.snapshot_run import (
    INDEX,
    MANIFEST,
    REPOSITORY_KEY,
    pack_id_of,
    rank,
)
from strongroom.client.snapshots import Catalog, Identity, RepositoryKey, SnapshotReader

BATCH = 1000


class SnapshotNotFoundError(Exception):
    """The id names no snapshot run (nor an artifact of one)."""


def backup_document(client: Client, backup_id: str | UUID) -> dict[str, Any]:
    """``GET /v1/backups/{id}`` as the API wrote it (fields this SDK's model lacks kept)."""
    document: dict[str, Any] = client.perform(
        Call("GET", f"/v1/backups/{backup_id}", lambda response: response.json())
    )
    return document


@attrs.define
class Remote:
    """One backup's artifacts, read with a person's credential."""

    client: Client
    backup_id: UUID
    workspace_id: UUID
    encryption: Encryption | None
    artifacts: list[Artifact] = attrs.Factory(list)
    bytes_downloaded: int = 0
    _urls: dict[str, str] = attrs.Factory(dict)
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    @classmethod
    def open(cls, client: Client, backup_id: str | UUID) -> Remote:
        document = backup_document(client, backup_id)
        remote = cls(
            client,
            UUID(str(document["id"])),
            UUID(str(document["workspace_id"])),
            backup_encryption(document),
        )
        remote.refresh()
        return remote

    def refresh(self) -> None:
        """The backup's available artifacts, as the service lists them now."""
        self.artifacts = [
            a
            for a in self.client.list_artifacts.iterate(self.workspace_id, limit=200)
            if a.backup_id == self.backup_id and a.state == "available"
        ]

    # -- what the backup holds ---------------------------------------------------------

    def packs(self) -> dict[str, str]:
        """Pack id -> artifact id of every available pack of the backup."""
        found: dict[str, str] = {}
        for artifact in self.artifacts:
            pack = pack_id_of(artifact.name)
            if pack is not None:
                found.setdefault(pack, str(artifact.id))
        return found

    def runs(self) -> dict[UUID, list[Artifact]]:
        """The backup's snapshot runs (those holding a manifest) and their artifacts."""
        by_run: dict[UUID, list[Artifact]] = {}
        for artifact in self.artifacts:
            by_run.setdefault(artifact.run_id, []).append(artifact)
        return {
            run: items
            for run, items in by_run.items()
            if any(rank(a.name, MANIFEST) is not None for a in items)
        }

    def repository_key(self, identity: Identity) -> RepositoryKey | None:
        """The repository key of the newest run holding one, opened by ``identity``."""
        sealed = sorted(
            (a for a in self.artifacts if a.name == REPOSITORY_KEY),
            key=lambda a: a.created_at,
            reverse=True,
        )
        if not sealed:
            return None
        return RepositoryKey.unseal(self.get(str(sealed[0].id)), identity)

    def catalog(self, key: RepositoryKey) -> Catalog:
        """The chunks of every index of the backup (whose packs are still available)."""
        indexes = [str(a.id) for a in self.artifacts if rank(a.name, INDEX) is not None]
        self.prefetch(indexes)
        return Catalog.from_indexes(key, (self.get(i) for i in indexes))

    # -- bytes -------------------------------------------------------------------------

    def prefetch(self, artifact_ids: Iterable[str]) -> None:
        """Ask for the download URLs of ``artifact_ids`` (in batches) before they are read."""
        wanted = [i for i in dict.fromkeys(artifact_ids) if i not in self._urls]
        for start in range(0, len(wanted), BATCH):
            batch: list[UUID | str] = [*wanted[start : start + BATCH]]
            answer = self.client.request_downloads(batch)
            with self._lock:
                self._urls.update({str(u.artifact_id): u.url for u in answer.data})

    def get(self, artifact_id: str, offset: int | None = None, length: int | None = None) -> bytes:
        """An artifact's bytes, or ``length`` bytes of it from ``offset``."""
        for _ in range(2):
            if artifact_id not in self._urls:
                self.prefetch([artifact_id])
            try:
                data = get_range(self.client.http, self._urls[artifact_id], offset, length)
            except UrlExpiredError:
                with self._lock:
                    self._urls.pop(artifact_id, None)
                continue
            with self._lock:
                self.bytes_downloaded += len(data)
            return data
        raise UrlExpiredError("the download URLs kept expiring")

    # -- snapshots ---------------------------------------------------------------------

    def reader(self, run_id: UUID, identity: Identity) -> SnapshotReader:
        """The snapshot of ``run_id`` opened with ``identity``; packs fetched by range."""
        items = self.runs().get(run_id)
        if items is None:
            raise SnapshotNotFoundError(f"run {run_id} holds no snapshot of this backup")
        manifest = max(
            (a for a in items if rank(a.name, MANIFEST) is not None),
            key=lambda a: rank(a.name, MANIFEST) or 0,
        )
        sealed_key = next((a for a in items if a.name == REPOSITORY_KEY), None)
        if sealed_key is None:
            raise SnapshotNotFoundError(f"run {run_id} holds no repository key")
        self.prefetch([str(manifest.id), str(sealed_key.id)])
        packs = self.packs()

        def fetch(pack_id: str, offset: int, length: int) -> bytes:
            artifact = packs.get(pack_id)
            if artifact is None:
                raise SnapshotNotFoundError(f"pack {pack_id} is no longer stored")
            return self.get(artifact, offset, length)

        reader = SnapshotReader(
            identity, self.get(str(sealed_key.id)), self.get(str(manifest.id)), fetch
        )
        self.prefetch(packs[p] for p in reader.manifest.packs() if p in packs)
        return reader


def locate_snapshot(client: Client, workspace_id: UUID, ref: UUID) -> tuple[UUID, UUID]:
    """(backup id, run id) of SNAPSHOT: a run id, or the id of any artifact of its run."""
    try:
        run = client.get_run(ref)
        return run.backup_id, run.id
    except NotFoundError:
        pass
    for state in (None, "deleted"):
        for artifact in client.list_artifacts.iterate(workspace_id, state=state, limit=200):
            if artifact.id == ref:
                return artifact.backup_id, artifact.run_id
    raise SnapshotNotFoundError(f"no run or artifact {ref} in this workspace")
