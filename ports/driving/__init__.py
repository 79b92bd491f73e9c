"""The use cases (driving port) of Strongroom."""

from strongroom.ports.driving.access import Bearer
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.facade import Strongroom
from strongroom.ports.driving.idempotency import IdempotencyKey

__all__ = [
    "Bearer",
    "Dependencies",
    "IdempotencyKey",
    "Strongroom",
]
