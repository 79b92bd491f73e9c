"""Opening a Strongroom for a configuration: the adapters it names, owned for a lifetime."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.entrypoints.settings import Settings
from strongroom.ports.usecases import Strongroom


def describe_storage(settings: Settings) -> str:
    """Where this configuration keeps its state, for start-up messages."""
    return "in memory (lost on restart)"


@contextmanager
def open_facade(settings: Settings) -> Iterator[Strongroom]:
    """A facade for ``settings``; resources it opens are closed when the block ends."""
    yield bootstrap(
        secret_key=settings.resolved_secret_key(),
        signup_enabled=settings.signup_enabled,
    )
