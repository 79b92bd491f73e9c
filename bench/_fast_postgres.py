"""The PostgreSQL-only figures of ``fast_path.py``: database round trips per request,
counted by the TCP proxy of ``_round_trips.py``; creates in a workspace of many backups
against creates in an empty one; a list page deep behind a cursor against page 1 (the
backups seeded by SQL).
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import statistics
from collections import Counter
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any
from uuid import UUID, uuid4

from _fast_load import ROWS, Target, measure, row_targets
from _fast_setup import (
    PAGE_LIMIT,
    Deployment,
    admin_connection,
    expect,
    new_workspace,
    postgres_address,
    request,
    start_strongroom,
)
from _round_trips import RoundTripProxy
from _servers import HOST, database_url
from psycopg import sql

SEED_PREFIX = "seed-"  # casefolds to itself, so name_key = name
# Usage counters of the workspace row and the table whose rows each counts (by workspace).
COUNTED_TABLES = {"backup_count": "backups"}


# Round trips, counted by a proxy in front of PostgreSQL.


@dataclass
class RoundTrips:
    """Round trips of ``n`` sequential requests of one kind."""

    per_request: list[list[tuple[str, ...]]] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return sum(len(turns) for turns in self.per_request) / len(self.per_request)

    def shapes(self) -> list[tuple[int, str]]:
        """Each distinct sequence of round trips, with how many requests made it."""
        names = Counter(
            " | ".join("+".join(turn) or "?" for turn in turns) or "(none)"
            for turns in self.per_request
        )
        return [(count, shape) for shape, count in names.most_common()]


# The counting server runs none of the service's background jobs (scheduler, lease
# expiry, restore runner, executors, verification, retention): their statements share the
# pool and the proxy, and would be counted against whichever request they met.
QUIET_BACKGROUND = {
    "STRONGROOM_SCHEDULER_INTERVAL": "0",
    "STRONGROOM_LEASE_INTERVAL": "0",
    "STRONGROOM_RESTORE_POLL": "0",
    "STRONGROOM_EXECUTORS": "0",
    "STRONGROOM_VERIFY_PENDING_INTERVAL": "0",
    "STRONGROOM_VERIFY_INTERVAL": "0",
    "STRONGROOM_RETENTION_INTERVAL": "0",
    "STRONGROOM_HEALTH_INTERVAL": "0",
    "STRONGROOM_WEBHOOK_POLL": "0",
}


def count_round_trips(
    deployment: Deployment, proxy: RoundTripProxy, options: argparse.Namespace
) -> dict[str, RoundTrips]:
    """Each row's requests, one at a time (after uncounted warm-ups), through the proxy."""
    targets = row_targets(deployment)
    port = deployment.server.port
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    prefix = f"count-{uuid4().hex[:8]}-"
    sent = Counter[str]()

    def send(key: str) -> None:
        target = targets[key]
        sent[key] += 1
        body = {"name": f"{prefix}{sent[key]}", "kind": "manual"} if key == "create" else None
        status, answer = request(
            port,
            target.method,
            target.path,
            token=target.token,
            json_body=body,
            connection=connection,
        )
        if not 200 <= status < 300:
            raise SystemExit(f"counting: {target.method} {target.path} answered {status}: {answer}")

    counted: dict[str, RoundTrips] = {row.key: RoundTrips() for row in ROWS}
    try:
        for _ in range(options.count_warmup):
            for row in ROWS:
                send(row.key)
        for _ in range(options.count_requests):
            for row in ROWS:
                proxy.wait_quiet()
                mark = proxy.mark()
                send(row.key)
                proxy.wait_quiet()
                counted[row.key].per_request.append(proxy.since(mark))
    finally:
        connection.close()
    return counted


