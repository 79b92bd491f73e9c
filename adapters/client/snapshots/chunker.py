"""Content-defined chunking: FastCDC (2020, normalized chunking level 1, gear table of seed
0) with a 256 KiB minimum, 1 MiB target and 4 MiB maximum, so an edit moves only the
chunks around it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import pyfastcdc

MIN_SIZE = 256 << 10
AVG_SIZE = 1 << 20
MAX_SIZE = 4 << 20

_CDC = pyfastcdc.FastCDC(AVG_SIZE, min_size=MIN_SIZE, max_size=MAX_SIZE, normalized_chunking=1)


def chunks(stream: BinaryIO) -> Iterator[memoryview]:
    """The chunks of a stream; each view is valid only until the next one is asked for."""
    for chunk in _CDC.cut_stream(stream):
        yield chunk.data


def cut_points(data: bytes) -> list[int]:
    """The end offsets of the chunks of ``data`` (for test vectors)."""
    return [c.offset + c.length for c in _CDC.cut_buf(data)]
