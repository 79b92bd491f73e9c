"""A soak of two ``strongroom serve`` instances on one PostgreSQL and one SeaweedFS, one
of them killed with SIGKILL now and then (issue 32, point 3). Black box: HTTP only.

    .venv/bin/python bench/soak.py                          # 30 minutes, a kill every 5
    .venv/bin/python bench/soak.py --minutes 3 --kill-every 1
    .venv/bin/python bench/soak.py --json soak.json

All on 127.0.0.1: a scratch PostgreSQL database (dropped afterwards), ``weed mini``, and
two ``strongroom serve`` instances. Set-up over the API (sign-up, device flow, a workspace,
workers, backups) and ``strongroom admin quota``. Then mixed load from one asyncio process,
each client preferring one instance and failing over to the other:

- creates of manual backups, half with an ``Idempotency-Key`` (those retried after a
  connection error, 502 or 503; the others never, so their lost answers stay unknown);
- reads: GET of acknowledged backups and runs, backup and run lists;
- manual runs: ``POST /v1/runs``, upload to the presigned URL, confirm, some downloads
  compared byte for byte;
- worker-agent-like clients: ``POST /v1/claims`` long polls, heartbeats, upload, confirm;
  their backups are triggered (``trigger``) or scheduled (``* * * * *``);

while every ``--kill-every`` minutes one instance (in turn) gets SIGKILL and is restarted.
At the end it checks, over the API: acknowledged writes lost (every 201 create, 202
trigger and 200 confirm readable, every confirmed artifact downloaded and compared), runs
executed twice (a run confirmed by two claims, claimed again after its confirm, or one
schedule slot with two runs), runs left ``running`` past their lease (after the last
lease has passed); and prints p50/p99 per operation before the first kill, during each kill
window (SIGKILL until the instance is ready again plus ``SETTLE`` seconds) and after it.
Exit code 1 on anything lost, twice or stuck.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import sys
import tempfile
import time
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _servers import (
    Instance,
    admin_quota,
    new_workspace,
    scratch_database,
    server_environment,
    sign_in,
    start_seaweed,
)
from _soak_checks import Verdict, check, latency_table
from _soak_clients import Api, Cluster, Confirmed, Ledger, announce, new_key, payload

SECRET_KEY = "soak-secret-key-0123456789abcdef0123456789abcdef"
RETENTION = {"expire_after": "P30D", "lock_for": "PT0S"}
EVERY_MINUTE = {"cron": "* * * * *", "timezone": "UTC"}
CLAIM_WAIT = 10  # seconds of each long poll
SETTLE = 5.0  # seconds after an instance is ready again that still count as its kill window
LAST_KILL_MARGIN = 20.0  # no kill this close to the end: the restart must be done by then


@dataclass
class Options:
    seconds: float
    kill_every: float
    clients: int = 2  # clients of each kind
    workers: int = 4
    workdir: Path | None = None
    quiet: bool = False


@dataclass
class Plan:
    """What the set-up made."""

    workspace_id: str = ""
    token: str = ""
    manual_backups: list[str] = field(default_factory=list)
    scheduled: list[tuple[str, str]] = field(default_factory=list)  # (backup id, worker id)
    triggered: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Kill:
    label: str
    at: float
    ready_at: float


def log(options: Options, text: str) -> None:
    if not options.quiet:
        print(text, flush=True)


# Set-up.


def set_up(url: str, env: dict[str, str], options: Options, ledger: Ledger) -> Plan:
    """Over the API of one instance: a person, a workspace (quotas lifted), workers, and
    their backups (one scheduled every minute and one triggered, each), manual backups."""
    plan = Plan()
    with httpx2.Client(base_url=url, trust_env=False, timeout=30) as client:
        session = sign_in(client, f"soak-{new_key()[:8]}@example.com")
        workspace_id, plan.token = new_workspace(client, session, "Soak")
        plan.workspace_id = str(workspace_id)
        for resource_name in ("backups_per_workspace", "workers_per_workspace"):
            admin_quota(env, workspace_id, resource_name, 0)
        auth = {"Authorization": f"Bearer {plan.token}"}

        def made(response: httpx2.Response, what: str) -> dict[str, Any]:
            if response.status_code not in (200, 201):
                raise SystemExit(f"set-up: {what}: {response.status_code} {response.text}")
            body: dict[str, Any] = response.json()
            return body

        def backup(name: str, kind: str, patch: dict[str, Any]) -> str:
            path = f"/v1/workspaces/{workspace_id}/backups"
            created = made(client.post(path, json={"name": name, "kind": kind}, headers=auth), name)
            made(client.patch(f"/v1/backups/{created['id']}", json=patch, headers=auth), name)
            ledger.backups[created["id"]] = name
            return str(created["id"])

        for number in range(options.workers):
            worker = made(
                client.post("/v1/workers", json={"name": f"w{number}"}, headers=auth), "w"
            )
            ledger.workers[worker["id"]] = worker["token"]
            assign = {"worker_id": worker["id"], "retention": RETENTION}
            scheduled = backup(f"sched-{number}", "local", {**assign, "schedule": EVERY_MINUTE})
            plan.scheduled.append((scheduled, worker["id"]))
            plan.triggered.append((backup(f"trig-{number}", "local", assign), worker["id"]))
        for number in range(options.clients):
            plan.manual_backups.append(
                backup(f"manual-{number}", "manual", {"retention": RETENTION})
            )
    return plan


# The clients.


class Load:
    """The clients' shared state: the cluster, the ledger, the plan, when to stop."""

    def __init__(self, cluster: Cluster, ledger: Ledger, plan: Plan) -> None:
        self.cluster, self.ledger, self.plan = cluster, ledger, plan
        self.stop = asyncio.Event()
        self.random = random.Random(32)

    def api(self, prefer: int, token: str | None = None) -> Api:
        return Api(self.cluster, prefer, token or self.plan.token)

    async def pause(self, low: float, high: float) -> None:
        """Sleep a while, or until the load stops."""
        with suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), self.random.uniform(low, high))

    async def creator(self, number: int) -> None:
        api, count = self.api(number), 0
        path = f"/v1/workspaces/{self.plan.workspace_id}/backups"
        while not self.stop.is_set():
            count += 1
            body = {"name": f"c{number}-{count}", "kind": "manual"}
            keyed = count % 2 == 0
            key = new_key() if keyed else None
            op = "create-keyed" if keyed else "create"
            answer = await api.call(op, "POST", path, body=body, key=key, retry=keyed)
            if answer is None:
                self.ledger.counts["create unanswered (not acknowledged)"] += 1
            elif answer.status_code == 201:
                created = answer.json()["id"]
                self.ledger.backups[created] = body["name"]
                if keyed and count % 10 == 0:  # the same key again: the same backup
                    again = await api.call(op, "POST", path, body=body, key=key)
                    answered = again is not None and again.status_code == 201
                    if answered and again is not None and again.json()["id"] != created:
                        self.ledger.counts["idempotent repeat made another backup"] += 1
            elif answer.status_code == 409:  # a lost first answer, then an unkeyed retry
                self.ledger.counts[f"create {answer.json()['error']['code']}"] += 1
            else:
                self.ledger.counts[f"create answered {answer.status_code}"] += 1
            await self.pause(0.1, 0.4)

    async def reader(self, number: int) -> None:
        api = self.api(number)
        lists = f"/v1/workspaces/{self.plan.workspace_id}/backups?limit=50"
        while not self.stop.is_set():
            backup_id = self.random.choice(list(self.ledger.backups))
            answer = await api.call("get", "GET", f"/v1/backups/{backup_id}")
            if answer is not None and answer.status_code == 404:
                self.ledger.read_misses.append(f"backup {backup_id}")
            await api.call("list", "GET", lists)
            if self.ledger.runs:
                run_id = self.random.choice(list(self.ledger.runs))
                answer = await api.call("run-get", "GET", f"/v1/runs/{run_id}")
                if answer is not None and answer.status_code == 404:
                    self.ledger.read_misses.append(f"run {run_id}")
            scheduled = self.random.choice(self.plan.scheduled)[0]
            await api.call("runs-list", "GET", f"/v1/backups/{scheduled}/runs?limit=20")
            await self.pause(0.05, 0.3)

    async def upload_and_confirm(self, api: Api, run_id: str, holder: str) -> bool:
        """Announce, upload and confirm one artifact of a run; whether the confirm was
        acknowledged (a confirm repeated after a lost answer may find the run finished)."""
        seed, size = self.random.getrandbits(48), self.random.randint(1, 64) * 1024
        data = payload(seed, size)
        plan = await api.call(
            "upload-url", "POST", f"/v1/runs/{run_id}/upload-url", body=announce("data.bin", data)
        )
        if plan is None or plan.status_code != 201:
            who = "manual" if holder == "manual" else "worker"
            self.ledger.counts[f"upload-url failed ({who})"] += 1
            return False
        upload = plan.json()
        if not await api.put_object("put", upload["url"], upload.get("headers") or {}, data):
            self.ledger.counts["presigned PUT failed"] += 1
            return False
        answer = await api.call("confirm", "POST", f"/v1/runs/{run_id}/confirm", body={})
        if answer is not None and answer.status_code == 200:
            self.ledger.confirmed.append(
                Confirmed(run_id, upload["artifact_id"], seed, size, holder, time.monotonic())
            )
            return True
        status = "unanswered" if answer is None else answer.status_code
        self.ledger.counts[f"confirm {status} (not acknowledged)"] += 1
        return False

    async def manual(self, number: int) -> None:
        api = self.api(number)
        backup_id = self.plan.manual_backups[number % len(self.plan.manual_backups)]
        done = 0
        while not self.stop.is_set():
            answer = await api.call(
                "run-create", "POST", "/v1/runs", body={"backup_id": backup_id}, key=new_key()
            )
            if answer is None or answer.status_code != 201:
                self.ledger.counts[f"manual run {answer and answer.status_code}"] += 1
                await self.pause(0.5, 1.0)
                continue
            run_id = answer.json()["id"]
            self.ledger.runs[run_id] = "manual"
            if await self.upload_and_confirm(api, run_id, "manual"):
                done += 1
                if done % 3 == 0:
                    await self.download(api, self.ledger.confirmed[-1])
            else:
                await api.call("fail", "POST", f"/v1/runs/{run_id}/fail", body={"error": "soak"})
            await self.pause(0.2, 0.8)

    async def download(self, api: Api, confirmed: Confirmed) -> None:
        matches = await api.download_matches(confirmed.artifact_id, confirmed.seed, confirmed.size)
        if matches is False:
            self.ledger.download_mismatches.append(confirmed.artifact_id)

    async def worker(self, number: int, worker_id: str) -> None:
        api = self.api(number, self.ledger.workers[worker_id])
        while not self.stop.is_set():
            answer = await api.call(
                "claim",
                "POST",
                "/v1/claims",
                body={"wait_seconds": CLAIM_WAIT},
                timeout=CLAIM_WAIT + 15,
            )
            if answer is None or answer.status_code == 204:
                continue
            if answer.status_code != 201:
                self.ledger.counts[f"claim answered {answer.status_code}"] += 1
                await self.pause(0.5, 1.0)
                continue
            run = answer.json()["run"]
            self.ledger.claims.append((time.monotonic(), run["id"], worker_id, run["attempt"]))
            await self.work(api, run, f"{worker_id}#{run['attempt']}")

    async def work(self, api: Api, run: dict[str, Any], holder: str) -> None:
        """What an agent does with a claimed run: heartbeats around the upload, confirm."""
        beat = f"/v1/runs/{run['id']}/heartbeat"
        for _ in range(2):
            answer = await api.call("heartbeat", "POST", beat, body={})
            if answer is None or answer.status_code != 200:
                self.ledger.counts[f"heartbeat {answer and answer.status_code}: run let go"] += 1
                return
            await asyncio.sleep(self.random.uniform(0.2, 1.0))
        if not await self.upload_and_confirm(api, run["id"], holder):
            await api.call("fail", "POST", f"/v1/runs/{run['id']}/fail", body={"error": "soak"})

    async def triggers(self) -> None:
        api = self.api(1)
        while not self.stop.is_set():
            backup_id, _worker = self.random.choice(self.plan.triggered)
            answer = await api.call(
                "trigger", "POST", f"/v1/backups/{backup_id}/trigger", key=new_key()
            )
            if answer is not None and answer.status_code == 202:
                self.ledger.runs[answer.json()["id"]] = "trigger"
            elif answer is not None and answer.status_code != 409:
                self.ledger.counts[f"trigger answered {answer.status_code}"] += 1
            await self.pause(0.5, 2.0)