def proxied_round_trips(
    stack: ExitStack,
    deployment: Deployment,
    extra_env: Mapping[str, str],
    options: argparse.Namespace,
) -> dict[str, Any]:
    """A second server on the same database, reaching it through the counting proxy."""
    proxy = RoundTripProxy(postgres_address(options.postgres))
    stack.callback(proxy.close)
    assert deployment.dbname is not None
    url = database_url(options.postgres, deployment.dbname, proxy.port)
    env = {
        **extra_env,
        **QUIET_BACKGROUND,
        "STRONGROOM_DATABASE_URL": f"{url}?sslmode=disable&gssencmode=disable",
    }
    counting = start_strongroom(stack, "postgres-via-proxy", options.workdir, env, [])
    counting.workspace_id, counting.token = deployment.workspace_id, deployment.token
    counting.backup_id = deployment.backup_id
    trips = count_round_trips(counting, proxy, options)
    counting.server.stop()
    proxy.close()
    return {
        key: {"mean": t.mean, "requests": len(t.per_request), "shapes": t.shapes()}
        for key, t in trips.items()
    }


# Create throughput with existing backups; a page deep in a list.


def seed_backups(
    options: argparse.Namespace, dbname: str, template: UUID, workspace_id: UUID, count: int
) -> None:
    """``count`` copies of the ``template`` backup in ``workspace_id``, by one INSERT ...
    SELECT: new ids and names, created 1 ms apart before the template (oldest last). Generated
    columns (the stored JSON body) are left to the database."""
    with admin_connection(options.postgres, dbname) as conn:
        conn.execute("SET statement_timeout = '15min'")
        columns = [
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema ="
                " current_schema() AND table_name = 'backups' AND is_generated = 'NEVER'"
                " ORDER BY ordinal_position"
            ).fetchall()
        ]
        assert SEED_PREFIX.casefold() == SEED_PREFIX
        stamp = sql.SQL("t.created_at - g * interval '1 millisecond'")
        name = sql.SQL("{} || g").format(sql.Literal(SEED_PREFIX))
        overrides = {
            "id": sql.SQL("gen_random_uuid()"),
            "workspace_id": sql.Literal(workspace_id),
            "name": name,
            "name_key": name,
            "created_at": stamp,
            "updated_at": stamp,
        }
        values = [overrides.get(c, sql.SQL("t.{}").format(sql.Identifier(c))) for c in columns]
        statement = sql.SQL(
            "INSERT INTO backups ({}) SELECT {} FROM backups t, generate_series(1, {}) g"
            " WHERE t.id = {}"
        ).format(
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.SQL(", ").join(values),
            sql.Literal(count),
            sql.Literal(template),
        )
        inserted = conn.execute(statement).rowcount
        if inserted != count:
            raise SystemExit(f"seeding inserted {inserted} backups, not {count}")


def recompute_usage_counters(options: argparse.Namespace, dbname: str) -> list[str]:
    """Set every ``workspaces.*_count`` column from the rows it counts (seeding by SQL
    bypasses them); the columns recomputed."""
    with admin_connection(options.postgres, dbname) as conn:
        counters = [
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema ="
                " current_schema() AND table_name = 'workspaces' AND column_name LIKE %s",
                ("%\\_count",),
            ).fetchall()
        ]
        for column in counters:
            table = COUNTED_TABLES.get(column)
            if table is None:
                raise SystemExit(
                    f"workspaces.{column}: unknown usage counter; add the table it counts to"
                    " COUNTED_TABLES in bench/_fast_postgres.py"
                )
            conn.execute(
                sql.SQL(
                    "UPDATE workspaces w SET {} = (SELECT count(*) FROM {} t"
                    " WHERE t.workspace_id = w.id)"
                ).format(sql.Identifier(column), sql.Identifier(table))
            )
        conn.execute("VACUUM (ANALYZE) backups")
    return counters


def deep_cursor(options: argparse.Namespace, dbname: str, workspace_id: UUID, depth: int) -> str:
    """The cursor the server gives after the item at ``depth`` (newest first), built with
    the server's own ``Cursor``."""
    from strongroom.domain.pagination import Cursor  # noqa: PLC0415 (the installed package)

    with admin_connection(options.postgres, dbname) as conn:
        row = conn.execute(
            "SELECT created_at, id FROM backups WHERE workspace_id = %s"
            " ORDER BY created_at DESC, id DESC OFFSET %s LIMIT 1",
            (workspace_id, depth - 1),
        ).fetchone()
    if row is None:
        raise SystemExit(f"no backup at depth {depth}")
    cursor: str = Cursor(row[0].astimezone(UTC), row[1]).encode()
    return cursor


