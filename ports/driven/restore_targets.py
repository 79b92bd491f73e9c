"""Restore targets (contract 11): where the service puts a cloud artifact back.

An adapter reads the artifact's bytes (a stream it consumes in constant memory) and writes
them into the target: the objects of an ``s3`` artifact into a bucket, a ``postgres``
artifact into an empty database. It connects only where the outbound endpoint policy
allows (contract 13).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from strongroom.domain.restores import RestoreTarget
from strongroom.ports.driven.storage import ObjectReader


class RestoreFailedError(Exception):
    """The restore could not be completed. The message says why in words safe to show the
    customer and to record: it never holds a credential."""


class RestoreTargets(Protocol):
    """Writes an artifact into a target of the artifact's source type."""

    async def restore(
        self, artifact: ObjectReader, target: RestoreTarget, credentials: Mapping[str, str]
    ) -> None:
        """Read ``artifact`` to its end and write it into ``target`` with ``credentials``;
        ``RestoreFailedError`` when the target refuses, the archive is damaged or does not
        match its manifest, or the target is not fit (a database that is not empty)."""
        ...
