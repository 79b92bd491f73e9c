"""Which addresses the service may connect to on a customer's behalf (contract 13).

Cloud sources, customer destinations and restore targets name endpoints; the service
connects only to public addresses and to the networks ``STRONGROOM_ENDPOINT_NETWORKS``
lists. Loopback, link-local (cloud metadata at 169.254.169.254 included), unspecified and
every other special-purpose address are refused unless a listed network holds them.

This module is the pure policy (parsing the setting, classifying an address, checking an
endpoint that names a literal address); resolving names and connecting is the adapters'
part, which asks ``EndpointPolicy.allows`` about every address a name resolves to.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import attrs

from strongroom.domain.errors import ValidationFailedError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# The usual self-hosted case: private IPv4 ranges and IPv6 unique local addresses.
DEFAULT_ENDPOINT_NETWORKS = "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"
NO_NETWORKS = "none"


def parse_networks(text: str) -> tuple[Network, ...]:
    """The networks of a ``STRONGROOM_ENDPOINT_NETWORKS`` value: a comma list of CIDRs
    (``10.0.0.0/8``, ``fc00::/7``; a bare address is a /32 or /128), or ``none`` for no
    network besides public addresses. ``ValueError`` for anything else."""
    cleaned = text.strip()
    if cleaned.lower() == NO_NETWORKS:
        return ()
    items = [item.strip() for item in cleaned.split(",")]
    if not cleaned or not all(items):
        raise ValueError("STRONGROOM_ENDPOINT_NETWORKS must be a comma list of CIDRs, or none")
    networks: list[Network] = []
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError as error:
            raise ValueError(
                "STRONGROOM_ENDPOINT_NETWORKS must be a comma list of CIDRs, or none"
            ) from error
    return tuple(networks)


def _plain(address: Address) -> Address:
    """An IPv4 address written as IPv6 (``::ffff:127.0.0.1``) judged as the IPv4 one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


# IPv6 global unicast: everything outside it is special (loopback, IPv4-compatible and
# NAT64 forms, link-local, unique local, multicast) or unassigned.
_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")


def is_public(address: Address) -> bool:
    """A globally routable unicast address (not loopback, link-local, unspecified,
    private, shared, documentation, multicast or otherwise reserved)."""
    plain = _plain(address)
    if isinstance(plain, ipaddress.IPv6Address) and plain not in _GLOBAL_UNICAST_V6:
        return False
    return plain.is_global and not plain.is_multicast and not plain.is_reserved


@attrs.frozen
class EndpointPolicy:
    """Public addresses, plus those in ``networks``."""

    networks: tuple[Network, ...] = attrs.field(
        factory=lambda: parse_networks(DEFAULT_ENDPOINT_NETWORKS)
    )

    @classmethod
    def parse(cls, text: str) -> EndpointPolicy:
        """The policy a ``STRONGROOM_ENDPOINT_NETWORKS`` value describes."""
        return cls(parse_networks(text))

    def allows(self, address: str | Address) -> bool:
        """Whether the service may connect to ``address`` (an IP address, never a name)."""
        parsed = ipaddress.ip_address(address) if isinstance(address, str) else address
        plain = _plain(parsed)
        if is_public(plain):
            return True
        return any(
            plain.version == network.version and plain in network for network in self.networks
        )

    def check_endpoint(self, url: str, field: str) -> None:
        """Refuse with ``validation_failed`` an endpoint URL whose host is a literal address
        the policy does not allow. A name passes here: it is checked after every resolution,
        when the service connects."""
        host = urlsplit(url).hostname
        if host is None:
            return
        try:
            address = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            return
        if not self.allows(address):
            raise ValidationFailedError(
                f"{field} names an address outside the networks the service connects to"
            )


# Public addresses and the private ranges: the default of ``STRONGROOM_ENDPOINT_NETWORKS``.
DEFAULT_POLICY = EndpointPolicy()
