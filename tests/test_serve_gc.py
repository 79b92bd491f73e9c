"""A serving process keeps what start-up made out of later garbage collections
(``freeze_start_up_objects``), so a full collection does not walk the whole heap while
requests wait."""

from __future__ import annotations

import gc
import weakref

from strongroom.entrypoints.http import freeze_start_up_objects


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector can free it


def test_objects_alive_at_start_up_are_left_out_of_later_collections() -> None:
    """Garbage made before the freeze is collected by it; an object alive at the freeze
    is never walked again, so a later collection leaves it be; what is made after the
    freeze is collected as usual."""
    garbage = weakref.ref(_Node())
    survivor = _Node()
    frozen = weakref.ref(survivor)
    try:
        freeze_start_up_objects()
        assert garbage() is None
        del survivor
        later = weakref.ref(_Node())
        gc.collect()
        assert frozen() is not None
        assert later() is None
    finally:
        gc.unfreeze()
    gc.collect()
    assert frozen() is None
