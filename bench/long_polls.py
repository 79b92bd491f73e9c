"""Idle long polls against one ``strongroom serve`` (issue 32, point 2). Black box: HTTP.

    .venv/bin/python bench/long_polls.py                  # 10 000 waiting workers
    .venv/bin/python bench/long_polls.py --polls 2000 --json polls.json

All on 127.0.0.1: a scratch PostgreSQL database (dropped afterwards) and one ``strongroom
serve`` on it (objects under a temporary ``--data-dir``: no upload happens). The open-file
limit of this process, inherited by the server, is lifted to its hard limit. Over the API:
a person, ``--workspaces`` workspaces (quotas lifted with ``strongroom admin quota``),
``--polls`` workers spread over them (``POST /v1/workers``) and ``--probes`` local backups,
each assigned to one of those workers. Then one asyncio process (raw HTTP/1.1 over
asyncio streams, one keep-alive connection per worker) keeps every worker waiting on
``POST /v1/claims`` ``{"wait_seconds": 30}``, asking again at once after each 204, and
measures:

- server memory per waiting poll: (RSS with every poll waiting - RSS before) / polls;
- server CPU while idle: over 10 s with every poll waiting (/proc/<pid>/stat), both in
  steady state (polls expire and are renewed: polls/30 per second) and, when the ramp
  leaves one, in a window in which no poll expires (from the first second after the ramp
  in which the server used under 5 % of a core: it answers the polls' first looks after
  the client sent them); the client's CPU beside it;
- the time of an ordinary request beside them (20 GETs of a backup by its admin);
- the time from a ``trigger`` (just before it is sent) to the claim (201) of that run by
  the one worker it is assigned to, ``--probes`` times.

After its first 204 each poll waits a random part of 30 s before asking again, so that
from two poll times after the ramp the renewals come evenly (polls/30 per second): the
steady state is measured there.

It prints the figures against the targets (under 20 KiB per poll, under 5 % of one core
idle, claimed within 1 s); a missed target is reported, never an error. ``--py-spy S``
profiles the server for S seconds of steady state (``py-spy`` on PATH) and prints the
functions it spent most time in.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx2
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _servers import (
    HOST,
    LOCAL_POSTGRES,
    Instance,
    admin_quota,
    cpu_seconds,
    new_workspace,
    percentile,
    raise_file_limit,
    rss_bytes,
    scratch_database,
    server_environment,
    sign_in,
)

WAIT_SECONDS = 30
RSS_TARGET = 20 * 1024  # bytes per waiting poll
CPU_TARGET = 0.05  # of one core, idle
CLAIM_TARGET = 1.0  # seconds from trigger to claim
RAMP_BATCH = 200  # connections opened at once
RETENTION = {"expire_after": "P30D", "lock_for": "PT0S"}
WORKSPACES_PER_PERSON = 5


@dataclass
class Poller:
    """One worker's credential and what its polls saw."""

    token: str
    claimed: asyncio.Event = field(default_factory=asyncio.Event)
    claimed_at: float = 0.0
    run_id: str = ""
    spread: bool = False


@dataclass
class State:
    waiting: int = 0
    started: int = 0  # polls sent
    expired: int = 0  # 204s
    claimed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    first_sent: float = 0.0
    stop: bool = False


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return status, headers, body


