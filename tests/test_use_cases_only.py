"""``ports/driving`` holds use cases only: nothing there starts a thread, an event loop or
a background task that outlives its call. Runtimes (the executor, the restore runner, the
blocking view, thread helpers) live in ``adapters/runtime``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRIVING = ROOT / "ports" / "driving"
# Calls that start a thread, an event loop or a task living on its own.
RUNTIME_CALLS = {
    "to_thread",
    "Thread",
    "ThreadPoolExecutor",
    "new_event_loop",
    "run_forever",
    "run_coroutine_threadsafe",
    "run_in_executor",
    "create_task",
}


def runtime_calls(path: Path, root: Path = ROOT) -> list[str]:
    """The runtime calls a module makes (``asyncio.to_thread(...)`` or ``to_thread(...)``),
    each as ``file:line name`` with the file relative to ``root``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if name in RUNTIME_CALLS:
                found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_the_use_cases_start_no_thread_loop_or_task() -> None:
    """Every module of ``ports/driving`` is free of runtime calls."""
    offences = [call for path in sorted(DRIVING.rglob("*.py")) for call in runtime_calls(path)]
    assert offences == []


def test_the_checker_sees_a_runtime_call(tmp_path: Path) -> None:
    """The reader finds a thread started inside a function (so the check above can fail)."""
    sample = tmp_path / "sample.py"
    sample.write_text("import asyncio\nasync def f():\n    await asyncio.to_thread(print)\n")
    assert runtime_calls(sample, tmp_path) == ["sample.py:3 to_thread"]
