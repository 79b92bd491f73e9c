"""docs/clients.md stays true: its SDK examples run as written against a real server, and
its table names every client command of ``strongroom`` and nothing else."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from strongroom.client import Client
from strongroom.entrypoints.cli import cli
from support.client_people import admin_in_new_workspace
from support.serve_process import free_port, serving

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
SERVER_COMMANDS = {"serve", "migrate", "retention", "admin"}


def examples() -> dict[str, str]:
    """The Python blocks marked ``<!-- example: name -->``."""
    text = DOC.read_text(encoding="utf-8")
    return dict(re.findall(r"<!-- example: (\w+) -->\n```python\n(.*?)```", text, re.DOTALL))


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """STRONGROOM_SERVER and STRONGROOM_TOKEN of an admin of a fresh workspace."""
    root = tmp_path_factory.mktemp("docs-live")
    with serving(root / "data", free_port(), root / "serve.log") as url, Client(url) as anon:
        admin = admin_in_new_workspace(anon, "docs@example.com")
        yield {**os.environ, "STRONGROOM_SERVER": url, "STRONGROOM_TOKEN": admin.token or ""}


@pytest.mark.parametrize("name", ["sync", "asynchronous"])
def test_an_sdk_example_runs_as_written(
    name: str, environment: dict[str, str], tmp_path: Path
) -> None:
    """The example exits 0 and prints what its comments say."""
    script = tmp_path / f"{name}.py"
    script.write_text(examples()[name], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    if name == "sync":
        assert "nightly-dump active" in done.stdout
        assert "succeeded" in done.stdout
        assert "404 not_found" in done.stdout


def client_commands() -> set[str]:
    """Every client command path of ``strongroom`` (``backup set``, ``login``...)."""
    found: set[str] = set()
    for name, command in cli.commands.items():
        if name in SERVER_COMMANDS:
            continue
        if isinstance(command, click.Group):
            found |= {f"{name} {sub}" for sub in command.commands}
        else:
            found.add(name)
    return found


def test_the_table_documents_every_client_command() -> None:
    """Each row's command (with ``a|b`` alternatives) is a command, and each command has a
    row."""
    documented: set[str] = set()
    for cell in re.findall(r"^\| `([a-z][a-z |\\-]*?)(?: [A-Z\[].*?)?` \|", DOC.read_text(), re.M):
        words = cell.replace("\\|", "|").split()
        group, verbs = (words[0], words[1]) if len(words) > 1 else (None, words[0])
        for verb in verbs.split("|"):
            documented.add(f"{group} {verb}" if group else verb)
    assert documented == client_commands()