def request_bytes(port: int, token: str, path: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def poll_forever(port: int, poller: Poller, state: State, opened: asyncio.Semaphore) -> None:
    """Keep one worker waiting on ``POST /v1/claims`` until ``state.stop``."""
    claim = request_bytes(port, poller.token, "/v1/claims", b'{"wait_seconds": %d}' % WAIT_SECONDS)
    writer: asyncio.StreamWriter | None = None
    while not state.stop:
        try:
            if writer is None:
                async with opened:
                    reader, writer = await asyncio.open_connection(HOST, port)
            writer.write(claim)
            state.started += 1
            state.waiting += 1
            state.first_sent = state.first_sent or time.monotonic()
            try:
                status, headers, body = await read_response(reader)
            finally:
                state.waiting -= 1
        except (OSError, asyncio.IncompleteReadError) as error:
            state.errors[type(error).__name__] += 1
            if writer is not None:
                writer.close()
            writer = None
            await asyncio.sleep(1.0)
            continue
        if headers.get("connection", "").lower() == "close":
            writer.close()
            writer = None
        if status == 204:
            state.expired += 1
            if not poller.spread:
                # Once, after the first 204: ask again after a random part of a poll's
                # time, so that the renewals spread evenly (polls/30 per second) instead
                # of coming back in the burst of the ramp every 30 s.
                # The connection is closed first: the server's keep-alive timeout (5 s)
                # would close it during the pause.
                poller.spread = True
                if writer is not None:
                    writer.close()
                    writer = None
                await asyncio.sleep(random.uniform(0, WAIT_SECONDS))
        elif status == 201:
            poller.claimed_at = time.monotonic()
            poller.run_id = json.loads(body)["run"]["id"]
            state.claimed += 1
            poller.claimed.set()
        else:
            state.errors[f"HTTP {status}"] += 1
            await asyncio.sleep(1.0)
    if writer is not None:
        writer.close()


# Set-up over the API.


async def create_workers(url: str, workspaces: list[tuple[UUID, str]], count: int) -> list[str]:
    """``count`` workers spread over ``workspaces``, 16 requests at a time; their tokens."""
    tokens: list[str] = [""] * count
    gate = asyncio.Semaphore(16)
    async with httpx2.AsyncClient(base_url=url, trust_env=False, timeout=60) as client:

        async def one(index: int) -> None:
            _wid, session = workspaces[index % len(workspaces)]
            async with gate:
                answer = await client.post(
                    "/v1/workers",
                    json={"name": f"poll-{index}"},
                    headers={"Authorization": f"Bearer {session}"},
                )
            if answer.status_code != 201:
                raise SystemExit(f"POST /v1/workers: {answer.status_code} {answer.text}")
            tokens[index] = answer.json()["token"]

        await asyncio.gather(*(one(index) for index in range(count)))
    return tokens


def probe_backups(url: str, workspaces: list[tuple[UUID, str]], worker_ids: list[str]) -> list[str]:
    """One local backup per probe worker, assigned to it (active); their ids."""
    ids = []
    with httpx2.Client(base_url=url, trust_env=False, timeout=30) as client:
        for number, worker_id in enumerate(worker_ids):
            wid, session = workspaces[number % len(workspaces)]
            auth = {"Authorization": f"Bearer {session}"}
            made = client.post(
                f"/v1/workspaces/{wid}/backups",
                json={"name": f"probe-{number}", "kind": "local"},
                headers=auth,
            )
            assert made.status_code == 201, made.text
            patched = client.patch(
                f"/v1/backups/{made.json()['id']}",
                json={"worker_id": worker_id, "retention": RETENTION},
                headers=auth,
            )
            assert patched.status_code == 200, patched.text
            ids.append(made.json()["id"])
    return ids


def worker_ids_of(url: str, workspaces: list[tuple[UUID, str]], names: set[str]) -> dict[str, str]:
    """The ids of the workers named ``names`` (name -> id), from the workers list."""
    found: dict[str, str] = {}
    with httpx2.Client(base_url=url, trust_env=False, timeout=30) as client:
        for _wid, session in workspaces:
            cursor: str | None = None
            while len(found) < len(names):
                params = {"limit": "200", **({"cursor": cursor} if cursor else {})}
                page = client.get(
                    "/v1/workers", params=params, headers={"Authorization": f"Bearer {session}"}
                ).json()
                found |= {w["name"]: w["id"] for w in page["data"] if w["name"] in names}
                cursor = page["next_cursor"]
                if cursor is None:
                    break
    return found


# Measures.


async def cpu_over(pid: int, seconds: float, state: State) -> dict[str, float]:
    expired = state.expired
    server, client, began = cpu_seconds(pid), time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    elapsed = time.monotonic() - began
    return {
        "server_core": (cpu_seconds(pid) - server) / elapsed,
        "client_core": (time.process_time() - client) / elapsed,
        "renewed_per_s": (state.expired - expired) / elapsed,
    }


def database_connections(dbname: str) -> int:
    with psycopg.connect(LOCAL_POSTGRES, autocommit=True, connect_timeout=5) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (dbname,)
        ).fetchone()
    return int(row[0]) if row else 0


