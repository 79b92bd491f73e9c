"""The served OpenAPI document passes Redocly's recommended lint with no error and no
warning (contract 13). Redocly CLI is pinned in tests/redocly (``npm ci`` installs it;
``scripts/test`` does so when it is missing); its configuration and the reasoned
exceptions live beside it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from support.world import Api

REDOCLY = Path(__file__).resolve().parent.parent / "redocly"
BINARY = REDOCLY / "node_modules" / ".bin" / "redocly"


def test_document_passes_redocly_recommended_lint(api: Api, tmp_path: Path) -> None:
    """``redocly lint`` (recommended rules) reports 0 errors and 0 warnings."""
    assert BINARY.exists(), "run `npm ci` in tests/redocly (scripts/test does)"
    document = api.client.get("/openapi.json").json()
    (tmp_path / "openapi.json").write_text(json.dumps(document, indent=1))
    for name in ("redocly.yaml", ".redocly.lint-ignore.yaml"):
        shutil.copy(REDOCLY / name, tmp_path / name)
    result = subprocess.run(
        [str(BINARY), "lint", "--format=summary", "openapi.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "error " not in report and "warning " not in report, report
