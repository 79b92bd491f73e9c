"""A snapshot run against a fake service (the batch upload URLs, storage PUTs and a
confirm that takes references): the second run uploads about one chunk for an edit in the
middle of a large file and references the first run's packs; a confirm refused for a
deleted reference writes the lost chunks again in the same run (``index.2``,
``manifest.2``) and confirms; the agent's local catalog keeps what it stored."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import attrs
import httpx2

from strongroom.adapters.wire.artifacts import UploadRequest
from strongroom.client import ConflictError, SingleUpload
from strongroom.client.agent_snapshots import AgentSnapshotState
from strongroom.client.prefetch import ReadAhead, check_plan, restore_plan
from strongroom.client.snapshot_run import Keys, Tree, pack_id_of, rank, run_snapshot
from strongroom.client.snapshots import RepositoryKey, SnapshotReader, generate_identity
from strongroom.client.uploads import Plan

MIB = 1 << 20
IDENTITY, _ = generate_identity()
KEY = RepositoryKey.generate()
KEYS = Keys(KEY, (IDENTITY.recipient,), KEY.seal([IDENTITY.recipient]))


@attrs.define
class FakeService:
    """Runs' artifacts by name, stored bytes by artifact id, refusals to make."""

    stored: dict[str, bytes] = attrs.Factory(dict)
    names: dict[str, dict[str, str]] = attrs.Factory(dict)  # run -> name -> artifact id
    confirmed: dict[str, list[str]] = attrs.Factory(dict)
    refuse_once: set[str] = attrs.Factory(set)
    lock: threading.Lock = attrs.Factory(threading.Lock)

    def upload_urls(self, run_id: str, items: Sequence[UploadRequest]) -> list[Plan]:
        plans: list[Plan] = []
        with self.lock:
            for item in items:
                run = self.names.setdefault(run_id, {})
                artifact = run.setdefault(item.name, str(uuid.uuid4()))
                plans.append(
                    SingleUpload(
                        uuid.UUID(artifact),
                        "PUT",
                        f"http://storage/{artifact}?sha={item.sha256}",
                        {},
                        datetime.now(UTC),
                    )
                )
        return plans

    def confirm_snapshot(self, run_id: str, references: Sequence[str]) -> object:
        refused = self.refuse_once & set(references)
        if refused:
            self.refuse_once -= refused
            gone = sorted(refused)[0]
            raise ConflictError("invalid_state", f"artifact {gone} is deleted", None, 409)
        self.confirmed[run_id] = list(references)
        return None

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        artifact = request.url.path.strip("/")
        if request.method == "PUT":
            body = request.read()
            assert hashlib.sha256(body).hexdigest() == request.url.params["sha"]
            self.stored[artifact] = body
            return httpx2.Response(200)
        return httpx2.Response(404)

    def pack_ids(self) -> dict[str, str]:
        return {
            pack: artifact
            for run in self.names.values()
            for name, artifact in run.items()
            if (pack := pack_id_of(name)) is not None
        }

    def reader(self, run_id: str) -> SnapshotReader:
        run = self.names[run_id]
        manifest = max((n for n in run if rank(n, "manifest")), key=lambda n: rank(n, "manifest"))
        packs = self.pack_ids()

        def fetch(pack_id: str, offset: int, length: int) -> bytes:
            return self.stored[packs[pack_id]][offset : offset + length]

        return SnapshotReader(
            IDENTITY, self.stored[run["repository-key"]], self.stored[run[manifest]], fetch
        )


