"""Fixtures for the SDK and the command-line client: the real app, embedded (SQLite under
a temporary data directory), in-process or over a loopback socket, and people signed in
through the built-in provider's device flow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from strongroom.client import Client
from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.settings import Settings
from support.client_people import admin_in_new_workspace

IN_PROCESS = "http://testserver"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A fresh data directory."""
    return tmp_path / "data"


@pytest.fixture
def server(data_dir: Path) -> Iterator[TestClient]:
    """The app in-process, its lifespan running (``http://testserver``)."""
    with TestClient(create_app(Settings(data_dir=data_dir))) as client:
        yield client


@pytest.fixture
def anonymous(server: TestClient) -> Client:
    """The SDK without a credential, over the in-process app."""
    return Client(IN_PROCESS, http=server)


@pytest.fixture
def admin(anonymous: Client) -> Client:
    """The SDK as the admin of a fresh workspace."""
    return admin_in_new_workspace(anonymous, "ada@example.com")