def profile(pid: int, seconds: int, workdir: Path) -> list[str]:
    """``py-spy record`` of the server: the functions most often on top of its stacks."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        return ["py-spy not installed: pip install py-spy"]
    out = workdir / "py-spy.txt"
    done = subprocess.run(
        [
            spy,
            "record",
            "-p",
            str(pid),
            "-d",
            str(seconds),
            "-r",
            "50",
            "-f",
            "raw",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=False,
    )
    if done.returncode != 0 or not out.exists():
        return [f"py-spy failed: {done.stderr.strip()[-300:]}"]
    leaf: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        total += int(count)
        leaf[frames[-1]] += int(count)
        for frame in set(frames):
            inclusive[frame] += int(count)
    lines = [f"samples: {total}", "top of stack:"]
    lines += [f"  {n / total:6.1%} {frame}" for frame, n in leaf.most_common(12)]
    lines.append("anywhere on the stack (inclusive):")
    lines += [f"  {n / total:6.1%} {frame}" for frame, n in inclusive.most_common(45)]
    return lines


async def ordinary_reads(
    url: str, probes: list[tuple[str, int]], session_of: list[str], count: int = 20
) -> list[float]:
    """Seconds of ``count`` GETs of a backup by its admin, one after the other, while the
    polls wait and renew (an ordinary request beside them: it must keep its pool slot)."""
    backup_id, index = probes[0]
    times = []
    async with httpx2.AsyncClient(base_url=url, trust_env=False, timeout=60) as client:
        for _ in range(count):
            began = time.monotonic()
            answer = await client.get(
                f"/v1/backups/{backup_id}",
                headers={"Authorization": f"Bearer {session_of[index]}"},
            )
            times.append(time.monotonic() - began if answer.status_code == 200 else float("inf"))
            await asyncio.sleep(0.1)
    return times


async def trigger_probes(
    url: str, probes: list[tuple[str, int]], pollers: list[Poller], session_of: list[str]
) -> list[dict[str, Any]]:
    """Trigger each probe backup in turn: the trigger's answer and its time, and the
    seconds from just before it is sent to the claim's 201 at the worker it is assigned to
    (inf: none within 35 s)."""
    results: list[dict[str, Any]] = []
    for backup_id, index in probes:
        poller = pollers[index]
        async with httpx2.AsyncClient(base_url=url, trust_env=False, timeout=60) as client:
            triggered_at = time.monotonic()
            try:
                answer = await client.post(
                    f"/v1/backups/{backup_id}/trigger",
                    headers={"Authorization": f"Bearer {session_of[index]}"},
                )
            except httpx2.TransportError as error:
                answer = httpx2.Response(599, text=f"no answer: {type(error).__name__}")
            result: dict[str, Any] = {
                "trigger_status": answer.status_code,
                "trigger_s": time.monotonic() - triggered_at,
                "claim_s": float("inf"),
            }
            if answer.status_code != 202:
                result["trigger_error"] = answer.text[:300]
            else:
                with suppress(TimeoutError):
                    await asyncio.wait_for(poller.claimed.wait(), 35)
                    result["claim_s"] = poller.claimed_at - triggered_at
            results.append(result)
            print(f"  probe: {result}", flush=True)
            if poller.run_id:  # finished, so that the backup has no open run
                await client.post(
                    f"/v1/runs/{poller.run_id}/fail",
                    json={"error": "probe"},
                    headers={"Authorization": f"Bearer {poller.token}"},
                )
            poller.claimed.clear()
            poller.run_id = ""
        await asyncio.sleep(3)
    return results


async def measure(
    instance: Instance,
    tokens: list[str],
    probes: list[tuple[str, int]],
    session_of: list[str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Polls up, the figures, polls down."""
    pid = instance.proc.pid
    figures: dict[str, Any] = {"polls": len(tokens)}
    await asyncio.sleep(3)
    figures["rss_before_mib"] = rss_bytes(pid) / 2**20
    figures["idle_without_polls"] = await cpu_over(pid, 10, State())
    state = State()
    pollers = [Poller(token) for token in tokens]
    opened = asyncio.Semaphore(RAMP_BATCH)
    ramp_began = time.monotonic()
    tasks = [
        asyncio.create_task(poll_forever(instance.port, poller, state, opened))
        for poller in pollers
    ]
    try:
        while state.waiting < len(tokens) and time.monotonic() - ramp_began < 300:
            await asyncio.sleep(0.2)
        ramp = time.monotonic() - ramp_began
        figures["ramp_seconds"] = ramp
        figures["waiting_after_ramp"] = state.waiting
        print(f"  {state.waiting} polls waiting after {ramp:.1f} s", flush=True)
        # A window in which no poll expires: from the end of the ramp until the first
        # poll (sent at ramp_began) is due back.
        # The server answers the polls' first looks after the client sent them: the
        # window begins once a second of its CPU is under the target (or too late).
        settle_began = time.monotonic()
        while ramp_began + WAIT_SECONDS - time.monotonic() > 7:
            if (await cpu_over(pid, 1.0, state))["server_core"] < CPU_TARGET:
                break
        figures["settle_seconds"] = time.monotonic() - settle_began
        quiet_left = ramp_began + WAIT_SECONDS - time.monotonic() - 1.0
        if quiet_left >= 5:
            figures["rss_with_polls_mib"] = rss_bytes(pid) / 2**20
            figures["idle_quiet"] = await cpu_over(pid, min(10.0, quiet_left - 0.5), state)
        # Steady state: every poll renewed once after a random pause (poll_forever), so
        # from two poll times after the ramp the renewals come evenly, polls/30 per second.
        steady_from = ramp_began + ramp + 2 * WAIT_SECONDS + 2
        await asyncio.sleep(max(0.0, steady_from - time.monotonic()))
        figures.setdefault("rss_with_polls_mib", rss_bytes(pid) / 2**20)
        figures["waiting_steady"] = state.waiting
        figures["idle_steady"] = await cpu_over(pid, 10, state)
        figures["database_connections"] = database_connections(args.dbname)
        figures["get_while_polling_s"] = await ordinary_reads(instance.url, probes, session_of)
        figures["rss_per_poll_kib"] = (
            (figures["rss_with_polls_mib"] - figures["rss_before_mib"]) * 1024 / len(tokens)
        )
        print(f"  so far: {json.dumps(figures)}", flush=True)
        figures["claim_after_trigger_s"] = await trigger_probes(
            instance.url, probes, pollers, session_of
        )
        if args.py_spy:
            figures["profile"] = await asyncio.to_thread(
                profile, pid, args.py_spy, args.workdir_path
            )
        figures["errors"] = dict(state.errors)
        figures["client_rss_mib"] = rss_bytes(os.getpid()) / 2**20
    finally:
        state.stop = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return figures


