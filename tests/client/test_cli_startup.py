"""The command-line client starts without loading the server's machinery."""

from __future__ import annotations

import subprocess
import sys

SERVER_MODULES = (
    "strongroom.adapters.http.app",
    "strongroom.adapters.http.context",
    "starlette",
    "strongroom.entrypoints.service",
    "strongroom.adapters.sql.postgres",
    "uvicorn",
    "psycopg",
    "minio",
)


def test_the_command_imports_no_server_module_until_a_server_command_runs() -> None:
    probe = (
        "import sys\n"
        "from strongroom.entrypoints.cli import cli\n"
        f"print([m for m in {SERVER_MODULES!r} if m in sys.modules])\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert output.strip() == "[]"
