"""The outbound endpoint policy (contract 13): which addresses the service connects to."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from strongroom.domain.backups import (
    Backup,
    BackupChanges,
    BackupKind,
    CustomerS3Destination,
    S3Source,
)
from strongroom.domain.endpoints import DEFAULT_POLICY, EndpointPolicy, parse_networks
from strongroom.domain.errors import ValidationFailedError

# Refused by default: loopback, link-local (cloud metadata), unspecified and other special
# addresses, in both families and in IPv4-mapped form.
REFUSED = [
    "127.0.0.1",
    "127.1.2.3",
    "169.254.169.254",
    "169.254.0.1",
    "0.0.0.0",
    "100.64.0.1",
    "192.0.2.10",
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "::7f00:1",
    "64:ff9b::7f00:1",
    "ff02::1",
    "2001:db8::1",
]
PRIVATE = ["10.1.2.3", "172.16.0.1", "172.31.255.254", "192.168.1.1", "fd12:3456::1"]
PUBLIC = ["8.8.8.8", "52.216.1.1", "2a00:1450:4001::1", "::ffff:8.8.8.8"]


class TestPolicy:
    """Public addresses always, listed networks besides, nothing else."""

    @pytest.mark.parametrize("address", REFUSED)
    def test_special_addresses_are_refused_by_default(self, address: str) -> None:
        """Loopback, link-local, metadata, unspecified, reserved: refused unless listed."""
        assert not DEFAULT_POLICY.allows(address)

    @pytest.mark.parametrize("address", PRIVATE)
    def test_private_ranges_are_allowed_by_default(self, address: str) -> None:
        """The default lists the private IPv4 ranges and IPv6 unique local addresses."""
        assert DEFAULT_POLICY.allows(address)

    @pytest.mark.parametrize("address", PUBLIC)
    def test_public_addresses_are_always_allowed(self, address: str) -> None:
        """Public addresses need no listing, even with ``none``."""
        assert DEFAULT_POLICY.allows(address)
        assert EndpointPolicy.parse("none").allows(address)

    def test_none_allows_public_addresses_only(self) -> None:
        """``none``: the private ranges are refused too."""
        policy = EndpointPolicy.parse("none")
        assert not any(policy.allows(address) for address in PRIVATE + REFUSED)

    def test_a_listed_network_allows_what_it_holds_and_nothing_more(self) -> None:
        """Listing loopback allows loopback (the tests' own SeaweedFS), not metadata."""
        policy = EndpointPolicy.parse(" 127.0.0.0/8 , ::1/128 ")
        assert policy.allows("127.0.0.1")
        assert policy.allows("::1")
        assert policy.allows("::ffff:127.0.0.1")
        assert not policy.allows("169.254.169.254")
        assert not policy.allows("10.0.0.1")

    @pytest.mark.parametrize("text", ["", ",", "10.0.0.0/8,", "10.0.0.0/33", "localhost", "x"])
    def test_a_malformed_setting_is_refused(self, text: str) -> None:
        """Anything but a comma list of CIDRs or ``none`` is an error naming the setting."""
        with pytest.raises(ValueError, match="STRONGROOM_ENDPOINT_NETWORKS"):
            parse_networks(text)


class TestLiteralEndpoints:
    """A PATCH naming a disallowed literal address is 422; a name passes to connect time."""

    @pytest.mark.parametrize(
        "url",
        [
            "http://127.0.0.1:8333",
            "https://169.254.169.254",
            "http://[::1]:9000",
            "http://0.0.0.0",
            "http://[::ffff:127.0.0.1]",
            "http://[fe80::1%25eth0]:80",
        ],
    )
    def test_disallowed_literal_addresses(self, url: str) -> None:
        """Refused as ``validation_failed`` naming the field, never the value."""
        with pytest.raises(ValidationFailedError) as caught:
            DEFAULT_POLICY.check_endpoint(url, "destination.endpoint")
        assert "destination.endpoint" in caught.value.message
        assert url.split("//")[1].split(":", maxsplit=1)[0] not in caught.value.message

    @pytest.mark.parametrize(
        "url", ["https://s3.example.com", "http://localhost:9000", "http://10.0.0.5:9000"]
    )
    def test_names_and_allowed_addresses_pass(self, url: str) -> None:
        """A name is judged after each resolution, when the service connects."""
        DEFAULT_POLICY.check_endpoint(url, "source.endpoint")

    def test_the_kind_rules_check_both_endpoints(self) -> None:
        """``check_kind_rules`` refuses a disallowed source or destination endpoint, and
        takes the configured policy."""
        now = datetime.now(UTC)
        cloud = Backup.draft(uuid4(), uuid4(), "b", BackupKind.CLOUD, now)
        source = BackupChanges(source=S3Source(endpoint="http://127.0.0.1:9000", bucket="b"))
        with pytest.raises(ValidationFailedError, match=r"source\.endpoint"):
            cloud.check_kind_rules(source, worker_exists=False)
        cloud.check_kind_rules(
            source, worker_exists=False, endpoints=EndpointPolicy.parse("127.0.0.0/8")
        )
        manual = Backup.draft(uuid4(), uuid4(), "m", BackupKind.MANUAL, now)
        destination = BackupChanges(
            destination=CustomerS3Destination(endpoint="http://169.254.169.254", bucket="b"),
            destination_credentials={"access_key_id": "a", "secret_access_key": "s"},
        )
        with pytest.raises(ValidationFailedError, match=r"destination\.endpoint"):
            manual.check_kind_rules(destination, worker_exists=False)