def report(figures: dict[str, Any]) -> str:
    def verdict(ok: bool) -> str:
        return "meets" if ok else "MISSES"

    per_poll = figures["rss_per_poll_kib"]
    steady = figures["idle_steady"]
    quiet = figures.get("idle_quiet")
    probes = figures["claim_after_trigger_s"]
    claims = [probe["claim_s"] for probe in probes]
    triggers = [probe["trigger_s"] for probe in probes]
    refused = [probe for probe in probes if probe["trigger_status"] != 202]
    worst = max(claims) if claims else float("inf")
    lines = [
        "",
        f"== {figures['polls']} waiting polls (wait_seconds {WAIT_SECONDS}), one instance",
        f"  ramp: all waiting after {figures['ramp_seconds']:.1f} s; errors {figures['errors']}",
        f"  server RSS {figures['rss_before_mib']:.1f} MiB before, "
        f"{figures['rss_with_polls_mib']:.1f} MiB with the polls: {per_poll:.1f} KiB per poll"
        f" (target < 20 KiB: {verdict(per_poll * 1024 < RSS_TARGET)})",
        f"  server's database connections while they wait: {figures['database_connections']}",
        "  GET of a backup while they wait and renew: p50 "
        f"{percentile(figures['get_while_polling_s'], 0.5) * 1000:.0f} ms, max "
        f"{max(figures['get_while_polling_s']) * 1000:.0f} ms",
        f"  server CPU without polls: {figures['idle_without_polls']['server_core']:.1%} of a core",
    ]
    if quiet:
        lines.append(f"  first looks answered {figures['settle_seconds']:.1f} s after the ramp")
        lines.append(
            f"  server CPU, polls waiting, none expiring: {quiet['server_core']:.1%} of a core"
            f" (client {quiet['client_core']:.1%}) (target < 5 %: "
            f"{verdict(quiet['server_core'] < CPU_TARGET)})"
        )
    lines += [
        f"  server CPU, steady state ({steady['renewed_per_s']:.0f} polls renewed per s): "
        f"{steady['server_core']:.1%} of a core (client {steady['client_core']:.1%})"
        f" (target < 5 %: {verdict(steady['server_core'] < CPU_TARGET)})",
        "  trigger to claim: "
        + ", ".join(f"{seconds * 1000:.0f} ms" for seconds in claims)
        + f"; p50 {percentile(claims, 0.5) * 1000:.0f} ms"
        + f" (target < 1 s: {verdict(worst < CLAIM_TARGET)})",
        "  the trigger's own answer: "
        + ", ".join(f"{seconds * 1000:.0f} ms" for seconds in triggers)
        + (f"; refused: {refused}" if refused else ""),
        f"  client process RSS {figures['client_rss_mib']:.0f} MiB",
    ]
    lines += figures.get("profile", [])
    return "\n".join(lines)


