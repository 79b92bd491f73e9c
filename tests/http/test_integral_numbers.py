"""JSON numbers with an integral value are integers where the schema says integer
(contract section 13; issue 27, finding 11): ``10.0`` is ``10``."""

from __future__ import annotations

import pytest

from strongroom.adapters.wire import CONVERTER
from strongroom.adapters.wire.claims import ClaimRequest
from strongroom.adapters.wire.sources import PostgresSource


def test_an_integral_float_is_the_integer() -> None:
    body = {"type": "postgres", "host": "db.example.com", "port": 5432.0, "database": "app"}
    source = CONVERTER.structure(body, PostgresSource)
    assert source.port == 5432
    assert type(source.port) is int
    claim = CONVERTER.structure({"wait_seconds": 10.0}, ClaimRequest)
    assert (claim.wait_seconds, type(claim.wait_seconds)) == (10, int)


@pytest.mark.parametrize("port", [5432.5, True, "5432", float("inf")])
def test_other_numbers_and_types_are_still_refused(port: object) -> None:
    body = {"type": "postgres", "host": "db.example.com", "port": port, "database": "app"}
    with pytest.raises(Exception):  # noqa: B017, PT011 - cattrs wraps the hook's refusal
        CONVERTER.structure(body, PostgresSource)
