"""``pip install strongroom`` gives the SDK without the server's database and storage
drivers: the wheel's metadata keeps psycopg and minio behind extras, and the SDK imports
none of the server."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
SERVER_DRIVERS = {"psycopg", "psycopg-pool", "minio"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of this tree, built as CI would (setuptools fetched from the index) from a
    copy, so the build leaves nothing in the working tree."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for layer in ("domain", "ports", "adapters", "entrypoints"):
        shutil.copytree(ROOT / layer, source / layer, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("strongroom-*.whl")
    return built


def metadata(wheel: Path) -> str:
    """The wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode()


def test_server_drivers_are_only_extras(wheel: Path) -> None:
    """Every Requires-Dist naming psycopg or minio is behind an extra; httpx2, attrs and
    cattrs (what the SDK imports) are core."""
    requirements = [
        Requirement(line.split(":", 1)[1].strip())
        for line in metadata(wheel).splitlines()
        if line.startswith("Requires-Dist:")
    ]
    core = {r.name.lower() for r in requirements if r.marker is None}
    assert {"httpx2", "attrs", "cattrs"} <= core
    assert not core & SERVER_DRIVERS
    drivers = [r for r in requirements if r.name.lower() in SERVER_DRIVERS]
    assert drivers
    assert all("extra" in str(r.marker) for r in drivers)


def test_the_wheel_ships_the_sdk_once(wheel: Path) -> None:
    """``strongroom/client`` with its type marker, not a second copy under adapters."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "strongroom/client/__init__.py" in names
    assert "strongroom/client/py.typed" in names
    assert "strongroom/entrypoints/cli/__init__.py" in names
    assert not [n for n in names if n.startswith("strongroom/adapters/client/")]


def test_the_wheel_ships_every_package_of_the_tree(wheel: Path) -> None:
    """Each folder with an ``__init__.py`` is in the wheel (pyproject lists packages one by
    one, so a new subpackage left out of the list would install broken)."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    expected = {
        f"strongroom/{init.relative_to(ROOT).as_posix()}"
        for layer in ("domain", "ports", "adapters", "entrypoints")
        for init in (ROOT / layer).rglob("__init__.py")
        if (ROOT / "adapters" / "client") not in init.parents
    }
    assert expected - names == set()


def test_importing_the_sdk_loads_nothing_of_the_server() -> None:
    """``import strongroom.client`` pulls in no database, storage or web-server module; of
    the server only the wire models and the pure domain they bind to."""
    probe = (
        "import sys, strongroom.client\n"
        "server = ('psycopg', 'minio', 'starlette', 'uvicorn', 'sqlite3',"
        " 'strongroom.adapters.', 'strongroom.ports', 'strongroom.entrypoints')\n"
        "print(sorted(m for m in sys.modules if m.startswith(server)"
        " and not m.startswith('strongroom.adapters.wire')))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    assert loaded.strip() == "[]"


@pytest.mark.slow
def test_the_wheel_installs_without_extras_and_the_sdk_works(wheel: Path, tmp_path: Path) -> None:
    """A fresh venv, the wheel installed with its dependencies from the package index (no
    extras): the SDK imports, the command runs, and no server driver was installed."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    check = (
        "import importlib.util, strongroom.client as c\n"
        "assert c.Client and c.AsyncClient\n"
        "missing = [m for m in ('psycopg', 'minio') if importlib.util.find_spec(m) is None]\n"
        "assert missing == ['psycopg', 'minio'], missing\n"
    )
    subprocess.run([str(python), "-c", check], check=True)
    usage = subprocess.run(
        [str(venv / "bin" / "strongroom"), "--help"], check=True, capture_output=True, text=True
    )
    assert "login" in usage.stdout
