"""Restore targets obey the outbound policy at connection time (contract 13): a name that
resolves to a disallowed address is refused before a packet leaves, with the same answer
as a host that cannot be reached (the stage's fixed message), and the refusal holds no
secret."""

from __future__ import annotations

import io

import pytest

from strongroom.adapters.outbound.policy import Budget, Outbound, Stage
from strongroom.adapters.resolver import Resolver
from strongroom.adapters.restores.postgres import restore_postgres
from strongroom.adapters.restores.s3 import restore_s3
from strongroom.domain.backups import PostgresSource, S3Source
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.restore_targets import RestoreFailedError

SECRET = "target-secret-never-shown"
QUICK = Budget(0.2, 0.3, 0.5)


def rebinding(address: str) -> Outbound:
    """The default policy with a name server that answers ``address`` for every name."""
    resolve: Resolver = lambda _host, _port: [address]  # noqa: E731
    return Outbound(EndpointPolicy(), resolve, QUICK)


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "::1", "::ffff:7f00:1"])
def test_an_s3_target_resolving_to_a_disallowed_address_is_not_reached(address: str) -> None:
    """Refused like an unreachable host; the secret is not in the message."""
    target = S3Source(endpoint="http://bucket.example.com:9000", bucket="restored")
    keys = {"access_key_id": "id", "secret_access_key": SECRET}
    with pytest.raises(RestoreFailedError) as refused:
        restore_s3(io.BytesIO(b""), target, keys, rebinding(address))
    assert str(refused.value) == Stage.RESTORE_TARGET.message


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "::1", "2002:7f00:1::"])
def test_a_postgres_target_resolving_to_a_disallowed_address_is_not_reached(
    address: str,
) -> None:
    """The same answer as for a name that does not resolve; no tool is started."""
    target = PostgresSource(host="db.example.com", port=5432, database="d")
    keys = {"username": "restorer", "password": SECRET}
    with pytest.raises(RestoreFailedError) as refused:
        restore_postgres(io.BytesIO(b""), target, keys, rebinding(address))

    def nowhere(_host: str, _port: int) -> list[str]:
        raise OSError("no such name")

    with pytest.raises(RestoreFailedError) as unresolved:
        restore_postgres(io.BytesIO(b""), target, keys, Outbound(EndpointPolicy(), nowhere, QUICK))
    assert str(refused.value) == str(unresolved.value) == Stage.RESTORE_TARGET.message


def test_a_malformed_bucket_name_fails_clearly() -> None:
    """A bucket name S3 cannot have: ``failed`` naming it, not an unexpected error."""
    target = S3Source(endpoint="http://s3.example.com", bucket="b")
    keys = {"access_key_id": "id", "secret_access_key": SECRET}
    with pytest.raises(RestoreFailedError, match="invalid bucket name"):
        restore_s3(io.BytesIO(b""), target, keys, rebinding("203.0.113.9"))
