"""Measuring one step of the snapshot bench: wall time and the peak RSS of the process that
did the work, and restic, the peer, run on a local repository.

Peak RSS is the step's own process's, as GNU time reports it from ``wait4`` (a process forked
from this one would start from this process's high-water mark, hence the small ``time``
between), so concurrent processes do not count.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
from _trees import tree_bytes

RESTIC_PASSWORD = "bench-only-password"
TIME = shutil.which("time", path="/usr/bin:/bin") or "/usr/bin/time"


@attrs.frozen
class Step:
    """One measured step."""

    seconds: float
    peak_rss_bytes: int
    output: str


def run_measured(
    command: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 3600
) -> Step:
    """Run ``command`` to its end; its wall time and peak RSS. Raises on a non-zero exit."""
    started = time.perf_counter()
    report = tempfile.NamedTemporaryFile(prefix="rss-", suffix=".txt", delete=False)  # noqa: SIM115
    report.close()
    process = subprocess.Popen(
        [TIME, "-f", "%M", "-o", report.name, *command],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    deadline = started + timeout
    chunks: list[bytes] = []
    while chunk := process.stdout.read(65536):
        chunks.append(chunk)
        if time.perf_counter() > deadline:
            process.kill()
            raise TimeoutError(f"{command[0]} ran longer than {timeout} s")
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    output = b"".join(chunks).decode(errors="replace")
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {process.returncode}:\n{output[-2000:]}")
    peak = Path(report.name).read_text().strip().splitlines()
    os.unlink(report.name)
    return Step(seconds, int(peak[-1]) * 1024 if peak else usage.ru_maxrss * 1024, output)


class Restic:
    """restic (Debian's package) on a local repository, without its cache between steps."""

    def __init__(self, repository: Path, cache: Path) -> None:
        self.repository = repository
        self._env = {
            "RESTIC_REPOSITORY": str(repository),
            "RESTIC_PASSWORD": RESTIC_PASSWORD,
            "RESTIC_CACHE_DIR": str(cache),
        }
        binary = shutil.which("restic")
        if binary is None:
            raise RuntimeError("restic is not installed: apt-get install restic")
        self._binary = binary

    def version(self) -> str:
        return run_measured([self._binary, "version"], self._env).output.strip()

    def init(self) -> None:
        run_measured([self._binary, "init"], self._env)

    def backup(self, tree: Path) -> Step:
        # The same tree path each time, so the second run is incremental.
        return run_measured([self._binary, "backup", "--quiet", str(tree)], self._env)

    def restore(self, target: Path) -> Step:
        return run_measured([self._binary, "restore", "latest", "--target", str(target)], self._env)

    def stored_bytes(self) -> int:
        return tree_bytes(self.repository)
