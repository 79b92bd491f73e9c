"""Dependencies point inward: domain <- ports <- adapters <- entrypoints.

The test reads every module's imports (including imports inside functions) and fails when
a layer imports outward, or when the domain imports an I/O library. The SDK
(``adapters/client``, installed as ``strongroom.client``) stands apart: it imports nothing
of the server, so it installs without the server's drivers.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("domain", "ports", "adapters", "entrypoints")
# What each layer may import from the strongroom package.
ALLOWED = {
    "domain": {"domain"},
    "ports": {"domain", "ports"},
    "adapters": {"domain", "ports", "adapters"},
    "entrypoints": {"domain", "ports", "adapters", "entrypoints", "client"},
}
CLIENT = ROOT / "adapters" / "client"
# What the SDK may import besides the standard library and itself.
# zstandard: the directory archives of push, the agent and restore (strongroom.client.archive).
# pyfastcdc, blake3, pyrage, cryptography: the snapshot format (strongroom.client.snapshots).
CLIENT_THIRD_PARTY = {
    "httpx2",
    "attrs",
    "cattrs",
    "zstandard",
    "pyfastcdc",
    "blake3",
    "pyrage",
    "cryptography",
}
IO_LIBRARIES = {
    "socket",
    "sqlite3",
    "psycopg",
    "psycopg_pool",
    "minio",
    "starlette",
    "uvicorn",
    "httpx",
    "requests",
    "urllib.request",
    "http",
    "smtplib",
    "subprocess",
    "os",
    "pathlib",
    "shutil",
    "io",
    "asyncio",
    "threading",
    "cattrs",
    "argon2",
    "cryptography",
    "logging",
    "secrets",
}


def imported_modules(path: Path) -> list[str]:
    """Every module a file imports, relative imports resolved to absolute names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                names.append("<relative>")
            elif node.module:
                names.append(node.module)
    return names


def layer_files(layer: str) -> list[Path]:
    """The Python files of one layer (the SDK's folder is not part of ``adapters``)."""
    return sorted(p for p in (ROOT / layer).rglob("*.py") if CLIENT not in p.parents)


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_only_inward(layer: str) -> None:
    """No module of ``layer`` imports a layer further out, nor uses relative or bare imports."""
    offences = []
    for path in layer_files(layer):
        for module in imported_modules(path):
            top = module.split(".")
            if module == "<relative>" or top[0] in LAYERS:
                offences.append(f"{path.relative_to(ROOT)}: {module} (import via strongroom.*)")
            elif top[0] == "strongroom" and (len(top) < 2 or top[1] not in ALLOWED[layer]):
                offences.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offences == []


def test_driven_ports_import_only_the_domain() -> None:
    """The driven side of ``ports`` (the Protocols adapters implement) knows nothing of the
    use cases: it imports the domain and its own modules only."""
    offences = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted((ROOT / "ports" / "driven").rglob("*.py"))
        for module in imported_modules(path)
        if module.startswith("strongroom.")
        and not module.startswith(("strongroom.domain", "strongroom.ports.driven"))
    ]
    assert offences == []


def test_ports_have_a_driving_and_a_driven_side() -> None:
    """Every module of ``ports`` sits on one side of the hexagon's edge."""
    loose = [p.name for p in (ROOT / "ports").glob("*.py") if p.name != "__init__.py"]
    assert loose == []
    assert (ROOT / "ports" / "driving" / "facade.py").is_file()
    assert (ROOT / "ports" / "driven" / "repositories.py").is_file()


def test_domain_uses_no_io_library() -> None:
    """The domain is pure: no network, file, database, web, crypto or logging library."""
    offences = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in layer_files("domain")
        for module in imported_modules(path)
        if module in IO_LIBRARIES or module.split(".")[0] in IO_LIBRARIES
    ]
    assert offences == []


def test_the_checker_sees_an_outward_import(tmp_path: Path) -> None:
    """The import reader finds imports inside functions too (so the checks above can fail)."""
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from strongroom.adapters.http import app\n")
    assert imported_modules(sample) == ["strongroom.adapters.http"]


def test_the_sdk_imports_nothing_of_the_server() -> None:
    """``strongroom.client`` imports only itself, the standard library, httpx2, attrs,
    cattrs and zstandard: never another part of strongroom, never a server-side library."""
    stdlib = sys.stdlib_module_names | {"__future__"}
    offences = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted(CLIENT.rglob("*.py"))
        for module in imported_modules(path)
        if not (
            module.startswith("strongroom.client")
            or module.split(".")[0] in stdlib
            or module.split(".")[0] in CLIENT_THIRD_PARTY
        )
    ]
    assert offences == []
    assert [p.name for p in CLIENT.rglob("*.py")], "the SDK has modules"


def test_nothing_server_side_imports_the_sdk_except_entrypoints() -> None:
    """The server's layers do not depend on the SDK; only entrypoints (the CLI) use it."""
    offences = [
        f"{path.relative_to(ROOT)} imports {module}"
        for layer in ("domain", "ports", "adapters")
        for path in layer_files(layer)
        for module in imported_modules(path)
        if module.startswith("strongroom.client")
    ]
    assert offences == []
