"""S3 bucket names (contract section 13; issue 27, finding 11)."""

from __future__ import annotations

import pytest

from strongroom.domain.buckets import is_bucket_name


@pytest.mark.parametrize(
    "name", ["abc", "my-backups", "backups.example.com", "a" * 63, "0day", "logs-2026"]
)
def test_names_s3_accepts(name: str) -> None:
    assert is_bucket_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "b",
        "ab",
        "a" * 64,
        "Backups",
        "my_backups",
        "-backups",
        "backups-",
        ".backups",
        "backups.",
        "my..backups",
        "192.168.1.10",
        "bücket",
        "",
    ],
)
def test_names_s3_refuses(name: str) -> None:
    assert not is_bucket_name(name)