def tree(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    for index in range(20):
        (root / "docs" / f"{index}.txt").write_text(f"note {index} " * 500)
    (root / "big.bin").write_bytes(os.urandom(8 * MIB))
    return root


def run(
    service: FakeService, root: Path, state: AgentSnapshotState, run_id: str
) -> tuple[str, object]:
    with httpx2.Client(transport=httpx2.MockTransport(service.handler)) as http:
        outcome = run_snapshot(
            service,
            http,
            run_id,
            Tree(str(root)),
            KEYS,
            state.catalog(KEY),
            state.packs(),
            state.cache(),
        )
    state.keep(outcome)
    return run_id, outcome


def test_a_second_run_uploads_about_one_chunk_and_references_the_first(tmp_path: Path) -> None:
    service, state = FakeService(), AgentSnapshotState(tmp_path / "state")
    root = tree(tmp_path / "tree")
    first, one = run(service, root, state, "run-1")
    with (root / "big.bin").open("r+b") as big:
        big.seek(4 * MIB)
        big.write(b"an edit in the middle")
    second, two = run(service, root, state, "run-2")
    assert one.bytes_uploaded > 8 * MIB  # type: ignore[attr-defined]
    assert two.bytes_uploaded < 3 * MIB  # type: ignore[attr-defined]
    assert two.files_unchanged == 20  # type: ignore[attr-defined]
    first_packs = {a for n, a in service.names[first].items() if n.startswith("pack-")}
    assert set(service.confirmed[second]) <= first_packs
    assert service.confirmed[second]
    target = tmp_path / "restored"
    service.reader(second).restore(target)
    assert (target / "big.bin").read_bytes() == (root / "big.bin").read_bytes()


def test_a_refused_reference_packs_its_chunks_again_in_the_same_run(tmp_path: Path) -> None:
    service, state = FakeService(), AgentSnapshotState(tmp_path / "state")
    root = tree(tmp_path / "tree")
    first, _ = run(service, root, state, "run-1")
    (root / "new.txt").write_text("new")
    deleted = sorted(a for n, a in service.names[first].items() if n.startswith("pack-"))[0]
    service.refuse_once = {deleted}
    second, outcome = run(service, root, state, "run-2")
    assert outcome.retried  # type: ignore[attr-defined]
    assert deleted not in service.confirmed[second]
    assert {"index.2", "manifest.2"} <= set(service.names[second])
    assert deleted not in state.packs().values()
    target = tmp_path / "restored"
    service.reader(second).restore(target)
    assert (target / "big.bin").read_bytes() == (root / "big.bin").read_bytes()
    assert (target / "new.txt").read_text() == "new"


def test_a_cold_start_uploads_everything_again(tmp_path: Path) -> None:
    service = FakeService()
    root = tree(tmp_path / "tree")
    run(service, root, AgentSnapshotState(tmp_path / "a"), "run-1")
    _, again = run(service, root, AgentSnapshotState(tmp_path / "b"), "run-2")
    assert again.bytes_uploaded > 8 * MIB  # type: ignore[attr-defined]
    assert service.confirmed["run-2"] == []
    assert all(re.fullmatch(r"[0-9a-f]{64}", pack) for pack in service.pack_ids())


def test_read_ahead_foresees_every_read_of_a_restore_and_a_check(tmp_path: Path) -> None:
    """The plan is what the format's restore and check ask for, in order (none unplanned),
    whole or partial; the restored bytes are the same."""
    service, state = FakeService(), AgentSnapshotState(tmp_path / "state")
    root = tree(tmp_path / "tree")
    os.link(root / "docs" / "3.txt", root / "docs" / "link.txt")
    run_id, _ = run(service, root, state, "run-1")
    for include in ((), ("big.bin",), ("docs/link.txt",)):
        reader = service.reader(run_id)
        ahead = ReadAhead(reader.fetch, restore_plan(reader.manifest, include))
        reader.fetch = ahead
        target = tmp_path / f"restored-{len(include)}-{include[:1]}"
        reader.restore(target, include)
        ahead.close()
        assert ahead.unplanned == 0, include
        for name in include or ("big.bin", "docs/3.txt"):
            assert (target / name).read_bytes() == (root / name).read_bytes()
    reader = service.reader(run_id)
    ahead = ReadAhead(reader.fetch, check_plan(reader.manifest, True))
    reader.fetch = ahead
    assert reader.check(read_data=True).ok
    assert ahead.unplanned == 0
