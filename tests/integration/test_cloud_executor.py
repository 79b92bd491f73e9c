"""The service executor end to end on real parts (contract 11): a cloud backup of a real
SeaweedFS bucket and of a real PostgreSQL database, triggered, claimed by the executor,
streamed into storage (service storage on SeaweedFS, or a customer's bucket) and
confirmed; the artifact unpacked and compared with its source. Also: wrong credentials,
the endpoint policy, and a cancel that stops a running ``pg_dump``."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import subprocess
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from cloud_sources import (
    PREFIX,
    fill_database,
    minio_of,
    pg_dump_processes,
    plain_dump,
    source_bucket,
    table_locked,
    unpack,
)

from strongroom.adapters.outbound.policy import Stage
from strongroom.adapters.runtime.executor import Executor
from strongroom.adapters.sources.readers import Readers
from strongroom.adapters.storage.s3 import S3Storage
from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage, Verification
from strongroom.domain.backups import (
    BackupChanges,
    BackupKind,
    CustomerS3Destination,
    PostgresSource,
    S3Source,
)
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.domain.runs import Run, RunState
from strongroom.entrypoints.service import open_serving_facade
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom
from support.people import audit_events, retention, workspace_admin
from support.postgres import PostgresServer, scratch_database
from support.seaweed import SeaweedServer, s3_storage
from support.world import memory_facade

LOOPBACK = EndpointPolicy.parse("127.0.0.0/8")
PASSWORD = "pg-Secret-0f-the-source-do-not-log"


def run_async(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(test())


def facade_on(storage: S3Storage) -> Strongroom:
    """An in-memory facade whose service storage is a SeaweedFS bucket, loopback allowed."""
    return memory_facade(storage=storage, endpoint_policy=LOOPBACK)


def postgres_changes(
    conninfo: str, username: str | None = None, password: str = PASSWORD, **changes: Any
) -> BackupChanges:
    """Changes that make a backup dump the database ``conninfo`` names (its ``key=value``
    words give host, port, database and, unless ``username``, the user), with ``changes``."""
    params = dict(part.split("=", 1) for part in conninfo.split())
    return BackupChanges(
        source=PostgresSource(params["host"], int(params["port"]), params["dbname"]),
        credentials={"username": username or params["user"], "password": password},
        **changes,
    )


async def cloud_backup(facade: Strongroom, admin: Caller, changes: BackupChanges) -> UUID:
    backup = await facade.backups.create(admin, admin.scoped_workspace(), "Cloud", BackupKind.CLOUD)
    await facade.backups.update(admin, backup.id, changes)
    return backup.id


async def execute_next(
    facade: Strongroom, readers: Readers | None = None, heartbeat_every: float = 5.0
) -> Run:
    """Claim the queued cloud run and execute it to its end."""
    held = await facade.service_runs.claim()
    assert held is not None
    executor = Executor(
        facade.service_runs, readers or Readers(LOOPBACK), heartbeat_every=heartbeat_every
    )
    ended = await executor.execute(held)
    assert ended is not None
    return ended


async def only_artifact(facade: Strongroom, admin: Caller, deleted: bool = False) -> Artifact:
    page = await facade.artifacts.list_in(admin, admin.scoped_workspace(), deleted, PageRequest(5))
    (artifact,) = page.items
    return artifact


def test_an_s3_prefix_becomes_one_confirmed_tar_zst_artifact(seaweed: SeaweedServer) -> None:
    """Hundreds of objects, an empty one, one over the part size, unicode keys and a key
    ending in ``/``: every object byte for byte, in listing order, with its key record,
    mtime and the manifest; the artifact is confirmed with its sha256 and verified."""
    bucket = source_bucket(seaweed)
    storage = s3_storage(seaweed)
    facade = facade_on(storage)
    listing = {
        str(item.object_name)[len(PREFIX) :]: item
        for item in minio_of(seaweed).list_objects(bucket.name, prefix=PREFIX, recursive=True)
    }

    async def scenario() -> None:
        ada, _ = await workspace_admin(facade, "ada@example.com")
        changes = BackupChanges(
            source=S3Source(seaweed.endpoint, bucket.name, PREFIX),
            credentials={
                "access_key_id": seaweed.access_key,
                "secret_access_key": seaweed.secret_key,
            },
            retention=retention("P30D", "PT1H"),
        )
        run = await facade.runs.trigger(ada, await cloud_backup(facade, ada, changes))
        ended = await execute_next(facade)
        assert ended.state is RunState.SUCCEEDED, ended.error
        assert ended.id == run.id
        artifact = await only_artifact(facade, ada)
        assert artifact.name.endswith(".tar.zst")
        assert (artifact.state, artifact.storage) == (
            ArtifactState.AVAILABLE,
            ArtifactStorage.SERVICE,
        )
        assert artifact.size > 16 * 1024 * 1024  # it went up in parts
        assert artifact.verification is Verification.PENDING
        response = storage.client.get_object(storage.bucket, artifact.object_key)
        archive = response.read()
        response.close()
        assert len(archive) == artifact.size
        assert hashlib.sha256(archive).hexdigest() == artifact.sha256

        members, manifest = unpack(archive)
        keys = [member.pax_headers["STRONGROOM.key"] for member, _ in members]
        assert keys == sorted(bucket.objects, key=lambda k: (PREFIX + k).encode())
        for member, content in members:
            key = member.pax_headers["STRONGROOM.key"]
            assert member.isreg()
            assert member.name == "objects/" + key or member.name == ("objects/" + key).rstrip("/")
            assert content == bucket.objects[key], key
            modified = listing[key].last_modified
            assert modified is not None
            assert member.mtime == int(modified.timestamp())
        assert manifest["format"] == "strongroom-s3/1"
        assert (manifest["bucket"], manifest["prefix"]) == (bucket.name, PREFIX)
        assert [o["key"] for o in manifest["objects"]] == keys
        assert manifest["count"] == len(bucket.objects) == len(members)
        assert manifest["bytes"] == sum(len(c) for c in bucket.objects.values())
        for entry in manifest["objects"]:
            assert entry["size"] == len(bucket.objects[entry["key"]])
            assert entry["etag"] == listing[entry["key"]].etag

        await facade.verification.run()
        assert (await only_artifact(facade, ada)).verification is Verification.OK

    run_async(scenario)


def test_a_postgres_database_becomes_a_restorable_dump_in_the_customers_bucket(
    seaweed: SeaweedServer, pg_server: PostgresServer, tmp_path: Path
) -> None:
    """``pg_dump --format=custom`` of several tables and types: ``pg_restore --list``
    reads it, and restored into a scratch database it dumps exactly as the source."""
    client = minio_of(seaweed)
    customer_bucket = "customer-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:10]
    client.make_bucket(customer_bucket)
    facade = facade_on(s3_storage(seaweed))
    with (
        scratch_database(pg_server, "strongroom_src") as source,
        scratch_database(pg_server, "strongroom_restored") as restored,
    ):
        fill_database(source)

        async def scenario() -> Artifact:
            ada, _ = await workspace_admin(facade, "ada@example.com")
            changes = postgres_changes(
                source,
                retention=retention("P30D", "PT0S"),
                destination=CustomerS3Destination(seaweed.endpoint, customer_bucket, "dumps"),
                destination_credentials={
                    "access_key_id": seaweed.access_key,
                    "secret_access_key": seaweed.secret_key,
                },
            )
            await facade.runs.trigger(ada, await cloud_backup(facade, ada, changes))
            ended = await execute_next(facade)
            assert ended.state is RunState.SUCCEEDED, ended.error
            artifact = await only_artifact(facade, ada)
            assert artifact.storage is ArtifactStorage.CUSTOMER
            assert artifact.name.endswith(".pgdump")
            assert artifact.object_key.startswith("dumps/")
            return artifact

        artifact = asyncio.run(scenario())
        dump = tmp_path / "source.pgdump"
        response = client.get_object(customer_bucket, artifact.object_key)
        dump.write_bytes(response.read())
        response.close()
        assert hashlib.sha256(dump.read_bytes()).hexdigest() == artifact.sha256
        assert dump.stat().st_size > 1024 * 1024
        listed = subprocess.run(
            ["pg_restore", "--list", str(dump)], check=True, capture_output=True, text=True
        ).stdout
        assert "TABLE public customers" in listed
        assert "TABLE DATA public events" in listed
        subprocess.run(
            ["pg_restore", "--no-owner", f"--dbname={restored}", str(dump)],
            check=True,
            capture_output=True,
        )
        assert plain_dump(restored) == plain_dump(source)


def test_wrong_s3_credentials_fail_the_run_with_a_clear_error_and_no_secret(
    seaweed: SeaweedServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The stage's fixed message (a refusal looks like any other failure to reach the
    source: contract 13, turn 3); the secret is nowhere: not in the error, the audit
    trail, or any log record."""
    bucket = source_bucket(seaweed, small=2)
    wrong_secret = "Wrong-Secret-Key-that-must-not-leak-0123"
    facade = facade_on(s3_storage(seaweed))
    caplog.set_level(logging.DEBUG)

    async def scenario() -> None:
        ada, _ = await workspace_admin(facade, "ada@example.com")
        changes = BackupChanges(
            source=S3Source(seaweed.endpoint, bucket.name, PREFIX),
            credentials={"access_key_id": seaweed.access_key, "secret_access_key": wrong_secret},
            retention=retention("P30D", "PT0S"),
        )
        await facade.runs.trigger(ada, await cloud_backup(facade, ada, changes))
        ended = await execute_next(facade)
        assert ended.state is RunState.FAILED
        assert ended.error is not None
        assert ended.error == Stage.SOURCE.message, ended.error
        assert wrong_secret not in repr(await audit_events(facade, ada))
        assert (await only_artifact(facade, ada, deleted=True)).state is ArtifactState.DELETED

    run_async(scenario)
    assert wrong_secret not in caplog.text
    assert all(wrong_secret not in str(record.__dict__) for record in caplog.records)


