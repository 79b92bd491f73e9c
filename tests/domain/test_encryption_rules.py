"""A snapshot backup's encryption (contract 14): age recipients checked, the format derived,
the kinds that take it, and a snapshot backup staying one."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from strongroom.domain.backups import UNSET, Backup, BackupChanges, BackupKind
from strongroom.domain.encryption import BackupFormat, Encryption, is_age_recipient
from strongroom.domain.errors import InvalidStateError, ValidationFailedError

NOW = datetime(2026, 11, 28, tzinfo=UTC)
# From age's README, and one pyrage generated.
ALICE = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
BOB = "age19z6knhe43g4jxkugekvjznurg4qcf7pelrhyjmmcq5htrhdwe4mq6g28jl"


def draft(kind: BackupKind, encryption: Encryption | None = None) -> Backup:
    return Backup.draft(uuid4(), uuid4(), "Home", kind, NOW, encryption)


def changed(backup: Backup, encryption: Encryption | None) -> Backup:
    checked = backup.check_kind_rules(BackupChanges(encryption=encryption), worker_exists=False)
    return backup.apply(checked, NOW)


class TestRecipients:
    """``age1`` + bech32 of 32 bytes, checksum checked."""

    def test_age_keygen_recipients_are_accepted_in_either_case(self) -> None:
        assert is_age_recipient(ALICE)
        assert is_age_recipient(BOB)
        assert is_age_recipient(ALICE.upper())

    @pytest.mark.parametrize(
        "text",
        [
            ALICE[:-1] + ("q" if ALICE[-1] != "q" else "p"),  # checksum
            ALICE[:10] + ALICE[10:].upper(),  # mixed case
            ALICE[:-2],  # too short
            "age2" + ALICE[4:],  # another separator position
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI",
            "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
            "",
        ],
    )
    def test_anything_else_is_refused(self, text: str) -> None:
        assert not is_age_recipient(text)

    def test_a_malformed_one_is_validation_failed_naming_its_index(self) -> None:
        with pytest.raises(ValidationFailedError) as refused:
            Encryption([ALICE, BOB, ALICE[:-1] + "x"])
        assert refused.value.message == "encryption.recipients[2] is not an age recipient"

    @pytest.mark.parametrize("count", [0, 11])
    def test_one_to_ten(self, count: int) -> None:
        with pytest.raises(ValidationFailedError):
            Encryption([ALICE] * count if count else [])

    def test_duplicates_go_and_the_order_stays(self) -> None:
        assert Encryption([BOB, ALICE, BOB.upper(), ALICE]).recipients == (BOB, ALICE)


class TestFormat:
    """``snapshot`` exactly when ``encryption`` is set; local and manual only."""

    def test_archive_by_default_snapshot_with_encryption(self) -> None:
        assert draft(BackupKind.MANUAL).format is BackupFormat.ARCHIVE
        assert draft(BackupKind.LOCAL, Encryption([ALICE])).format is BackupFormat.SNAPSHOT

    def test_a_patch_makes_a_backup_a_snapshot_one_and_replaces_recipients(self) -> None:
        snapshot = changed(draft(BackupKind.LOCAL), Encryption([ALICE]))
        assert snapshot.format is BackupFormat.SNAPSHOT
        replaced = changed(snapshot, Encryption([BOB]))
        assert replaced.encryption == Encryption([BOB])

    def test_cloud_backups_refuse_encryption(self) -> None:
        cloud = draft(BackupKind.CLOUD)
        for given in (Encryption([ALICE]), None):
            with pytest.raises(ValidationFailedError):
                cloud.check_kind_rules(BackupChanges(encryption=given), worker_exists=False)

    def test_a_snapshot_backup_stays_one(self) -> None:
        snapshot = draft(BackupKind.MANUAL, Encryption([ALICE]))
        with pytest.raises(InvalidStateError):
            changed(snapshot, None)
        archive = draft(BackupKind.MANUAL)
        assert changed(archive, None) is archive
        assert BackupChanges().encryption is UNSET
