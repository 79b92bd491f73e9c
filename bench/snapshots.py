"""Snapshots against restic, same machine, same data (issue 28).

    .venv/bin/python bench/snapshots.py                 # a ~1 GiB generated tree
    .venv/bin/python bench/snapshots.py --size-mib 64   # a quick run
    .venv/bin/python bench/snapshots.py --repeat 3      # each run, then the medians

restic (Debian's package) backs up to a local repository; Strongroom is ``strongroom
push`` into a snapshot backup of a local ``strongroom serve`` (SQLite + local disk), both
as processes measured alone (wall time, peak RSS from ``wait4``). Steps: the first
backup; the incremental one after ``change_tree`` (5 % of the files); a full restore of
the second snapshot; bytes stored after both runs; bytes the incremental run added; and,
for Strongroom, restoring one file of about 1 MiB (bytes downloaded) and ``strongroom
agent --once`` as a write-only worker backing up the changed tree into a new local
snapshot backup (a first backup: its wall time and peak RSS, beside restic's first
backup). It prints each figure and the ratio Strongroom / restic; with ``--repeat N``,
each run's table, then the median of each figure and of each run's ratio.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))

from _measure import Restic, Step, run_measured  # noqa: E402
from _trees import change_tree, generate_tree  # noqa: E402
from integration_world import expect, workspace_admin  # noqa: E402
from live_server import client_for  # noqa: E402

from support.serve_process import free_port, serving  # noqa: E402
from support.world import bearer  # noqa: E402

MIB = 1 << 20
STRONGROOM = str(Path(sys.executable).with_name("strongroom"))


def _json(step: Step) -> Any:
    """The JSON document a ``--json`` command printed (stderr lines may come around it)."""
    start = min(i for i in (step.output.find("{"), step.output.find("[")) if i >= 0)
    value, _ = json.JSONDecoder().raw_decode(step.output[start:])
    return value


class Strongroom:
    """The command-line client of one workspace of a local server."""

    def __init__(self, url: str, token: str, workspace: str, home: Path) -> None:
        self.url, self.token = url, token
        self.env = {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "STRONGROOM_SERVER": url,
            "STRONGROOM_TOKEN": token,
            "STRONGROOM_WORKSPACE": workspace,
            "NO_PROXY": "*",
        }
        self.workspace = workspace

    def command(self, *args: str) -> Step:
        return run_measured([STRONGROOM, *args, "--json"], self.env)

    def stored_bytes(self) -> int:
        with client_for(self.url) as client:
            listing = expect(
                client.get(
                    f"/v1/workspaces/{self.workspace}/artifacts",
                    params={"limit": 200},
                    headers=bearer(self.token),
                ),
                200,
            )
            total = sum(a["size"] for a in listing["data"])
            while listing.get("next_cursor"):
                listing = expect(
                    client.get(
                        f"/v1/workspaces/{self.workspace}/artifacts",
                        params={"limit": 200, "cursor": listing["next_cursor"]},
                        headers=bearer(self.token),
                    ),
                    200,
                )
                total += sum(a["size"] for a in listing["data"])
        return total

    def new_backup(self) -> str:
        run_measured([STRONGROOM, "key", "create", "--json"], self.env)
        backup = _json(self.command("backup", "create", f"bench-{secrets.token_hex(3)}"))
        with client_for(self.url) as client:
            expect(
                client.patch(
                    f"/v1/backups/{backup['id']}",
                    json={"retention": {"expire_after": "P30D", "lock_for": "PT0S"}},
                    headers=bearer(self.token),
                ),
                200,
            )
        return str(backup["id"])

    def agent_first_backup(self, tree: Path, home: Path) -> Step:
        """A write-only worker's first snapshot of ``tree`` (a new local backup):
        ``strongroom agent --once`` measured alone."""
        with client_for(self.url) as client:
            worker = expect(
                client.post("/v1/workers", json={"name": "bench"}, headers=bearer(self.token)),
                201,
            )
        created = run_measured(
            [STRONGROOM, "backup", "create", f"agent-{secrets.token_hex(3)}", "--kind", "local"],
            self.env,
        ).output
        block = created[created.index("[[backups]]") :].splitlines()
        end = next(i for i, line in enumerate(block) if line.startswith("recipients"))
        lines = "\n".join(block[: end + 1])
        backup_id = next(line for line in block if line.startswith("id = ")).split('"')[1]
        home.mkdir(parents=True, exist_ok=True)
        token_file = home / "worker.token"
        token_file.write_text(worker["token"])
        token_file.chmod(0o600)
        config = home / "agent.toml"
        config.write_text(
            f'server = "{self.url}"\ntoken_file = "{token_file}"\n'
            f'state_dir = "{home / "state"}"\nwait_seconds = 0\n'
            + lines.replace("/path/to/directory", str(tree))
            + "\n"
        )
        with client_for(self.url) as client:
            retention = {"expire_after": "P30D", "lock_for": "PT0S"}
            expect(
                client.patch(
                    f"/v1/backups/{backup_id}",
                    json={"retention": retention, "worker_id": worker["id"]},
                    headers=bearer(self.token),
                ),
                200,
            )
            run = expect(
                client.post(f"/v1/backups/{backup_id}/trigger", headers=bearer(self.token)), 202
            )
        step = run_measured([STRONGROOM, "agent", "--config", str(config), "--once"], self.env)
        with client_for(self.url) as client:
            done = expect(client.get(f"/v1/runs/{run['id']}", headers=bearer(self.token)), 200)
        if done["state"] != "succeeded":
            raise RuntimeError(f"the agent's run ended {done['state']}: {step.output[-2000:]}")
        return step


def one_mib_file(tree: Path) -> str:
    files = [p for p in tree.rglob("*") if p.is_file() and not p.is_symlink()]
    chosen = min(files, key=lambda p: abs(p.stat().st_size - MIB))
    return str(chosen.relative_to(tree))


def row(
    name: str, ours: float, theirs: float | None, unit: str, ratio_of: float | None = None
) -> str:
    if ratio_of is None and theirs:
        ratio_of = ours / theirs
    ratio = f"{ratio_of:6.2f}x" if ratio_of is not None else "      -"
    peer = f"{theirs:12.2f}" if theirs is not None else "           -"
    return f"{name:<34} {ours:12.2f} {peer} {unit:<5} {ratio}"


# One run's figures: name -> (Strongroom, restic or None, unit).
Figures = dict[str, tuple[float, float | None, str]]


def one_run(work: Path, size_mib: int, with_agent: bool) -> Figures:
    """Generate the tree under ``work``, back it up twice and restore it with both tools."""
    tree = work / "tree"
    stats = generate_tree(tree, size_mib * MIB)
    print(f"tree: {stats.files} files, {stats.bytes / MIB:.1f} MiB at {tree}", flush=True)
    restic = Restic(work / "restic-repo", work / "restic-cache")
    restic.init()
    print(restic.version())
    data_dir = work / "data"
    data_dir.mkdir()
    configuration = {"STRONGROOM_SIGNUP": "true", "STRONGROOM_LOG_FORMAT": "text"}
    with serving(data_dir, free_port(), work / "serve.log", configuration) as url:
        with client_for(url) as client:
            workspace, token = workspace_admin(client, "bench@example.com")
        ours = Strongroom(url, token, workspace["id"], work / "home")
        backup_id = ours.new_backup()

        r_first = restic.backup(tree)
        s_first = ours.command("push", backup_id, str(tree))
        r_after_first, s_after_first = restic.stored_bytes(), ours.stored_bytes()
        changed = change_tree(tree)
        print(f"changed {changed.files} files ({changed.bytes / MIB:.1f} MiB written)", flush=True)
        r_second = restic.backup(tree)
        s_second = ours.command("push", backup_id, str(tree))
        second_run = _json(s_second)["run_id"]
        r_stored, s_stored = restic.stored_bytes(), ours.stored_bytes()
        r_restore = restic.restore(work / "restic-restored")
        s_restore = ours.command("restore", second_run, "--to", str(work / "restored"))
        one = one_mib_file(tree)
        partial = _json(
            ours.command("restore", second_run, "--to", str(work / "one"), "--include", one)
        )
        agent = ours.agent_first_backup(tree, work / "agent") if with_agent else None
    figures: Figures = {}
    for name, s, r in (
        ("first backup", s_first, r_first),
        ("incremental backup (5 %)", s_second, r_second),
        ("full restore", s_restore, r_restore),
    ):
        figures[f"{name}: wall"] = (s.seconds, r.seconds, "s")
        figures[f"{name}: peak RSS"] = (s.peak_rss_bytes / MIB, r.peak_rss_bytes / MIB, "MiB")
    figures["stored after two runs"] = (s_stored / MIB, r_stored / MIB, "MiB")
    figures["uploaded by the incremental run"] = (
        (s_stored - s_after_first) / MIB,
        (r_stored - r_after_first) / MIB,
        "MiB",
    )
    if agent is not None:
        figures["agent first backup: wall"] = (agent.seconds, r_first.seconds, "s")
        figures["agent first backup: peak RSS"] = (
            agent.peak_rss_bytes / MIB,
            r_first.peak_rss_bytes / MIB,
            "MiB",
        )
    figures["restore one ~1 MiB file: downloaded"] = (
        partial["bytes_downloaded"] / MIB,
        None,
        "MiB",
    )
    size = (tree / one).stat().st_size / MIB
    print(
        f"(tree of {stats.bytes / MIB:.0f} MiB, {stats.files} files;"
        f" one file: {one}, {size:.2f} MiB)"
    )
    return figures


def show(figures: Figures) -> None:
    print(f"{'step':<34} {'strongroom':>12} {'restic':>12} {'unit':<5} ratio")
    for name, (ours, theirs, unit) in figures.items():
        print(row(name, ours, theirs, unit))


def medians(runs: list[Figures]) -> Figures:
    """Per figure, the median of each side over the runs, and the median of the runs'
    ratios printed beside it (the ratio of medians can differ from the median ratio)."""
    out: Figures = {}
    for name, (_, theirs, unit) in runs[0].items():
        mine = [run[name][0] for run in runs if name in run]
        peers = [run[name][1] for run in runs if name in run]
        out[name] = (
            statistics.median(mine),
            statistics.median([p for p in peers if p is not None]) if theirs is not None else None,
            unit,
        )
    return out


def median_ratios(runs: list[Figures]) -> dict[str, float]:
    ratios: dict[str, float] = {}
    for name, (_, theirs, _) in runs[0].items():
        if theirs:
            ratios[name] = statistics.median(
                run[name][0] / run[name][1]  # type: ignore[operator]
                for run in runs
                if name in run
            )
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="tree size (1024)")
    parser.add_argument("--workdir", type=Path, default=None, help="(a temporary directory)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs, each on a fresh tree and server (1)"
    )
    parser.add_argument(
        "--no-agent",
        action="store_true",
        help="skip the agent's first backup of the changed tree into a second backup",
    )
    options = parser.parse_args()
    runs: list[Figures] = []
    for number in range(1, options.repeat + 1):
        base = options.workdir or Path(tempfile.mkdtemp(prefix="snapshot-bench-"))
        work = base / f"run-{number}" if options.repeat > 1 else base
        work.mkdir(parents=True, exist_ok=True)
        print(f"== run {number} of {options.repeat}", flush=True)
        runs.append(one_run(work, options.size_mib, not options.no_agent))
        print()
        show(runs[-1])
        print(flush=True)
        if options.workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    if len(runs) > 1:
        print(f"== median of {len(runs)} runs (figures; ratio column: median of the runs' ratios)")
        middle, ratios = medians(runs), median_ratios(runs)
        print(f"{'step':<34} {'strongroom':>12} {'restic':>12} {'unit':<5} ratio")
        for name, (ours, theirs, unit) in middle.items():
            print(row(name, ours, theirs, unit, ratios.get(name)))


if __name__ == "__main__":
    main()
