"""How long a stopping server waits for requests in flight: ``STRONGROOM_SHUTDOWN_TIMEOUT``
or ``--shutdown-timeout``, 30 s by default."""

from __future__ import annotations

import pytest

from strongroom.entrypoints.settings import Settings


def test_the_default_is_thirty_seconds() -> None:
    assert Settings.from_env({}).shutdown_timeout == 30


def test_the_environment_and_the_flag_set_it_and_the_flag_wins() -> None:
    env = {"STRONGROOM_SHUTDOWN_TIMEOUT": "5"}
    assert Settings.from_env(env).shutdown_timeout == 5
    assert Settings.from_env(env, shutdown_timeout=7).shutdown_timeout == 7


def test_a_negative_timeout_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="STRONGROOM_SHUTDOWN_TIMEOUT"):
        Settings.from_env({"STRONGROOM_SHUTDOWN_TIMEOUT": "-1"})
