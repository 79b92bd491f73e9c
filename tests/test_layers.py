"""Dependencies point inward: domain <- ports <- adapters <- entrypoints.

The test reads every module's imports (including imports inside functions) and fails when
a layer imports outward, or when the domain imports an I/O library. No adapter imports
the HTTP adapter: the wire shapes live in ``adapters/wire``. The SDK (``adapters/client``,
installed as ``strongroom.client``) stands apart: of the server it imports only the wire
models and the pure domain, so it installs without the server's drivers.
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
# The parts of the server the SDK shares: the wire's models and the domain they bind to.
CLIENT_SHARED = ("strongroom.adapters.wire", "strongroom.domain")
# What neither the SDK nor the wire and domain it shares may load: the server's drivers.
SERVER_DRIVERS = ("starlette", "psycopg", "psycopg_pool", "minio", "sqlite3", "uvicorn")
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
    """``strongroom.client`` imports only itself, the wire models, the domain, the standard
    library, httpx2, attrs, cattrs and zstandard: never another part of strongroom, never a
    server-side library."""
    stdlib = sys.stdlib_module_names | {"__future__"}
    offences = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted(CLIENT.rglob("*.py"))
        for module in imported_modules(path)
        if not (
            module.startswith(("strongroom.client", *CLIENT_SHARED))
            or module.split(".")[0] in stdlib
            or module.split(".")[0] in CLIENT_THIRD_PARTY
        )
    ]
    assert offences == []
    assert [p.name for p in CLIENT.rglob("*.py")], "the SDK has modules"


def test_what_the_sdk_shares_loads_no_server_driver() -> None:
    """The wire package and the domain import no web framework, database or storage
    driver, no port, no other adapter: the SDK can share them."""
    offences = [
        f"{path.relative_to(ROOT)} imports {module}"
        for folder in (ROOT / "adapters" / "wire", ROOT / "domain")
        for path in sorted(folder.rglob("*.py"))
        for module in imported_modules(path)
        if module.split(".")[0] in SERVER_DRIVERS
        or (module.startswith("strongroom.") and not module.startswith(CLIENT_SHARED))
    ]
    assert offences == []


def test_no_adapter_imports_the_http_adapter() -> None:
    """The HTTP adapter is a leaf among adapters: wire shapes and their converter live in
    ``adapters/wire``, so a store or the SDK never reaches into it."""
    http = ROOT / "adapters" / "http"
    offences = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted((ROOT / "adapters").rglob("*.py"))
        if http not in path.parents
        for module in imported_modules(path)
        if module == "strongroom.adapters.http" or module.startswith("strongroom.adapters.http.")
    ]
    assert offences == []


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
