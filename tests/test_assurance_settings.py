"""The proof key and the drill server from the settings (contract 16): a key given in
``STRONGROOM_PROOF_KEY`` signs; without one, a key made once in the data dir (0600) signs
across restarts; ``STRONGROOM_DRILL_DATABASE_URL`` names the drill server."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from strongroom.adapters.proofs.signing import public_pem
from strongroom.entrypoints.assurance import equip_assurance
from strongroom.entrypoints.settings import Settings
from support.world import memory_facade


def test_a_key_given_in_the_environment_signs(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    settings = Settings.from_env(
        {
            "STRONGROOM_DATA_DIR": str(tmp_path),
            "STRONGROOM_PROOF_KEY": pem,
            "STRONGROOM_DRILL_DATABASE_URL": "postgresql://drills@db.internal/postgres",
        }
    )
    assert settings.drill_database_url == "postgresql://drills@db.internal/postgres"
    facade = equip_assurance(memory_facade(), settings)
    assert facade.proofs.public_key() == public_pem(key.public_key())
    assert not (tmp_path / "proof_key.pem").exists()


def test_without_one_a_key_is_made_once_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings.from_env({"STRONGROOM_DATA_DIR": str(tmp_path / "data")})
    assert settings.drill_database_url is None
    first = equip_assurance(memory_facade(), settings).proofs.public_key()
    made = tmp_path / "data" / "proof_key.pem"
    assert made.stat().st_mode & 0o777 == 0o600
    assert equip_assurance(memory_facade(), settings).proofs.public_key() == first
