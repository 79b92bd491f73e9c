"""The soak's verdict, over the API after the load: acknowledged writes lost, runs executed
twice, runs stuck past their lease; and the latency of each operation per kill window."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from _servers import Instance, percentile
from _soak_clients import Api, Ledger, Sample

# Long polls last as long as they wait: their latency says nothing.
UNTIMED = ("claim",)
# Seconds past the last lease a run may stay ``running`` (the lease job's interval, 10 s
# by default, and a margin).
LEASE_JOB_SLACK = 25.0
STUCK_WAIT_LIMIT = 100.0


class _Kill(Protocol):
    at: float
    ready_at: float


@dataclass
class Verdict:
    """The soak's findings."""

    lost: list[str] = field(default_factory=list)
    twice: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    acknowledged: dict[str, int] = field(default_factory=dict)
    latency: list[dict[str, Any]] = field(default_factory=list)
    kills: list[tuple[str, float, float]] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not (self.lost or self.twice or self.stuck)

    def as_json(self) -> dict[str, Any]:
        return {
            "lost": self.lost,
            "twice": self.twice,
            "stuck": self.stuck,
            "counts": self.counts,
            "acknowledged": self.acknowledged,
            "kills": self.kills,
            "outcomes": self.outcomes,
            "latency": self.latency,
        }

    def render(self) -> str:
        lines = ["", "== kills (seconds from the start: SIGKILL, ready again)"]
        lines += [f"  {label}: {at:7.1f} {ready:7.1f}" for label, at, ready in self.kills]
        lines.append("== acknowledged")
        lines += [f"  {name}: {number}" for name, number in self.acknowledged.items()]
        lines.append("== answers (all requests)")
        lines += [f"  {name}: {number}" for name, number in sorted(self.outcomes.items())]
        if self.counts:
            lines.append("== events (not failures by themselves)")
            lines += [f"  {name}: {number}" for name, number in sorted(self.counts.items())]
        lines.append("== latency, ms (window, operation, requests, p50, p99, errors)")
        for row in self.latency:
            lines.append(
                f"  {row['window']:<14} {row['op']:<13} {row['n']:6d} {row['p50_ms']:8.1f}"
                f" {row['p99_ms']:8.1f} {row['errors']:5d}"
            )
        lines.append("== verdict")
        for name, found in (("lost", self.lost), ("twice", self.twice), ("stuck", self.stuck)):
            lines.append(f"  {name}: {len(found)}")
            lines += [f"    {item}" for item in found[:20]]
        lines.append("  PASS" if self.passed else "  FAIL")
        return "\n".join(lines)


