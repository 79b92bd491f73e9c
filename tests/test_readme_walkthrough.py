"""The README's walkthrough, as a newcomer runs it: its bash block, fed line by line to a
shell (as pasting does), against ``strongroom serve`` started as ``./scripts/serve`` starts
it on a fresh data dir. It must end with the downloaded file identical to the uploaded."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from support.serve_process import free_port, serving, unconfigured_environment

README = Path(__file__).resolve().parents[1] / "README.md"
BASE_URL_LINE = "SR=${SR:-http://127.0.0.1:8080}"


def walkthrough() -> str:
    """The bash block after the ``<!-- walkthrough -->`` marker."""
    text = README.read_text(encoding="utf-8")
    (block,) = re.findall(r"<!-- walkthrough -->\n```bash\n(.*?)```", text, flags=re.DOTALL)
    return block


def test_the_walkthrough_reads_the_servers_address_from_one_variable() -> None:
    """Its first line sets ``SR`` (the default of ``./scripts/serve``) unless already set,
    so pasting it works as is and this test can point it elsewhere."""
    assert walkthrough().splitlines()[0].startswith(BASE_URL_LINE)
    assert "8080" not in walkthrough().partition("\n")[2]


def test_pasted_into_bash_it_ends_with_an_identical_download(tmp_path: Path) -> None:
    """Every step answers as the README says, and the last line prints ``identical``."""
    data_dir, log, work = tmp_path / "data", tmp_path / "serve.log", tmp_path / "shell"
    work.mkdir()
    with serving(data_dir, free_port(), log) as url:
        shell = subprocess.run(
            ["bash", "-euo", "pipefail"],  # the block on standard input, as pasted lines
            input=walkthrough(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=work,
            env={**unconfigured_environment(), "SR": url},
        )
    assert shell.returncode == 0, f"{shell.stdout}\n{shell.stderr}\n{log.read_text()}"
    lines = shell.stdout.splitlines()
    assert lines[-1] == "identical"
    assert '{"status":"approved"}' in lines
    assert "active" in lines
    assert "succeeded" in lines
    assert f"{url}/idp/device?user_code=" in shell.stdout
    assert (work / "backup.bin").read_bytes() == (work / "downloaded.bin").read_bytes()
    assert (work / "backup.bin").stat().st_size == 1024 * 1024
    assert shell.stderr == ""
