"""Every response carries ``X-Request-ID``: the client's own (1..200 characters from ``!``
to ``~``) or a generated ``req_<uuid>`` (the application's layer, ``layer.py``, sets it).
"""

from __future__ import annotations

import os
import random
import re

_CLIENT_ID = re.compile(r"[!-~]{1,200}")


# Request ids need to be unique, not secret: a generator seeded from the OS (and again in
# every forked child) makes a version-4 UUID in a third of uuid4()'s time, which reads the
# OS's random source on every call.
_ids = random.Random()  # noqa: S311 - ids are correlation keys, not secrets
os.register_at_fork(after_in_child=_ids.seed)
# The version (4) and variant (RFC 9562) fields: cleared by one mask, set by one value.
_KEEP = ((1 << 128) - 1) & ~((0xF000 << 64) | (0xC000 << 48))
_SET = (0x4000 << 64) | (0x8000 << 48)


def new_request_id() -> str:
    """A generated request id: ``req_`` and a random version-4 UUID."""
    bits = (_ids.getrandbits(128) & _KEEP) | _SET
    hexed = f"{bits:032x}"
    return f"req_{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"


def choose_request_id(sent: str | None) -> str:
    """Echo a well-formed client id, or generate one."""
    if sent is not None and _CLIENT_ID.fullmatch(sent):
        return sent
    return new_request_id()