def create_with_existing(deployment: Deployment, options: argparse.Namespace) -> dict[str, Any]:
    """Creates in a new empty workspace against creates in one of ``--existing`` backups,
    interleaved (order alternating), one new empty workspace per round."""
    port, db = deployment.server.port, deployment.dbname
    full_id, full_token = new_workspace(port, "Full")
    seed_backups(options, str(db), deployment.backup_id, full_id, options.existing)
    deployment.lift_backup_quota(full_id)
    counters = recompute_usage_counters(options, str(db))
    full = Target(
        "create", deployment.server, "POST", f"/v1/workspaces/{full_id}/backups", full_token, db
    )
    ratios, empties, fulls = [], [], []
    for number in range(options.rounds):
        empty_id, empty_token = new_workspace(port, "Empty")
        deployment.lift_backup_quota(empty_id)
        path = f"/v1/workspaces/{empty_id}/backups"
        empty = Target("create", deployment.server, "POST", path, empty_token, db)
        pair = [("empty", empty), ("full", full)]
        measured = {
            name: measure(target, options, f"create, {name} workspace")
            for name, target in (pair if number % 2 == 0 else pair[::-1])
        }
        empties.append(measured["empty"])
        fulls.append(measured["full"])
        ratios.append(measured["full"].rps / measured["empty"].rps)
    return {
        "existing": options.existing,
        "usage_counters_recomputed": counters,
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "empty_rps": statistics.median(w.rps for w in empties),
        "full_rps": statistics.median(w.rps for w in fulls),
        "empty": [dataclasses.asdict(w) for w in empties],
        "full": [dataclasses.asdict(w) for w in fulls],
    }


def deep_page(deployment: Deployment, options: argparse.Namespace) -> dict[str, Any]:
    """Page 1 against the page after cursor depth ``--depth`` of one workspace, by wrk."""
    port, db = deployment.server.port, deployment.dbname
    workspace_id, token = new_workspace(port, "Deep")
    count = options.depth + PAGE_LIMIT + 1  # the deep page is full and has a next page
    seed_backups(options, str(db), deployment.backup_id, workspace_id, count)
    recompute_usage_counters(options, str(db))
    cursor = deep_cursor(options, str(db), workspace_id, options.depth)
    base = f"/v1/workspaces/{workspace_id}/backups?limit={PAGE_LIMIT}"
    for path in (base, f"{base}&cursor={cursor}"):
        status, body = request(port, "GET", path, token=token)
        expect(status, 200, f"GET {path}", body)
        if len(body["data"]) != PAGE_LIMIT or body["next_cursor"] is None:
            raise SystemExit(f"GET {path}: not a full page with a next one")
    server = deployment.server
    first = Target("list", server, "GET", base, token, db)
    deep = Target("list", server, "GET", f"{base}&cursor={cursor}", token, db)
    p50s, throughputs, firsts, deeps = [], [], [], []
    for number in range(options.rounds):
        pair = [("page 1", first), (f"page at depth {options.depth}", deep)]
        measured = {
            name: measure(target, options, name)
            for name, target in (pair if number % 2 == 0 else pair[::-1])
        }
        one, far = measured["page 1"], measured[f"page at depth {options.depth}"]
        firsts.append(one)
        deeps.append(far)
        p50s.append(far.p50_ms / one.p50_ms)
        throughputs.append(one.rps / far.rps)
    return {
        "depth": options.depth,
        "p50_factor": statistics.median(p50s),
        "throughput_factor": statistics.median(throughputs),
        "page_1_rps": statistics.median(w.rps for w in firsts),
        "deep_rps": statistics.median(w.rps for w in deeps),
        "page_1_p50_ms": statistics.median(w.p50_ms for w in firsts),
        "deep_p50_ms": statistics.median(w.p50_ms for w in deeps),
        "page_1": [dataclasses.asdict(w) for w in firsts],
        "deep": [dataclasses.asdict(w) for w in deeps],
    }
