"""Restore drills and immutability proofs on real parts (contract 16): a cloud backup of a
real PostgreSQL database and of a real SeaweedFS bucket, executed, then drilled into the
service's own scratch targets (a database created and dropped on the drill server, a
directory of its own); a deliberately corrupted artifact fails its drill naming what
differs. The proof of a workspace on SeaweedFS lists every artifact with the lock the
store reports, and ``strongroom proof verify`` accepts it and refuses it tampered."""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import psycopg
import pytest
import zstandard
from cloud_sources import PREFIX, source_bucket, unpack
from test_cloud_executor import (
    LOOPBACK,
    cloud_backup,
    execute_next,
    facade_on,
    postgres_changes,
)

from strongroom.adapters.proofs.signing import ProofSigner
from strongroom.adapters.restores.drills import ServiceDrillTargets
from strongroom.adapters.runtime.drills import DrillRunner
from strongroom.adapters.storage.s3 import S3Storage
from strongroom.adapters.wire.present import render
from strongroom.domain.artifacts import Artifact
from strongroom.domain.backups import BackupChanges, S3Source
from strongroom.domain.drills import Drill, DrillState
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.runs import RunState
from strongroom.entrypoints.cli import main
from strongroom.ports.driving import Strongroom
from support.people import retention, workspace_admin
from support.postgres import PostgresServer, scratch_database
from support.seaweed import SeaweedServer, s3_storage

assert LOOPBACK  # the executor's tests' policy: loopback sources allowed


def fill(conninfo: str) -> None:
    """Two tables of several types, and a view (no rows of its own)."""
    with psycopg.connect(conninfo, autocommit=True) as db:
        db.execute(
            """
            CREATE TABLE customers (id bigint PRIMARY KEY, name text, balance numeric(12, 2),
                                    joined timestamptz, tags text[]);
            CREATE TABLE events (id bigserial PRIMARY KEY, customer_id bigint, payload jsonb,
                                 blob bytea, happened date);
            CREATE VIEW rich AS SELECT * FROM customers WHERE balance > 500;
            INSERT INTO customers SELECT g, 'customer ' || g, (g * 7.31) % 1000,
                   now() - g * interval '1 hour', ARRAY['t' || (g % 5), 'été']
            FROM generate_series(1, 2000) AS g;
            INSERT INTO events (customer_id, payload, blob, happened)
            SELECT 1 + g % 2000, jsonb_build_object('n', g), decode(md5(g::text), 'hex'),
                   date '2030-01-01' + g % 365
            FROM generate_series(1, 3000) AS g;
            """
        )


def drill_databases(server: PostgresServer) -> list[str]:
    with server.admin() as admin:
        rows = admin.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'strongroom\\_drill\\_%'"
        ).fetchall()
    return [str(row[0]) for row in rows]


async def drill(facade: Strongroom, admin: Caller, backup_id: UUID) -> Drill:
    """Ask for a drill and run it to its end."""
    asked = await facade.drills.create(admin, backup_id)
    (done,) = await DrillRunner(facade.drills).run_queued()
    assert done.id == asked.id
    listed = await facade.drills.list_for_backup(admin, backup_id, PageRequest(5))
    assert listed.items[0] == done
    return done


async def only_artifact(facade: Strongroom, admin: Caller) -> Artifact:
    page = await facade.artifacts.list_in(admin, admin.scoped_workspace(), False, PageRequest(5))
    (artifact,) = page.items
    return artifact


def put_over(storage: S3Storage, key: str, data: bytes) -> None:
    """A new current version of ``key`` (what a store's fault or an intruder could leave)."""
    storage.client.put_object(storage.bucket, key, io.BytesIO(data), len(data))


def drilling_facade(
    seaweed: SeaweedServer, tmp_path: Path, drill_server: str | None = None
) -> tuple[Strongroom, S3Storage]:
    """A facade on SeaweedFS whose drills scratch in ``tmp_path`` and on ``drill_server``."""
    storage = s3_storage(seaweed)
    facade = facade_on(storage)
    facade.drills.targets = ServiceDrillTargets(tmp_path / "drills", drill_server)
    return facade, storage


