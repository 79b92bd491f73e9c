"""The soak of ``bench/soak.py``, short (issue 32): two ``strongroom serve`` processes on
one PostgreSQL database and one SeaweedFS, mixed load over HTTP from clients that fail
over between them, one instance killed with SIGKILL every 30 s and restarted.

``STRONGROOM_SOAK_SECONDS`` (default 90, each instance killed once) sets the load's
length; with set-up and checks the test takes about a minute more. What counts as
acknowledged is what the service answered: a request whose connection died, or that was
never answered, acknowledged nothing (its write may or may not exist, and nothing is
asserted of it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import soak  # noqa: E402

SECONDS = float(os.environ.get("STRONGROOM_SOAK_SECONDS", "90"))
KILL_EVERY = 30.0


@pytest.mark.slow
def test_two_instances_killed_in_turn_lose_nothing_run_nothing_twice_leave_nothing_stuck(
    tmp_path: Path,
) -> None:
    """Every acknowledged create, trigger and confirm is readable afterwards and every
    confirmed artifact downloads with its bytes; no run is confirmed by two claims or
    claimed after its confirm, no schedule slot has two runs; no run stays ``running``
    past its lease."""
    verdict = soak.run(soak.Options(SECONDS, KILL_EVERY, workdir=tmp_path))
    print(verdict.render())

    assert verdict.lost == []
    assert verdict.twice == []
    assert verdict.stuck == []
    # The load did what it says: kills, and runs of every kind confirmed.
    expected_kills = int((SECONDS - soak.LAST_KILL_MARGIN) // KILL_EVERY)
    assert len(verdict.kills) == expected_kills
    assert verdict.acknowledged["runs confirmed (200)"] > 0
    assert verdict.acknowledged["claims (201)"] > 0
    if SECONDS >= 90:
        assert verdict.counts["scheduled runs (audited run.schedule)"] > 0
