"""Fixtures shared by every test, and the hypothesis profiles.

``HYPOTHESIS_PROFILE`` picks the profile: ``dev`` (default, quick), ``ci`` (more examples,
no deadline) or ``thorough``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from strongroom.ports.driving import Strongroom
from support.seaweed import SeaweedServer, seaweed_server
from support.world import Api, make_client, make_facade

settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def facade() -> Strongroom:
    """A fresh in-memory Strongroom."""
    return make_facade()


@pytest.fixture
def api(facade: Strongroom) -> Iterator[Api]:
    """An HTTP client over ``facade``, its lifespan running."""
    with make_client(facade) as client:
        yield Api(facade, client)


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedServer]:
    """One SeaweedFS S3 server for the whole test session (loopback, own credentials)."""
    with seaweed_server(tmp_path_factory.mktemp("seaweed")) as server:
        yield server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long-running tests (marked ``slow``) first, each file's order kept: spread over
    the test processes at the start instead of one of them ending the run alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
