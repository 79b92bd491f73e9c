"""The ``strongroom`` command."""

from strongroom.entrypoints.cli.server import main

__all__ = ["main"]