class TestPostgres:
    def test_a_drill_restores_the_dump_and_checks_every_table(
        self, seaweed: SeaweedServer, pg_server: PostgresServer, tmp_path: Path
    ) -> None:
        """Row counts and checksums recorded in the dump's snapshot match the scratch
        database's; the scratch database is gone afterwards; the customer's database is
        untouched (its tables as they were)."""
        with scratch_database(pg_server, "strongroom_drillsrc") as source:
            fill(source)
            facade, _ = drilling_facade(seaweed, tmp_path, pg_server.admin_conninfo)

            async def scenario() -> Drill:
                ada, _ = await workspace_admin(facade, "ada@example.com")
                changes = postgres_changes(source, retention=retention("P30D", "PT1H"))
                backup_id = await cloud_backup(facade, ada, changes)
                await facade.runs.trigger(ada, backup_id)
                ended = await execute_next(facade)
                assert ended.state is RunState.SUCCEEDED, ended.error
                done = await drill(facade, ada, backup_id)
                assert done.run_id == ended.id
                return done

            done = asyncio.run(scenario())
            assert done.state is DrillState.SUCCEEDED, done.error
            assert done.error is None
            assert done.checks["artifact_intact"] is True
            assert (done.checks["tables"], done.checks["rows"]) == (2, 5000)
            assert done.checks["tables_differing"] == 0
            assert done.restore_seconds is not None
            assert done.restore_seconds > 0
            assert done.bytes is not None
            assert done.bytes > 0
            assert drill_databases(pg_server) == []

    def test_a_corrupted_dump_fails_its_drill_naming_the_table(
        self, seaweed: SeaweedServer, pg_server: PostgresServer, tmp_path: Path
    ) -> None:
        """The artifact replaced in storage by a dump that lost rows of one table: the
        drill fails naming that table's row counts, and the artifact's digest."""
        with scratch_database(pg_server, "strongroom_drillsrc") as source:
            fill(source)
            facade, storage = drilling_facade(seaweed, tmp_path, pg_server.admin_conninfo)

            async def scenario() -> Drill:
                ada, _ = await workspace_admin(facade, "ada@example.com")
                changes = postgres_changes(source, retention=retention("P30D", "PT0S"))
                backup_id = await cloud_backup(facade, ada, changes)
                await facade.runs.trigger(ada, backup_id)
                assert (await execute_next(facade)).state is RunState.SUCCEEDED
                artifact = await only_artifact(facade, ada)
                with psycopg.connect(source, autocommit=True) as db:
                    db.execute("DELETE FROM events WHERE id <= 10")
                await facade.runs.trigger(ada, backup_id)
                assert (await execute_next(facade)).state is RunState.SUCCEEDED
                newest = next(
                    a
                    for a in (
                        await facade.artifacts.list_in(
                            ada, ada.scoped_workspace(), False, PageRequest(5)
                        )
                    ).items
                    if a.id != artifact.id
                )
                response = storage.client.get_object(storage.bucket, artifact.object_key)
                smaller = response.read()
                response.close()
                # The newest artifact's bytes become the older dump's (10 rows fewer).
                put_over(storage, newest.object_key, smaller)
                return await drill(facade, ada, backup_id)

            done = asyncio.run(scenario())
            assert done.state is DrillState.FAILED
            assert done.error is not None
            assert "table public.events has 3000 rows, 2990 were backed up" in done.error
            assert "the artifact's bytes differ from its recorded size and sha256" in done.error
            assert done.checks["tables_differing"] == 1
            assert drill_databases(pg_server) == []


