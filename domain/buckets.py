"""S3 bucket names (contract section 13): what a source, a destination or a restore target
may name, so that a name S3 would refuse is refused when it is given, not when the service
first connects."""

from __future__ import annotations

import ipaddress
import re

BUCKET_RULE = (
    "must be 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with "
    "a letter or digit, and not an IP address"
)
BUCKET_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
_BUCKET = re.compile(BUCKET_PATTERN, re.ASCII)


def is_bucket_name(name: str) -> bool:
    """Whether ``name`` follows S3's rules for bucket names (``BUCKET_RULE``)."""
    if not _BUCKET.fullmatch(name) or ".." in name:
        return False
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return True
    return False