async def killer(
    instances: list[Instance], options: Options, began: float, load: Load, kills: list[Kill]
) -> None:
    """SIGKILL one instance (in turn) every ``kill_every`` seconds, restart it, wait until
    it is ready; no kill within ``LAST_KILL_MARGIN`` seconds of the end."""
    end = began + options.seconds
    number = 0
    while True:
        at = began + (number + 1) * options.kill_every
        if at > end - LAST_KILL_MARGIN:
            return
        try:
            await asyncio.wait_for(load.stop.wait(), max(0.0, at - time.monotonic()))
            return
        except TimeoutError:
            pass
        instance = instances[number % len(instances)]
        killed_at = time.monotonic()
        instance.proc.kill()
        instance.restart()
        await asyncio.to_thread(instance.wait_ready, 90.0)
        kills.append(Kill(instance.label, killed_at - began, time.monotonic() - began))
        log(
            options,
            f"  killed {instance.label} at {killed_at - began:.0f} s, ready again "
            f"{time.monotonic() - killed_at:.1f} s later",
        )
        number += 1


async def drive(instances: list[Instance], plan: Plan, ledger: Ledger, options: Options) -> Verdict:
    cluster = Cluster([instance.url for instance in instances], ledger)
    load = Load(cluster, ledger, plan)
    began = time.monotonic()
    kills: list[Kill] = []
    try:
        tasks = [asyncio.create_task(load.creator(n)) for n in range(options.clients)]
        tasks += [asyncio.create_task(load.reader(n)) for n in range(options.clients)]
        tasks += [asyncio.create_task(load.manual(n)) for n in range(options.clients)]
        workers = list(ledger.workers)
        tasks += [asyncio.create_task(load.worker(n, w)) for n, w in enumerate(workers)]
        tasks.append(asyncio.create_task(load.triggers()))
        kill_task = asyncio.create_task(killer(instances, options, began, load, kills))
        with suppress(TimeoutError):
            await asyncio.wait_for(load.stop.wait(), options.seconds)
        load.stop.set()
        ended = time.monotonic() - began
        await asyncio.wait_for(kill_task, 120)  # a restart under way finishes
        _done, pending = await asyncio.wait(tasks, timeout=CLAIM_WAIT + 90)
        for task in pending:
            task.cancel()
        for task in tasks:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        log(options, f"  load stopped at {ended:.0f} s; checking")
        verdict = await check(load.api(0), plan, ledger, instances)
        verdict.latency = latency_table(ledger.samples, began, ended, kills, SETTLE)
        verdict.kills = [(kill.label, kill.at, kill.ready_at) for kill in kills]
        return verdict
    finally:
        await cluster.close()


