"""The README's embedding examples run as written, each in a fresh interpreter."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _examples() -> dict[str, str]:
    """The Python blocks of the README that carry an ``<!-- example: name -->`` marker."""
    text = README.read_text(encoding="utf-8")
    found = re.findall(r"<!-- example: (\w+) -->\n```python\n(.*?)```", text, flags=re.DOTALL)
    return dict(found)


def test_the_readme_has_the_async_and_the_blocking_example() -> None:
    """Both facades are shown."""
    assert set(_examples()) == {"async", "blocking"}


@pytest.mark.parametrize("name", ["async", "blocking"])
def test_an_embedding_example_runs_and_creates_a_backup(name: str, tmp_path: Path) -> None:
    """The example creates the backup it says it creates, and prints it."""
    script = tmp_path / f"{name}.py"
    script.write_text(_examples()[name], encoding="utf-8")
    finished = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "nightly draft"
