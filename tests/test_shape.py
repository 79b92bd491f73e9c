"""The code's shape, held by tests: no import cycle, no module over 600 lines, and no
adapter reaching into the HTTP adapter (shapes live in one shared place).

Each ``KNOWN_*`` set lists what was there when the rule was written; it only shrinks.
A name left in it after its offence is gone fails too, so the lists cannot go stale.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("domain", "ports", "adapters", "entrypoints")
MAX_LINES = 600

# Import cycles present when the rule was written, named by one member of each.
KNOWN_CYCLES: set[str] = set()
KNOWN_LONG: set[str] = set()
KNOWN_HTTP_IMPORTERS: set[str] = set()


def module_name(path: Path) -> str:
    """The import name of a source file (the SDK installs as ``strongroom.client``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[:2] == ["adapters", "client"]:
        parts = ["client", *parts[2:]]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["strongroom", *parts])


def source_files() -> Iterator[Path]:
    for layer in LAYERS:
        yield from sorted((ROOT / layer).rglob("*.py"))


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``path`` imports (``from a import b`` may name a module b)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(name for name in names if name in known)
    return found


def import_cycles() -> list[set[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    files = {module_name(p): p for p in source_files()}
    edges = {name: imports_of(path, set(files)) - {name} for name, path in files.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for root, targets in edges.items():
        if root in index:
            continue
        work = [(root, iter(sorted(targets)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    return groups


def test_no_import_cycle() -> None:
    """No two modules of the package import each other, directly or through others."""
    cycles = import_cycles()
    new = [sorted(group) for group in cycles if not group & KNOWN_CYCLES]
    stale = {name for name in KNOWN_CYCLES if not any(name in group for group in cycles)}
    assert new == []
    assert stale == set(), "remove these from KNOWN_CYCLES: their cycle is gone"


def test_no_module_over_600_lines() -> None:
    """Small modules with one job: none over 600 lines outside tests."""
    long = {
        str(path.relative_to(ROOT))
        for path in source_files()
        if len(path.read_text().splitlines()) > MAX_LINES
    }
    assert long - KNOWN_LONG == set()
    assert KNOWN_LONG - long == set(), "remove these from KNOWN_LONG: they are short now"


def test_no_adapter_imports_the_http_adapter() -> None:
    """Wire shapes live outside ``adapters.http``: no other adapter imports it."""
    offenders = set()
    for path in sorted((ROOT / "adapters").rglob("*.py")):
        if (ROOT / "adapters" / "http") in path.parents:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(
                n == "strongroom.adapters.http" or n.startswith("strongroom.adapters.http.")
                for n in names
            ):
                offenders.add(str(path.relative_to(ROOT)))
    assert offenders - KNOWN_HTTP_IMPORTERS == set()
    assert KNOWN_HTTP_IMPORTERS - offenders == set(), "remove these: they no longer import it"


def test_the_cycle_finder_sees_a_cycle(tmp_path: Path) -> None:
    """The cycle finder is not blind: two files importing each other form a group."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import b\n")
    b.write_text("from a import x\n")
    assert imports_of(a, {"b"}) == {"b"}
    assert imports_of(b, {"a", "a.x"}) == {"a", "a.x"}