async def bounded(calls: Iterable[Callable[[], Awaitable[None]]], width: int = 8) -> None:
    """Run ``calls`` at most ``width`` at a time."""
    gate = asyncio.Semaphore(width)

    async def one(call: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            await call()

    await asyncio.gather(*(one(call) for call in calls))


async def check(api: Api, plan: Any, ledger: Ledger, instances: list[Instance]) -> Verdict:
    verdict = Verdict(counts=dict(ledger.counts))
    verdict.acknowledged = {
        "backups created (201)": len(ledger.backups),
        "runs created or triggered (201/202)": len(ledger.runs),
        "runs confirmed (200)": len(ledger.confirmed),
        "claims (201)": len(ledger.claims),
    }
    verdict.outcomes = dict(Counter(f"{s.op} {s.outcome}" for s in ledger.samples))
    for instance in instances:
        instance.wait_ready()
    for backup_id, _worker in plan.scheduled:  # no new slots while we look
        await api.call("pause", "POST", f"/v1/backups/{backup_id}/pause")
    await lost_writes(api, ledger, verdict)
    await executed_twice(api, plan, ledger, verdict)
    await stuck_runs(api, plan, verdict)
    return verdict


async def lost_writes(api: Api, ledger: Ledger, verdict: Verdict) -> None:
    lost = verdict.lost
    lost += [f"read as 404 during the load: {what}" for what in ledger.read_misses]
    lost += [f"downloaded other bytes during the load: {a}" for a in ledger.download_mismatches]

    async def readable(path: str, what: str) -> None:
        answer = await api.call("check", "GET", path)
        if answer is None or answer.status_code != 200:
            lost.append(f"{what} answers {answer and answer.status_code}")

    calls: list[Callable[[], Awaitable[None]]] = []
    for backup_id in ledger.backups:
        calls.append(lambda b=backup_id: readable(f"/v1/backups/{b}", f"backup {b}"))
    for run_id in ledger.runs:
        calls.append(lambda r=run_id: readable(f"/v1/runs/{r}", f"run {r}"))
    for worker_id in ledger.workers:
        calls.append(lambda w=worker_id: readable(f"/v1/workers/{w}", f"worker {w}"))

    async def confirmed_holds(index: int) -> None:
        item = ledger.confirmed[index]
        answer = await api.call("check", "GET", f"/v1/runs/{item.run_id}")
        if answer is None or answer.status_code != 200:
            lost.append(f"confirmed run {item.run_id} answers {answer and answer.status_code}")
            return
        run = answer.json()
        if run["state"] != "succeeded" or run["artifact_count"] < 1:
            lost.append(f"confirmed run {item.run_id} is {run['state']}, {run['artifact_count']}")
        matches = await api.download_matches(item.artifact_id, item.seed, item.size)
        if matches is not True:
            lost.append(f"artifact {item.artifact_id} of run {item.run_id}: download {matches}")

    calls += [lambda i=index: confirmed_holds(i) for index in range(len(ledger.confirmed))]
    await bounded(calls)


async def executed_twice(api: Api, plan: Any, ledger: Ledger, verdict: Verdict) -> None:
    holders: dict[str, set[str]] = defaultdict(set)
    confirmed_at: dict[str, float] = {}
    for item in ledger.confirmed:
        holders[item.run_id].add(item.holder)
        confirmed_at.setdefault(item.run_id, item.at)
    verdict.twice += [
        f"run {run_id} confirmed by {sorted(who)}"
        for run_id, who in holders.items()
        if len(who) > 1
    ]
    per_attempt = Counter((run_id, attempt) for _, run_id, _, attempt in ledger.claims)
    verdict.twice += [
        f"run {run_id} attempt {attempt} claimed {number} times"
        for (run_id, attempt), number in per_attempt.items()
        if number > 1
    ]
    verdict.twice += [
        f"run {run_id} claimed by {worker} after its confirm"
        for at, run_id, worker, _ in ledger.claims
        if run_id in confirmed_at and at > confirmed_at[run_id]
    ]
    slots: Counter[tuple[str, str]] = Counter()
    path = f"/v1/workspaces/{plan.workspace_id}/audit?action=run.schedule&limit=200"
    async for event in pages(api, path):
        changes = event.get("changes") or {}
        backup_id = (changes.get("backup_id") or {}).get("to")
        slot = (changes.get("slot") or {}).get("to")
        slots[(str(backup_id), str(slot))] += 1
    verdict.counts["scheduled runs (audited run.schedule)"] = sum(slots.values())
    verdict.twice += [
        f"backup {backup_id} slot {slot}: {number} runs"
        for (backup_id, slot), number in slots.items()
        if number > 1
    ]


async def pages(api: Api, path: str) -> Any:
    """Every item of a paginated list."""
    cursor: str | None = None
    for _ in range(10_000):
        answer = await api.call("check", "GET", path + (f"&cursor={cursor}" if cursor else ""))
        if answer is None or answer.status_code != 200:
            raise RuntimeError(f"GET {path}: {answer and answer.status_code}")
        body = answer.json()
        for item in body["data"]:
            yield item
        cursor = body["next_cursor"]
        if cursor is None:
            return


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def running_runs(api: Api, plan: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for backup_id, _worker in [*plan.scheduled, *plan.triggered]:
        async for run in pages(api, f"/v1/backups/{backup_id}/runs?state=running&limit=200"):
            found.append(run)
    return found


async def stuck_runs(api: Api, plan: Any, verdict: Verdict) -> None:
    """Wait until the last lease of a running run has passed (and the lease job had its
    turn), then report every run still ``running`` past its lease."""
    running = await running_runs(api, plan)
    leases = [_instant(run["lease_expires_at"]) for run in running if run["lease_expires_at"]]
    verdict.counts["runs running when the load stopped"] = len(running)
    if leases:
        wait = (max(leases) - datetime.now(UTC)).total_seconds() + LEASE_JOB_SLACK
        await asyncio.sleep(min(max(wait, 0.0), STUCK_WAIT_LIMIT))
        running = await running_runs(api, plan)
    now = datetime.now(UTC)
    for run in running:
        lease = run["lease_expires_at"]
        if lease is None or _instant(lease) < now:
            verdict.stuck.append(
                f"run {run['id']} running, lease {lease}, attempt {run['attempt']}"
            )


def latency_table(
    samples: list[Sample], began: float, ended: float, kills: list[Any], settle: float
) -> list[dict[str, Any]]:
    """p50/p99 per operation before the first kill, during each kill window (SIGKILL until
    ready plus ``settle``) and after it (until the next kill or the end)."""
    windows: list[tuple[str, float, float]] = []
    first = kills[0].at if kills else ended
    windows.append(("before kills", 0.0, first))
    for number, kill in enumerate(kills, 1):
        calm = kill.ready_at + settle
        following = kills[number].at if number < len(kills) else ended
        windows.append((f"kill {number} during", kill.at, calm))
        windows.append((f"kill {number} after", calm, following))
    rows: list[dict[str, Any]] = []
    for name, start, end in windows:
        chosen: dict[str, list[Sample]] = defaultdict(list)
        for sample in samples:
            at = sample.began - began
            if start <= at < end and sample.op not in UNTIMED and sample.op != "check":
                chosen[sample.op].append(sample)
        for op in sorted(chosen):
            answered = [s.seconds * 1000 for s in chosen[op] if s.outcome != "conn"]
            errors = sum(1 for s in chosen[op] if not s.outcome.isdigit() or int(s.outcome) >= 500)
            rows.append(
                {
                    "window": name,
                    "op": op,
                    "n": len(chosen[op]),
                    "p50_ms": percentile(answered, 0.50),
                    "p99_ms": percentile(answered, 0.99),
                    "errors": errors,
                }
            )
    return rows
