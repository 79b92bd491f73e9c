"""Snapshots through the real service (contract 14), on SQLite and local disk, and on
PostgreSQL and SeaweedFS: a tree written by ``strongroom.client.snapshots`` goes up through
the batch upload URLs (its packs, index, manifest and sealed repository key); a second
snapshot of the changed tree uploads only its new packs and confirms with ``references``
to the first run's; both come back bit for bit through the batch download URLs with
``Range``; and no stored object, nor the database, holds a byte of the tree's plaintext."""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest
from cloud_sources import minio_of
from integration_world import expect, on_postgres_and_seaweed, workspace_admin

from strongroom.client.snapshots import (
    Catalog,
    Pack,
    RepositoryKey,
    SnapshotReader,
    generate_identity,
    write_snapshot,
)
from support.postgres import PostgresServer
from support.seaweed import SeaweedServer
from support.serve_process import free_port, serving
from support.trees import CONTENT_MARKER, MIB, NAME_MARKER, every_kind_tree
from support.world import bearer

MARKERS = (CONTENT_MARKER.encode(), NAME_MARKER.encode(), b"edit-marker-DELTA-55e0")
RETENTION = {"expire_after": "P30D", "lock_for": "PT1H"}


@attrs.frozen
class Service:
    """A running server, and every byte it stores (objects, and the database's files)."""

    client: httpx2.Client
    stored: Callable[[], Iterator[bytes]]


def _files_under(root: Path) -> Iterator[bytes]:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield os.fsencode(path.relative_to(root)) + b"\n" + path.read_bytes()


