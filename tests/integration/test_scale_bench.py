"""``bench/scale.py`` in its quick mode (issue 32): one database grown through two sizes
produces every figure at each, with its ratio to the smallest. Not timed: what the figures
say is the bench's business, not the test's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import scale  # noqa: E402
from _scale_measure import FIGURES  # noqa: E402


@pytest.mark.slow
def test_the_quick_scale_bench_gives_every_figure_at_every_size(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"

    assert (
        scale.main(["--sizes", "100,1000", "--repeat", "1", "--requests", "10", "--json", str(out)])
        == 0
    )

    results = json.loads(out.read_text())
    assert [size["size"] for size in results["sizes"]] == [100, 1000]
    for size in results["sizes"]:
        assert set(size["median_ms"]) == set(FIGURES)
        assert all(value > 0 for value in size["median_ms"].values())
    assert set(results["ratios"]) == set(FIGURES)
