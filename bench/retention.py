"""One retention pass over a long history on PostgreSQL (issue 29: 100 000 runs, < 10 s).

    .venv/bin/python bench/retention.py                # 100 000 runs
    .venv/bin/python bench/retention.py --runs 20000

A scratch database (created here, dropped at the end) holds one workspace with one manual
backup whose policy has keep rules (``expire_after`` P1D; keep last 24, daily 30, weekly
52, monthly 24, yearly 10). One run with one artifact is made through the use cases, then
cloned with ``generate_series`` into ``--runs`` succeeded runs an hour apart (11 years
for 100 000), each with its own available artifact. Timed: the explain endpoint's
decision over the whole history (``retention.explain``, one page), then one pass of the
job (``retention.run``): it decides over every run and removes what the rules give up,
at most ``BATCH`` (10 000) artifacts a pass, ``CHUNK`` (1 000) per transaction, each
audited. Storage is the local disk (the clones' files do not exist: removing one is an
``unlink`` of nothing, so the figure is the database's and the decision's).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID, uuid4

import psycopg
from psycopg import sql

from strongroom.adapters.identity.builtin import CLIENT_ID, BuiltinIdentityProvider
from strongroom.domain.backups import BackupChanges, BackupKind, RetentionPolicy
from strongroom.domain.durations import Duration
from strongroom.domain.keep_rules import KeepRules
from strongroom.domain.pagination import PageRequest
from strongroom.domain.principals import Caller
from strongroom.entrypoints.service import open_facade
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom

ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
SECRET_KEY = "bench-retention-secret-key-0123456789abcdef"
PASSWORD = "correct horse battery staple"
POLICY = RetentionPolicy(
    Duration.parse("P1D"),
    Duration.parse("PT0S"),
    KeepRules(last=24, daily=30, weekly=52, monthly=24, yearly=10),
)


@contextlib.contextmanager
def scratch_database() -> Iterator[str]:
    """A new database for the block (dropped after, whatever happens); its conninfo."""
    name = f"strongroom_bench_retention_{os.getpid()}_{uuid4().hex[:6]}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield psycopg.conninfo.make_conninfo(ADMIN, dbname=name)
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


async def tenant(facade: Strongroom) -> tuple[Caller, UUID, UUID]:
    """An admin, a manual backup with the keep rules, and one confirmed run of it."""
    identity = facade.deps.identity
    assert isinstance(identity, BuiltinIdentityProvider)
    email = f"bench-{uuid4().hex[:8]}@example.com"
    await identity.add_account(email, PASSWORD, "Bench")
    grant = await identity.start_device_authorization(CLIENT_ID, "http://bench")
    await identity.decide(grant.user_code, email, PASSWORD, approve=True)
    access = await identity.exchange_device_code(grant.device_code, CLIENT_ID)
    person = await facade.access.authenticate(
        (await facade.sessions.sign_in(access.access_token)).token
    )
    workspace = await facade.workspaces.create(person, "Bench")
    admin = await facade.access.authenticate(
        (await facade.sessions.switch(person, workspace.id)).token
    )
    backup = await facade.backups.create(admin, workspace.id, "history", BackupKind.MANUAL)
    await facade.backups.update(admin, backup.id, BackupChanges(retention=POLICY))
    run = await facade.runs.start(admin, backup.id)
    data = b"template"
    digest = hashlib.sha256(data).hexdigest()
    plan = await facade.artifacts.upload_url(admin, run.id, "dump", len(data), digest)
    await facade.deps.storage.put(plan.artifact.object_key, data, digest)
    await facade.artifacts.confirm(admin, run.id)
    return admin, backup.id, run.id


def grow(conninfo: str, template: UUID, runs: int) -> None:
    """``runs - 1`` clones of the template run, an hour apart going back, each with a clone
    of its artifact."""
    with psycopg.connect(conninfo, autocommit=True) as connection:
        connection.execute(
            """
            WITH made AS (
                INSERT INTO runs (
                    id, workspace_id, backup_id, state, trigger, worker_id, created_at,
                    started_at, finished_at, artifact_count, bytes, error, attempt,
                    lease_expires_at, cancel_requested, progress
                )
                SELECT gen_random_uuid(), r.workspace_id, r.backup_id, r.state, r.trigger,
                       NULL, r.created_at - i * interval '1 hour',
                       r.started_at - i * interval '1 hour',
                       r.finished_at - i * interval '1 hour', r.artifact_count, r.bytes,
                       NULL, 1, NULL, false, NULL
                FROM runs AS r, generate_series(1, %(count)s) AS i
                WHERE r.id = %(template)s
                RETURNING id, workspace_id, backup_id, created_at
            )
            INSERT INTO artifacts (
                id, workspace_id, backup_id, run_id, name, size, sha256, state, storage,
                object_key, upload_id, created_at, expires_at, locked_until, verification,
                verified_at, held
            )
            SELECT gen_random_uuid(), made.workspace_id, made.backup_id, made.id, a.name,
                   a.size, a.sha256, a.state, a.storage, a.object_key || '-' || made.id, NULL,
                   made.created_at, made.created_at + interval '1 day', NULL, a.verification,
                   a.verified_at, false
            FROM made, artifacts AS a
            WHERE a.run_id = %(template)s
            """,
            {"count": runs - 1, "template": template},
        )
        connection.execute("ANALYZE")


async def measure(runs: int) -> None:
    with scratch_database() as conninfo:
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
        settings = Settings(
            database_url=f"postgresql://postgres@127.0.0.1:5432/{params['dbname']}",
            secret_key=SECRET_KEY,
            data_dir=Path(tempfile.mkdtemp(prefix="strongroom-bench-")),
        )
        async with open_facade(settings, migrate=True) as facade:
            admin, backup_id, template = await tenant(facade)
            began = time.monotonic()
            grow(conninfo, template, runs)
            print(f"{runs} runs seeded in {time.monotonic() - began:.1f} s", flush=True)
            began = time.monotonic()
            await facade.retention.explain(admin, backup_id, PageRequest(1))
            explained = time.monotonic() - began
            print(f"explain (decision over {runs} runs): {explained:.2f} s", flush=True)
            began = time.monotonic()
            report = await facade.retention.run()
            passed = time.monotonic() - began
            print(
                f"one retention pass: {passed:.2f} s (removed {report.removed}, "
                f"failed {report.failed}); target < 10 s: {'met' if passed < 10 else 'MISSED'}",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    arguments = parser.parse_args()
    asyncio.run(measure(arguments.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