@pytest.fixture(params=["sqlite-local", "postgres-seaweedfs"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    data_dir, log = tmp_path / "data", tmp_path / "serve.log"
    data_dir.mkdir()
    configuration = {"STRONGROOM_SIGNUP": "true", "STRONGROOM_LOG_FORMAT": "text"}
    if request.param == "sqlite-local":
        with (
            serving(data_dir, free_port(), log, configuration) as url,
            httpx2.Client(base_url=url, trust_env=False, timeout=60) as client,
        ):
            yield Service(client, lambda: _files_under(data_dir))
        return
    pg_server: PostgresServer = request.getfixturevalue("pg_server")
    seaweed: SeaweedServer = request.getfixturevalue("seaweed")
    bucket = "strongroom-" + secrets.token_hex(6)
    with on_postgres_and_seaweed(pg_server, seaweed, bucket, "strongroom_snap") as stored_in:
        configuration |= stored_in
        root = minio_of(seaweed)

        def objects() -> Iterator[bytes]:
            for item in root.list_objects(bucket, recursive=True, include_version=True):
                response = root.get_object(bucket, item.object_name, version_id=item.version_id)
                try:
                    yield response.read()
                finally:
                    response.close()
                    response.release_conn()

        with (
            serving(data_dir, free_port(), log, configuration) as url,
            httpx2.Client(base_url=url, trust_env=False, timeout=60) as client,
        ):
            yield Service(client, objects)


def describe(root: Path) -> dict[str, tuple[Any, ...]]:
    """What a restore must keep, per relative path."""
    out: dict[str, tuple[Any, ...]] = {}
    for path in [root, *sorted(root.rglob("*"))]:
        found = os.lstat(path)
        rel = str(path.relative_to(root))
        if stat.S_ISLNK(found.st_mode):
            out[rel] = ("link", os.readlink(path), found.st_mtime_ns)
        elif stat.S_ISDIR(found.st_mode):
            out[rel] = ("dir", found.st_mode, found.st_mtime_ns)
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[rel] = ("file", found.st_mode, found.st_mtime_ns, digest, found.st_nlink)
    return out


@attrs.define
class Writer:
    """A person's backup through the HTTP API: runs, batches, confirms with references."""

    client: httpx2.Client
    headers: dict[str, str]
    backup_id: str
    key: RepositoryKey
    recipients: list[str]
    # Every pack stored so far: pack id -> artifact id.
    packs: dict[str, str] = attrs.field(factory=dict)
    indexes: list[bytes] = attrs.field(factory=list)

    def snapshot(self, tree: Path) -> dict[str, str]:
        """One run: its objects by name -> artifact id."""
        run = expect(
            self.client.post("/v1/runs", json={"backup_id": self.backup_id}, headers=self.headers),
            201,
        )
        emitted: list[Pack] = []
        written = write_snapshot(
            tree,
            repository_key=self.key,
            recipients=self.recipients,
            catalog=Catalog.from_indexes(self.key, self.indexes),
            emit_pack=emitted.append,
        )
        objects = {f"pack-{pack.info.id}": pack.data for pack in emitted}
        objects |= {
            "index": written.index,
            "manifest": written.manifest,
            "repository-key": self.key.seal(self.recipients),
        }
        asked = [
            {"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for name, data in objects.items()
        ]
        plans = expect(
            self.client.post(
                f"/v1/runs/{run['id']}/upload-urls",
                json={"artifacts": asked},
                headers=self.headers,
            ),
            201,
        )["data"]
        ids = {}
        for (name, data), plan in zip(objects.items(), plans, strict=True):
            put = httpx2.put(plan["url"], content=data, headers=plan["headers"], timeout=60)
            assert put.status_code == 200, put.text
            ids[name] = plan["artifact_id"]
        references = [self.packs[pack_id] for pack_id in written.references]
        confirmed = expect(
            self.client.post(
                f"/v1/runs/{run['id']}/confirm",
                json={"references": references},
                headers=self.headers,
            ),
            200,
        )
        assert confirmed["state"] == "succeeded"
        self.packs |= {pack.info.id: ids[f"pack-{pack.info.id}"] for pack in emitted}
        self.indexes.append(written.index)
        return ids | {f"pack-{pack_id}": self.packs[pack_id] for pack_id in written.references}

    def urls(self, artifact_ids: list[str]) -> dict[str, str]:
        data = expect(
            self.client.post(
                "/v1/artifacts/download-urls",
                json={"artifact_ids": artifact_ids},
                headers=self.headers,
            ),
            200,
        )["data"]
        assert [item["artifact_id"] for item in data] == artifact_ids
        return {item["artifact_id"]: item["url"] for item in data}


def restore(writer: Writer, objects: dict[str, str], identity: Any, target: Path) -> None:
    """Restore one run from the service: whole small objects, packs by byte ranges."""
    urls = writer.urls(list(objects.values()))
    by_name = {name: urls[artifact_id] for name, artifact_id in objects.items()}
    key = httpx2.get(by_name["repository-key"], timeout=60).content
    manifest = httpx2.get(by_name["manifest"], timeout=60).content

    def fetch(pack_id: str, offset: int, length: int) -> bytes:
        last = offset + length - 1
        got = httpx2.get(
            by_name[f"pack-{pack_id}"], headers={"Range": f"bytes={offset}-{last}"}, timeout=60
        )
        assert got.status_code == 206, got.status_code
        assert got.headers["content-range"].startswith(f"bytes {offset}-{last}/")
        return got.content

    SnapshotReader(identity, key, manifest, fetch).restore(target)


def test_snapshots_round_trip_deduplicated_without_plaintext(
    service: Service, tmp_path: Path
) -> None:
    client = service.client
    workspace, token = workspace_admin(client, f"snap-{secrets.token_hex(4)}@example.com")
    headers = bearer(token)
    identity, _ = generate_identity()
    recipients = [identity.recipient]
    backup = expect(
        client.post(
            f"/v1/workspaces/{workspace['id']}/backups",
            json={"name": "Home", "kind": "manual", "encryption": {"recipients": recipients}},
            headers=headers,
        ),
        201,
    )
    assert backup["format"] == "snapshot"
    expect(
        client.patch(f"/v1/backups/{backup['id']}", json={"retention": RETENTION}, headers=headers),
        200,
    )
    writer = Writer(client, headers, backup["id"], RepositoryKey.generate(), recipients)
    tree = tmp_path / "tree"
    every_kind_tree(tree, big=3 * MIB)
    first_tree = describe(tree)
    first = writer.snapshot(tree)
    (tree / "new.txt").write_bytes(MARKERS[2] * 100)
    second = writer.snapshot(tree)
    second_tree = describe(tree)
    shared = {name for name in first if name.startswith("pack-")} & set(second)
    assert shared, "the second snapshot references the first run's packs"
    uploaded = {name for name in second if name.startswith("pack-")} - shared
    assert len(uploaded) == 1, "only the new file's chunks went up again"

    listed = expect(
        client.get(f"/v1/workspaces/{workspace['id']}/artifacts", headers=headers), 200
    )["data"]
    locks = {artifact["id"]: artifact["locked_until"] for artifact in listed}
    for name in shared:
        assert locks[first[name]] == locks[second["index"]]

    restore(writer, first, identity, tmp_path / "first")
    assert describe(tmp_path / "first") == first_tree
    restore(writer, second, identity, tmp_path / "second")
    assert describe(tmp_path / "second") == second_tree

    for stored in service.stored():
        for marker in MARKERS:
            assert marker not in stored