def test_a_failing_pg_dump_gives_its_error_without_the_password(
    pg_server: PostgresServer, seaweed: SeaweedServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A role that does not exist: the stage's fixed message (contract 13, turn 3), never
    ``pg_dump``'s own words (they would tell a wrong role from a closed port), the user
    name or the password."""
    facade = facade_on(s3_storage(seaweed))
    caplog.set_level(logging.DEBUG)
    with scratch_database(pg_server, "strongroom_src") as source:

        async def scenario() -> None:
            ada, _ = await workspace_admin(facade, "ada@example.com")
            changes = postgres_changes(
                source, username="nobody_at_all", retention=retention("P30D", "PT0S")
            )
            await facade.runs.trigger(ada, await cloud_backup(facade, ada, changes))
            ended = await execute_next(facade)
            assert ended.state is RunState.FAILED
            assert ended.error is not None
            assert ended.error == Stage.SOURCE.message, ended.error
            assert "nobody_at_all" not in ended.error
            assert PASSWORD not in repr(await audit_events(facade, ada))

        run_async(scenario)
    assert PASSWORD not in caplog.text


@pytest.mark.parametrize("kind", ["s3", "postgres"])
def test_a_source_outside_the_endpoint_policy_is_never_reached(
    kind: str, seaweed: SeaweedServer
) -> None:
    """Loopback is refused by the default policy after resolution: the run fails as if the
    endpoint were unreachable (one answer, no detail)."""
    facade = facade_on(s3_storage(seaweed))

    async def scenario() -> None:
        ada, _ = await workspace_admin(facade, "ada@example.com")
        source: S3Source | PostgresSource
        if kind == "s3":
            source = S3Source(seaweed.endpoint.replace("127.0.0.1", "localhost"), "b", None)
            credentials = {"access_key_id": "a", "secret_access_key": "b"}
        else:
            source = PostgresSource("localhost", 5432, "postgres")
            credentials = {"username": "postgres", "password": "x"}
        changes = BackupChanges(
            source=source, credentials=credentials, retention=retention("P30D", "PT0S")
        )
        await facade.runs.trigger(ada, await cloud_backup(facade, ada, changes))
        ended = await execute_next(facade, Readers(EndpointPolicy()))
        assert ended.state is RunState.FAILED
        assert ended.error == Stage.SOURCE.message

    run_async(scenario)


def test_a_cancel_kills_the_running_pg_dump_within_one_heartbeat(
    pg_server: PostgresServer, seaweed: SeaweedServer
) -> None:
    """``pg_dump`` waits on a locked table; the cancel ends the run ``cancelled`` within a
    heartbeat and the ``pg_dump`` process is gone."""
    facade = facade_on(s3_storage(seaweed))
    with scratch_database(pg_server, "strongroom_src") as source:
        fill_database(source)
        params = dict(part.split("=", 1) for part in source.split())
        dbname = params["dbname"]

        async def scenario() -> None:
            ada, _ = await workspace_admin(facade, "ada@example.com")
            changes = BackupChanges(
                source=PostgresSource(params["host"], int(params["port"]), dbname),
                credentials={"username": params["user"], "password": PASSWORD},
                retention=retention("P30D", "PT0S"),
            )
            run = await facade.runs.trigger(ada, await cloud_backup(facade, ada, changes))
            execution = asyncio.ensure_future(execute_next(facade, heartbeat_every=0.5))
            deadline = time.monotonic() + 20
            while not pg_dump_processes(dbname):
                assert time.monotonic() < deadline, "pg_dump never started"
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)
            assert not execution.done()
            await facade.runs.cancel(ada, run.id)
            cancelled_at = time.monotonic()
            ended = await asyncio.wait_for(execution, timeout=5)
            assert time.monotonic() - cancelled_at < 1.5  # one heartbeat, and some slack
            assert ended.state is RunState.CANCELLED
            assert pg_dump_processes(dbname) == []

        with table_locked(source, "events"):
            run_async(scenario)


def test_serve_runs_the_executor_and_verifies_on_request(
    seaweed: SeaweedServer, tmp_path: Path
) -> None:
    """``open_serving_facade`` (what ``serve`` runs) executes a triggered cloud run on its
    own, and its verifier answers a verify request."""
    bucket = source_bucket(seaweed, small=5)
    settings = Settings(
        data_dir=tmp_path / "data",
        secret_key="serving-executor-test-key",
        executors=1,
        executor_poll=0.1,
        verify_pending_interval=0.2,
        retention_interval=0,
        endpoint_networks="127.0.0.0/8",
    )

    async def scenario() -> None:
        async with open_serving_facade(settings) as facade:
            ada, _ = await workspace_admin(facade, "ada@example.com")
            changes = BackupChanges(
                source=S3Source(seaweed.endpoint, bucket.name, PREFIX),
                credentials={
                    "access_key_id": seaweed.access_key,
                    "secret_access_key": seaweed.secret_key,
                },
                retention=retention("P30D", "PT0S"),
            )
            run = await facade.runs.trigger(ada, await cloud_backup(facade, ada, changes))
            deadline = time.monotonic() + 60
            while not (current := await facade.runs.get(ada, run.id)).finished:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            assert current.state is RunState.SUCCEEDED, current.error
            artifact = await only_artifact(facade, ada)
            first_check = artifact.verified_at
            assert artifact.verification is Verification.OK  # one request, checksum signed
            requested = await facade.artifacts.request_verification(ada, artifact.id)
            assert requested.verification is Verification.PENDING
            while (artifact := await only_artifact(facade, ada)).verification is (
                Verification.PENDING
            ):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            assert artifact.verification is Verification.OK
            assert artifact.verified_at is not None
            assert first_check is not None
            assert artifact.verified_at > first_check

    run_async(scenario)
