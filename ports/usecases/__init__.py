"""The use cases (driving port) of Strongroom."""

from strongroom.ports.usecases.dependencies import Dependencies
from strongroom.ports.usecases.facade import Strongroom
from strongroom.ports.usecases.idempotency import IdempotencyKey, IdempotentReplayError

__all__ = ["Dependencies", "IdempotencyKey", "IdempotentReplayError", "Strongroom"]
