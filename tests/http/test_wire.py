"""The wire package is plain Python: the SQL and memory adapters write stored bodies and
the SDK reads answers with its models, so none of them may import the web framework."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "strongroom.adapters.wire",
        "strongroom.adapters.memory.repositories",
        "strongroom.adapters.sql.rows",
    ],
)
def test_imports_no_web_framework(module: str) -> None:
    """Importing the module (and everything it imports) loads no ``starlette`` module."""
    code = f"import sys, {module}; print(any(m.startswith('starlette') for m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
