"""Conditional changes (a PATCH's ``If-Match``): the caller's condition on the object's
current state, checked inside the change's own transaction, on the locked row, so that no
other change can slip in between the check and the write."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from strongroom.domain.errors import PreconditionFailedError

T = TypeVar("T")

Precondition = Callable[[T], bool]
"""Whether the object as it stands now (its current state) is the one the caller read."""


def check_precondition(precondition: Precondition[T] | None, current: T, kind: str) -> None:
    """``precondition_failed`` (nothing changes) unless ``current`` meets ``precondition``;
    checked after the object was found (404 first) and before any rule on the change."""
    if precondition is not None and not precondition(current):
        raise PreconditionFailedError(kind)