def run(options: Options) -> Verdict:
    """The whole soak: processes up, set-up, load with kills, checks; everything stopped."""
    with ExitStack() as stack:
        workdir = options.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        database_url = stack.enter_context(scratch_database("soak"))
        s3 = start_seaweed(stack, workdir)
        env = server_environment(
            {"STRONGROOM_DATABASE_URL": database_url, "STRONGROOM_SECRET_KEY": SECRET_KEY, **s3}
        )
        first = Instance(stack, "a", env, workdir)
        first.wait_ready()  # migrates the database before the second starts
        second = Instance(stack, "b", env, workdir)
        second.wait_ready()
        ledger = Ledger()
        plan = set_up(first.url, env, options, ledger)
        log(
            options,
            f"soak: {options.seconds:.0f} s, a kill every {options.kill_every:.0f} s, "
            f"instances {first.url} {second.url}",
        )
        return asyncio.run(drive([first, second], plan, ledger, options))


def _stop_on_signal(signum: int, _frame: FrameType | None) -> None:
    for other in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(other, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--kill-every", type=float, default=5.0, help="minutes")
    parser.add_argument("--clients", type=int, default=2, help="clients of each kind")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", type=Path, help="write the figures there")
    parser.add_argument("--workdir", type=Path, help="keep logs there (default: temporary)")
    args = parser.parse_args()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop_on_signal)
    options = Options(
        args.minutes * 60, args.kill_every * 60, args.clients, args.workers, args.workdir
    )
    verdict = run(options)
    print(verdict.render())
    if args.json:
        args.json.write_text(json.dumps(verdict.as_json(), indent=2))
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