def rebuilt(archive: bytes, changed_key: str) -> bytes:
    """The archive with one object's bytes changed (same size), its manifest untouched."""
    members, manifest = unpack(archive)
    out = io.BytesIO()
    with (
        zstandard.ZstdCompressor().stream_writer(out, closefd=False) as compressed,
        tarfile.open(fileobj=compressed, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for member, content in members:
            flipped = member.pax_headers.get("STRONGROOM.key") == changed_key
            data = bytes(b ^ 0xFF for b in content) if flipped else content
            tar.addfile(member, io.BytesIO(data))
        raw = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(raw)
        tar.addfile(info, io.BytesIO(raw))
    return out.getvalue()


class TestS3:
    def backup(self, facade: Strongroom, seaweed: SeaweedServer, lock_for: str) -> Any:
        bucket = source_bucket(seaweed, small=20)

        async def scenario() -> tuple[Caller, UUID, dict[str, bytes]]:
            ada, _ = await workspace_admin(facade, "ada@example.com")
            changes = BackupChanges(
                source=S3Source(seaweed.endpoint, bucket.name, PREFIX),
                credentials={
                    "access_key_id": seaweed.access_key,
                    "secret_access_key": seaweed.secret_key,
                },
                retention=retention("P30D", lock_for),
            )
            backup_id = await cloud_backup(facade, ada, changes)
            await facade.runs.trigger(ada, backup_id)
            assert (await execute_next(facade)).state is RunState.SUCCEEDED
            return ada, backup_id, bucket.objects

        return scenario()

    def test_a_drill_restores_every_object_into_scratch_and_checks_its_sha256(
        self, seaweed: SeaweedServer, tmp_path: Path
    ) -> None:
        """Every object back, each sha256 the manifest's; the scratch directory removed;
        nothing written to the source bucket."""
        facade, _ = drilling_facade(seaweed, tmp_path)

        async def scenario() -> tuple[Drill, dict[str, bytes]]:
            ada, backup_id, objects = await self.backup(facade, seaweed, "PT1H")
            return await drill(facade, ada, backup_id), objects

        done, objects = asyncio.run(scenario())
        assert done.state is DrillState.SUCCEEDED, done.error
        assert done.checks == {
            "artifact_id": done.checks["artifact_id"],
            "artifact_intact": True,
            "objects": len(objects),
            "objects_differing": 0,
        }
        assert done.bytes == sum(len(content) for content in objects.values())
        assert list((tmp_path / "drills").iterdir()) == []

    def test_a_corrupted_archive_fails_its_drill_naming_the_object(
        self, seaweed: SeaweedServer, tmp_path: Path
    ) -> None:
        """One object's bytes flipped in the stored archive (its manifest as recorded):
        the drill fails naming that object, and the artifact's digest."""
        facade, storage = drilling_facade(seaweed, tmp_path)

        async def scenario() -> Drill:
            ada, backup_id, _ = await self.backup(facade, seaweed, "PT0S")
            artifact = await only_artifact(facade, ada)
            response = storage.client.get_object(storage.bucket, artifact.object_key)
            archive = response.read()
            response.close()
            put_over(storage, artifact.object_key, rebuilt(archive, "small/0003.txt"))
            return await drill(facade, ada, backup_id)

        done = asyncio.run(scenario())
        assert done.state is DrillState.FAILED
        assert done.error == (
            "the artifact's bytes differ from its recorded size and sha256; "
            "object small/0003.txt differs from the backup (sha256)"
        )
        assert done.checks["objects_differing"] == 1


class TestProof:
    def test_the_proof_lists_every_artifact_with_the_lock_seaweedfs_reports(
        self, seaweed: SeaweedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Two locked artifacts: each with its version, COMPLIANCE and a retain-until no
        earlier than its record; ``proof verify`` accepts the proof (exit 0) and refuses
        it with one lock pushed later than the storage's (exit 1), and the key of another
        service (exit 1)."""
        facade, _ = drilling_facade(seaweed, tmp_path)

        async def scenario() -> tuple[dict[str, Any], list[Artifact]]:
            ada, backup_id, _ = await TestS3().backup(facade, seaweed, "PT1H")
            await facade.runs.trigger(ada, backup_id)
            assert (await execute_next(facade)).state is RunState.SUCCEEDED
            page = await facade.artifacts.list_in(
                ada, ada.scoped_workspace(), False, PageRequest(5)
            )
            proof = await facade.proofs.gather(ada, ada.scoped_workspace())
            return facade.proofs.sign(orjson.loads(render(proof))), list(page.items)

        document, artifacts = asyncio.run(scenario())
        assert document["findings"] == []
        entries = {entry["id"]: entry for entry in document["artifacts"]}
        assert set(entries) == {str(artifact.id) for artifact in artifacts}
        for artifact in artifacts:
            entry = entries[str(artifact.id)]
            storage = entry["storage"]
            assert storage["version_id"]
            assert storage["mode"] == "COMPLIANCE"
            assert storage["legal_hold"] is False
            assert storage["retain_until"] >= entry["locked_until"]
        key = tmp_path / "key.pem"
        assert facade.proofs.signer is not None
        key.write_text(facade.proofs.signer.public_pem())
        good = tmp_path / "proof.json"
        good.write_bytes(orjson.dumps(document))
        assert main(["proof", "verify", str(good), "--key", str(key)]) == 0
        assert "signature valid: 2 artifacts" in capsys.readouterr().out

        tampered = json.loads(good.read_text())
        tampered["artifacts"][0]["locked_until"] = "2099-01-01T00:00:00Z"
        bad = tmp_path / "tampered.json"
        bad.write_text(json.dumps(tampered))
        assert main(["proof", "verify", str(bad), "--key", str(key)]) == 1
        assert "signature does not match" in capsys.readouterr().err

        other = tmp_path / "other.pem"
        other.write_text(ProofSigner.generated().public_pem())
        assert main(["proof", "verify", str(good), "--key", str(other)]) == 1
        assert "signed by another key" in capsys.readouterr().err