def set_up(url: str, env: dict[str, str], args: argparse.Namespace) -> Any:
    workspaces: list[tuple[UUID, str]] = []
    with httpx2.Client(base_url=url, trust_env=False, timeout=30) as client:
        session = ""
        for number in range(args.workspaces):
            if number % WORKSPACES_PER_PERSON == 0:
                session = sign_in(client, f"polls-{number}-{time.time_ns()}@example.com")
            workspaces.append(new_workspace(client, session, f"Polls {number}"))
    for wid, _session in workspaces:
        admin_quota(env, wid, "workers_per_workspace", 0)
        admin_quota(env, wid, "backups_per_workspace", 0)
    began = time.monotonic()
    tokens = asyncio.run(create_workers(url, workspaces, args.polls))
    print(f"  {args.polls} workers created in {time.monotonic() - began:.1f} s", flush=True)
    # Probe workers: spread over the list (and so over the workspaces).
    step = max(1, args.polls // max(1, args.probes))
    indexes = [number * step for number in range(args.probes)]
    ids = worker_ids_of(url, workspaces, {f"poll-{index}" for index in indexes})
    backups = probe_backups(
        url, workspaces_for(workspaces, indexes), [ids[f"poll-{i}"] for i in indexes]
    )
    session_of = [workspaces[index % len(workspaces)][1] for index in range(args.polls)]
    return tokens, list(zip(backups, indexes, strict=True)), session_of


def workspaces_for(
    workspaces: list[tuple[UUID, str]], indexes: list[int]
) -> list[tuple[UUID, str]]:
    """The workspace of each probe worker, in the order of ``indexes``."""
    return [workspaces[index % len(workspaces)] for index in indexes]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--polls", type=int, default=10_000)
    parser.add_argument("--workspaces", type=int, default=1)
    parser.add_argument("--probes", type=int, default=5)
    parser.add_argument("--py-spy", type=int, default=0, metavar="SECONDS")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    limit = raise_file_limit()
    if limit < args.polls + 1000:
        raise SystemExit(f"open-file limit {limit}: too low for {args.polls} connections")
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        args.workdir_path = workdir
        database_url = stack.enter_context(scratch_database("polls"))
        args.dbname = database_url.rsplit("/", 1)[1]
        env = server_environment({"STRONGROOM_DATABASE_URL": database_url})
        env["STRONGROOM_DATA_DIR"] = str(workdir / "data")
        instance = Instance(stack, "polls", env, workdir)
        instance.wait_ready()
        tokens, probes, session_of = set_up(instance.url, env, args)
        figures = asyncio.run(measure(instance, tokens, probes, session_of, args))
        print(report(figures))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
