"""``strongroom proof verify`` (contract 16): a proof signed by the key given passes (exit
0); one listing an artifact whose storage lock ends before its record's fails (exit 1)
naming it, as does one that is not a proof at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from strongroom.adapters.proofs.signing import ProofSigner
from strongroom.entrypoints.cli import main

ARTIFACT = "0b9a4c55-5f0e-4a4c-9b7e-6f1f63a0d8a1"


def document(retain_until: str | None) -> dict[str, Any]:
    return {
        "version": 1,
        "workspace_id": "5d8c2a8e-2b0e-4f6e-8a53-3c1b7b3f9e11",
        "checked_at": "2030-01-02T12:00:00Z",
        "findings": [],
        "artifacts": [
            {
                "id": ARTIFACT,
                "backup_id": "8e7f1f0a-8f1b-4c52-9c86-2f0d7d9a3b21",
                "size": 10,
                "sha256": "0" * 64,
                "locked_until": "2030-02-01T00:00:00Z",
                "held": False,
                "storage": {
                    "version_id": "v1",
                    "mode": None if retain_until is None else "COMPLIANCE",
                    "retain_until": retain_until,
                    "legal_hold": False,
                },
                "checked_at": "2030-01-02T12:00:00Z",
            }
        ],
    }


@pytest.fixture
def signer() -> ProofSigner:
    return ProofSigner.generated()


def verify(tmp_path: Path, signer: ProofSigner, content: bytes) -> int:
    key = tmp_path / "key.pem"
    key.write_text(signer.public_pem())
    proof = tmp_path / "proof.json"
    proof.write_bytes(content)
    return main(["proof", "verify", str(proof), "--key", str(key)])


def test_a_proof_whose_storage_keeps_every_lock_passes(
    tmp_path: Path, signer: ProofSigner, capsys: pytest.CaptureFixture[str]
) -> None:
    signed = signer.sign(document("2030-02-01T00:00:00Z"))
    assert verify(tmp_path, signer, orjson.dumps(signed)) == 0
    assert "signature valid: 1 artifacts" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("retain_until", "problem"),
    [
        ("2030-01-15T00:00:00Z", "the storage lock ends before the record's"),
        (None, "the storage keeps no lock"),
    ],
)
def test_a_storage_lock_shorter_than_the_record_is_listed(
    tmp_path: Path,
    signer: ProofSigner,
    capsys: pytest.CaptureFixture[str],
    retain_until: str | None,
    problem: str,
) -> None:
    signed = signer.sign(document(retain_until))
    assert verify(tmp_path, signer, orjson.dumps(signed)) == 1
    assert f"{ARTIFACT}: {problem}" in capsys.readouterr().out


def test_a_file_that_is_no_proof_fails(
    tmp_path: Path, signer: ProofSigner, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify(tmp_path, signer, b"[1, 2]") == 1
    assert "not valid" in capsys.readouterr().err
    assert verify(tmp_path, signer, orjson.dumps(document(None))) == 1
    assert "no Ed25519 signature" in capsys.readouterr().err
