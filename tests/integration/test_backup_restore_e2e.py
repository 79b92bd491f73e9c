"""The acceptance test of cloud backups (contract 11), end to end through the product.

A real ``strongroom serve`` process on PostgreSQL (a scratch database) with its storage on
SeaweedFS, its scheduler, service executors and restore runner on, is driven through the
public HTTP API only:

- a cloud backup of a real SeaweedFS bucket (300 small objects, an empty one, one over the
  executor's 16 MiB upload part size, unicode keys, a key ending in ``/``) and one of a
  real PostgreSQL database (several tables and types, a few MB);
- each runs once on ``trigger`` and once on its minute schedule (``trigger: "schedule"``;
  this waits for the next minute slot, up to a minute);
- the triggered runs' artifacts are restored into a NEW bucket (under a prefix) and a NEW
  empty database, and compared: every object byte for byte and key for key; the plain
  ``pg_dump`` outputs of the two databases equal (less the lines that legitimately
  differ: ``--`` comments, which name nothing but the dump's own run, and the random
  ``\\restrict``/``\\unrestrict`` keys of newer ``pg_dump``);
- ``verify`` of each artifact ends with ``verification: "ok"``.

The executors' poll is set far beyond the test's waits: every run starts on the run
signals' wake-up (a trigger, a scheduled slot).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cloud_sources import PREFIX, fill_database, minio_of, plain_dump, source_bucket
from integration_world import SECRET_KEY, expect, postgres_url, workspace_admin

from strongroom.adapters.sql.postgres import PostgresDatabase
from support.postgres import PostgresServer, create_database, drop_database, scratch_database
from support.seaweed import SeaweedServer
from support.serve_process import free_port, serving
from support.world import bearer

RETENTION = {"expire_after": "P30D", "lock_for": "PT0S"}
EVERY_MINUTE = {"cron": "* * * * *", "timezone": "UTC"}
# A run (and a restore) of a few tens of MB on a shared, loaded machine; and a minute slot.
RUN_TIMEOUT = 150.0


@pytest.fixture
def service(
    pg_server: PostgresServer, seaweed: SeaweedServer, tmp_path: Path
) -> Iterator[httpx2.Client]:
    """``strongroom serve`` on a database of its own and a bucket of its own on SeaweedFS,
    its background jobs quick; an HTTP client of it."""
    with scratch_database(pg_server, prefix="strongroom_e2e") as conninfo:
        with PostgresDatabase.from_url(conninfo, min_size=0) as database:
            database.migrate()
        configuration = {
            "STRONGROOM_DATABASE_URL": postgres_url(conninfo),
            "STRONGROOM_SECRET_KEY": SECRET_KEY,
            "STRONGROOM_SIGNUP": "true",
            "STRONGROOM_S3_ENDPOINT": seaweed.endpoint,
            "STRONGROOM_S3_ACCESS_KEY": seaweed.access_key,
            "STRONGROOM_S3_SECRET_KEY": seaweed.secret_key,
            "STRONGROOM_S3_BUCKET": "strongroom-" + secrets.token_hex(6),
            # Sources and restore targets on loopback (contract 13): this test's own parts.
            "STRONGROOM_ENDPOINT_NETWORKS": "127.0.0.0/8",
            "STRONGROOM_SCHEDULER_INTERVAL": "0.5",
            "STRONGROOM_EXECUTORS": "2",
            # Far beyond the test's waits: a run starts on the run signals' wake-up.
            "STRONGROOM_EXECUTOR_POLL": "600",
            "STRONGROOM_RESTORE_POLL": "0.2",
            "STRONGROOM_VERIFY_PENDING_INTERVAL": "0.3",
            "STRONGROOM_LEASE_INTERVAL": "1",
            "STRONGROOM_LOG_FORMAT": "text",
        }
        data_dir, log = tmp_path / "data", tmp_path / "serve.log"
        data_dir.mkdir()
        with (
            serving(data_dir, free_port(), log, configuration) as url,
            httpx2.Client(base_url=url, trust_env=False, timeout=30) as client,
        ):
            yield client


@pytest.fixture
def new_database(pg_server: PostgresServer) -> Iterator[Callable[[], tuple[str, str]]]:
    """New empty databases on the test server, dropped afterwards: ``(name, conninfo)``."""
    made: list[str] = []

    def make() -> tuple[str, str]:
        name = create_database(pg_server, "strongroom_e2e_src")
        made.append(name)
        return name, pg_server.conninfo(name)

    yield make
    for name in made:
        drop_database(pg_server, name)


def until(what: str, look: Callable[[], dict[str, Any] | None], timeout: float) -> dict[str, Any]:
    """Poll ``look`` until it answers something (fails with ``what`` after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        found = look()
        if found is not None:
            return found
        assert time.monotonic() < deadline, f"{what}: never happened"
        time.sleep(0.25)


class Workspace:
    """An admin of a new workspace, and the API calls this test makes."""

    def __init__(self, client: httpx2.Client) -> None:
        self.client = client
        workspace, token = workspace_admin(client, f"e2e-{secrets.token_hex(4)}@example.com")
        self.id = workspace["id"]
        self.headers = bearer(token)

    def cloud_backup(self, name: str, source: dict[str, Any], keys: dict[str, str]) -> str:
        """An active cloud backup of ``source``, scheduled every minute; its id."""
        created = expect(
            self.client.post(
                f"/v1/workspaces/{self.id}/backups",
                json={"name": name, "kind": "cloud"},
                headers=self.headers,
            ),
            201,
        )
        changes = {
            "source": source,
            "credentials": keys,
            "retention": RETENTION,
            "schedule": EVERY_MINUTE,
        }
        backup = expect(
            self.client.patch(f"/v1/backups/{created['id']}", json=changes, headers=self.headers),
            200,
        )
        assert backup["state"] == "active", backup
        assert backup["next_run_at"] is not None, backup
        backup_id: str = backup["id"]
        return backup_id

    def trigger(self, backup_id: str) -> dict[str, Any]:
        run: dict[str, Any] = expect(
            self.client.post(f"/v1/backups/{backup_id}/trigger", headers=self.headers), 202
        )
        assert run["trigger"] == "api", run
        return run

    def runs(self, backup_id: str) -> list[dict[str, Any]]:
        page = expect(self.client.get(f"/v1/backups/{backup_id}/runs", headers=self.headers), 200)
        items: list[dict[str, Any]] = page["data"]
        return items

    def finished_run(self, backup_id: str, check: Callable[[dict[str, Any]], bool]) -> Any:
        """The first finished run of the backup that ``check`` accepts; it must have
        succeeded."""

        def look() -> dict[str, Any] | None:
            for run in self.runs(backup_id):
                if check(run) and run["finished_at"] is not None:
                    return run
            return None

        run = until(f"a run of {backup_id}", look, RUN_TIMEOUT)
        assert (run["state"], run["error"]) == ("succeeded", None), run
        assert run["artifact_count"] == 1, run
        return run

    def artifact_of(self, run_id: str) -> dict[str, Any]:
        page = expect(
            self.client.get(
                f"/v1/workspaces/{self.id}/artifacts", params={"limit": 100}, headers=self.headers
            ),
            200,
        )
        (artifact,) = [item for item in page["data"] if item["run_id"] == run_id]
        assert artifact["state"] == "available", artifact
        found: dict[str, Any] = artifact
        return found

    def restore(self, artifact_id: str, target: dict[str, Any], keys: dict[str, str]) -> Any:
        """A restore of the artifact into ``target``, polled until it ends."""
        queued = expect(
            self.client.post(
                f"/v1/artifacts/{artifact_id}/restores",
                json={"target": target, "credentials": keys},
                headers=self.headers,
            ),
            202,
        )
        assert queued["state"] in ("queued", "running"), queued

        def look() -> dict[str, Any] | None:
            restore = expect(
                self.client.get(f"/v1/restores/{queued['id']}", headers=self.headers), 200
            )
            return restore if restore["state"] in ("succeeded", "failed") else None

        return until(f"restore {queued['id']}", look, RUN_TIMEOUT)

    def verified(self, artifact_id: str, run_id: str) -> dict[str, Any]:
        """``verify`` the artifact, then its record once the verifier has been."""
        pending = expect(
            self.client.post(f"/v1/artifacts/{artifact_id}/verify", headers=self.headers), 202
        )
        assert pending["verification"] == "pending", pending

        def look() -> dict[str, Any] | None:
            artifact = self.artifact_of(run_id)
            return artifact if artifact["verification"] != "pending" else None

        return until(f"verification of {artifact_id}", look, RUN_TIMEOUT)


def test_cloud_backups_run_on_trigger_and_schedule_and_restore_to_equal_copies(
    service: httpx2.Client,
    seaweed: SeaweedServer,
    new_database: Callable[[], tuple[str, str]],
) -> None:
    """A bucket and a database, backed up on ``trigger`` and on schedule, restored into
    a new bucket and a new database that compare equal; both artifacts verify ``ok``."""
    started = time.monotonic()
    bucket = source_bucket(seaweed)
    source_name, source_conninfo = new_database()
    fill_database(source_conninfo)
    s3_keys = {"access_key_id": seaweed.access_key, "secret_access_key": seaweed.secret_key}
    pg_keys = {"username": "postgres", "password": "unused-with-trust"}
    s3_source = {
        "type": "s3",
        "endpoint": seaweed.endpoint,
        "bucket": bucket.name,
        "prefix": PREFIX,
    }
    pg_source = {"type": "postgres", "host": "127.0.0.1", "port": 5432, "database": source_name}

    admin = Workspace(service)
    objects_backup = admin.cloud_backup("Objects", s3_source, s3_keys)
    database_backup = admin.cloud_backup("Database", pg_source, pg_keys)
    triggered = {
        backup: admin.trigger(backup)["id"] for backup in (objects_backup, database_backup)
    }
    runs = {
        backup: admin.finished_run(backup, lambda run, wanted=run_id: run["id"] == wanted)
        for backup, run_id in triggered.items()
    }
    print(f"\ntriggered runs done {time.monotonic() - started:.1f} s in")
    for run in runs.values():  # woken by the trigger, not the (10-minute) poll
        waited = datetime.fromisoformat(run["started_at"]) - datetime.fromisoformat(
            run["created_at"]
        )
        print(f"run {run['id']} started {waited.total_seconds() * 1000:.0f} ms after its trigger")
        assert waited.total_seconds() < 5, run

    # The restores, from the triggered runs' artifacts.
    objects_artifact = admin.artifact_of(runs[objects_backup]["id"])
    assert objects_artifact["size"] > 16 * 1024 * 1024  # uploaded in parts
    target_bucket = "restored-" + secrets.token_hex(4)
    s3_target = {**s3_source, "bucket": target_bucket, "prefix": "again/"}
    restored = admin.restore(objects_artifact["id"], s3_target, s3_keys)
    assert (restored["state"], restored["error"]) == ("succeeded", None), restored
    client = minio_of(seaweed)
    listed = {
        str(item.object_name): item for item in client.list_objects(target_bucket, recursive=True)
    }
    assert set(listed) == {"again/" + key for key in bucket.objects}
    for key, content in bucket.objects.items():
        response = client.get_object(target_bucket, "again/" + key)
        try:
            assert response.read() == content, key
        finally:
            response.close()
            response.release_conn()

    database_artifact = admin.artifact_of(runs[database_backup]["id"])
    target_name, target_conninfo = new_database()
    pg_target = {**pg_source, "database": target_name}
    restored = admin.restore(database_artifact["id"], pg_target, pg_keys)
    assert (restored["state"], restored["error"]) == ("succeeded", None), restored
    source_dump = plain_dump(source_conninfo)
    assert len(source_dump) > 50_000  # the rows are in it
    assert plain_dump(target_conninfo) == source_dump
    print(f"restores compared equal {time.monotonic() - started:.1f} s in")

    for artifact, run in (
        (objects_artifact, runs[objects_backup]),
        (database_artifact, runs[database_backup]),
    ):
        verified = admin.verified(artifact["id"], run["id"])
        assert verified["verification"] == "ok", verified
        assert verified["verified_at"] is not None

    # The minute schedule: a run of each with ``trigger: "schedule"`` that succeeds.
    for backup in (objects_backup, database_backup):
        scheduled = admin.finished_run(backup, lambda run: run["trigger"] == "schedule")
        assert scheduled["attempt"] == 1, scheduled
    print(f"scheduled runs done {time.monotonic() - started:.1f} s in")
