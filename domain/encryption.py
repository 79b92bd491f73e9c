"""A snapshot backup's encryption: the age X25519 recipients its snapshots are sealed to.

A recipient is ``age1`` and the bech32 encoding (BIP 173, checksum included) of a 32-byte
X25519 public key, as ``age-keygen`` prints it. Only public keys reach the service.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

import attrs

from strongroom.domain.errors import ValidationFailedError

MAX_RECIPIENTS = 10
_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_GENERATOR = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
_HRP = "age"
# 32 bytes are 256 bits: 52 five-bit groups, the last with 4 zero bits of padding.
_KEY_GROUPS = 52
_CHECKSUM = 6


class BackupFormat(StrEnum):
    """How a backup's runs are stored: tar + zstd archives, or encrypted snapshots."""

    ARCHIVE = "archive"
    SNAPSHOT = "snapshot"


def _polymod(values: Iterable[int]) -> int:
    check = 1
    for value in values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for bit, generator in enumerate(_GENERATOR):
            if (top >> bit) & 1:
                check ^= generator
    return check


def is_age_recipient(text: str) -> bool:
    """Whether ``text`` is an age X25519 recipient: ``age1`` + bech32 of 32 bytes with a
    valid checksum (one case throughout, as bech32 requires)."""
    if text not in (text.lower(), text.upper()):
        return False
    hrp, separator, data = text.lower().rpartition("1")
    if hrp != _HRP or not separator or len(data) != _KEY_GROUPS + _CHECKSUM:
        return False
    if any(char not in _CHARSET for char in data):
        return False
    values = [_CHARSET.index(char) for char in data]
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    if _polymod(expanded + values) != 1:
        return False
    return values[_KEY_GROUPS - 1] & 0b1111 == 0


def _checked_recipients(given: Iterable[str]) -> tuple[str, ...]:
    recipients = list(given)
    if not 1 <= len(recipients) <= MAX_RECIPIENTS:
        raise ValidationFailedError(
            f"encryption.recipients takes 1 to {MAX_RECIPIENTS} age recipients"
        )
    for index, recipient in enumerate(recipients):
        if not isinstance(recipient, str) or not is_age_recipient(recipient):
            raise ValidationFailedError(f"encryption.recipients[{index}] is not an age recipient")
    # Duplicates go, the order stays (bech32 is one key in either case).
    return tuple(dict.fromkeys(recipient.lower() for recipient in recipients))


@attrs.frozen
class Encryption:
    """The public keys a snapshot backup's new runs are sealed to (1 to 10)."""

    recipients: tuple[str, ...] = attrs.field(converter=_checked_recipients)
