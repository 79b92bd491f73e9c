"""Signed proofs (contract 16): a proof verifies offline with the public key alone, and any
change to it, or another key, fails."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.adapters.proofs.signing import (
    ProofSignatureError,
    ProofSigner,
    load_public_key,
    public_pem,
    verify,
)
from strongroom.domain.proofs import ProofEntry, StorageLock, findings

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


def document() -> dict[str, Any]:
    return {
        "version": 1,
        "workspace_id": str(uuid4()),
        "artifacts": [{"id": str(uuid4()), "size": 5, "locked_until": "2027-01-01T00:00:00Z"}],
    }


@pytest.fixture(scope="module")
def signer(tmp_path_factory: pytest.TempPathFactory) -> ProofSigner:
    return ProofSigner.in_data_dir(tmp_path_factory.mktemp("data"))


class TestSignatures:
    def test_a_signed_proof_verifies_with_the_published_key_alone(
        self, signer: ProofSigner
    ) -> None:
        signed = signer.sign(document())
        verify(signed, load_public_key(public_pem(signer.public_key)))

    @given(st.sampled_from(["version", "workspace_id", "artifacts"]), st.integers(2, 10**6))
    def test_any_change_fails(self, signer: ProofSigner, field: str, value: int) -> None:
        signed = signer.sign(document())
        tampered = {**signed, field: value}
        with pytest.raises(ProofSignatureError):
            verify(tampered, signer.public_key)

    def test_a_shortened_lock_fails(self, signer: ProofSigner) -> None:
        signed = signer.sign(document())
        artifacts = [{**signed["artifacts"][0], "locked_until": "2026-12-01T00:00:00Z"}]
        with pytest.raises(ProofSignatureError):
            verify({**signed, "artifacts": artifacts}, signer.public_key)

    def test_another_key_or_no_signature_fails(self, signer: ProofSigner, tmp_path: Path) -> None:
        other = ProofSigner.in_data_dir(tmp_path)
        signed = signer.sign(document())
        with pytest.raises(ProofSignatureError):
            verify(signed, other.public_key)
        with pytest.raises(ProofSignatureError):
            verify(document(), signer.public_key)

    def test_the_key_is_made_once_private_to_its_owner(self, tmp_path: Path) -> None:
        first = ProofSigner.in_data_dir(tmp_path)
        again = ProofSigner.in_data_dir(tmp_path)
        assert public_pem(first.public_key) == public_pem(again.public_key)
        assert stat.S_IMODE((tmp_path / "proof_key.pem").stat().st_mode) == 0o600


class TestFindings:
    def entry(
        self, locked_until: datetime | None, storage: StorageLock, held: bool = False
    ) -> ProofEntry:
        return ProofEntry(uuid4(), uuid4(), 5, "0" * 64, locked_until, held, storage, NOW)

    def test_a_storage_lock_as_long_as_the_record_is_fine(self) -> None:
        until = NOW + timedelta(days=3)
        lock = StorageLock("v1", "COMPLIANCE", until + timedelta(seconds=1), False)
        assert findings([self.entry(until, lock)]) == []

    def test_shorter_missing_or_governance_locks_and_dropped_holds_are_named(self) -> None:
        until = NOW + timedelta(days=3)
        short = self.entry(until, StorageLock("v1", "COMPLIANCE", until - timedelta(days=1)))
        none = self.entry(until, StorageLock())
        soft = self.entry(until, StorageLock("v1", "GOVERNANCE", until))
        unheld = self.entry(None, StorageLock(legal_hold=False), held=True)
        found = {f.artifact_id: f.problem for f in findings([short, none, soft, unheld])}
        assert found == {
            short.artifact_id: "the storage lock ends before the record's",
            none.artifact_id: "the storage keeps no lock",
            soft.artifact_id: "the storage lock is governance",
            unheld.artifact_id: "the storage keeps no legal hold",
        }

    def test_a_lock_that_has_passed_needs_no_storage_lock(self) -> None:
        assert findings([self.entry(NOW - timedelta(days=1), StorageLock())]) == []
