"""Adapters use the facade's public API only: no adapter reaches into its dependencies.

The facade's ``deps`` are the driven ports it runs on; an adapter that took a port from
there would bypass the use cases (and their checks). What an adapter legitimately needs
(the identity provider's pages, local storage's presigned URLs, the clock for derived
states) the facade offers by name.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def reaches_into_deps(source: str) -> list[int]:
    """Lines of ``source`` that read an attribute named ``deps`` of anything."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr == "deps"
    ]


def test_no_adapter_reads_the_facades_dependencies() -> None:
    """Not one ``.deps`` in ``adapters/``."""
    offences = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "adapters").rglob("*.py"))
        for line in reaches_into_deps(path.read_text())
    ]
    assert offences == []


def test_the_check_sees_a_reach() -> None:
    """The reader finds ``.deps`` however deep in an expression (so the test can fail)."""
    assert reaches_into_deps("x = ctx.facade.deps.clock.now()\n") == [1]
    assert reaches_into_deps("x = ctx.facade.now()\n") == []
