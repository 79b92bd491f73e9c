"""Which addresses the service may connect to on a customer's behalf (contract 13).

Cloud sources, customer destinations, restore targets (and webhooks) name endpoints; the
service connects only to public addresses and to the networks
``STRONGROOM_ENDPOINT_NETWORKS`` lists. An address is judged after unwrapping the IPv4
address an IPv6 one carries (IPv4-mapped, IPv4-compatible, SIIT, 6to4, NAT64, Teredo,
ISATAP). Cloud metadata addresses and the special-purpose blocks nobody reaches on
purpose are refused even when a listed network covers them; loopback, link-local,
unspecified, private, shared and unique local addresses are refused unless listed.

"Public" is decided here from the IANA special-purpose registries, never from Python's
``is_global`` (which passes ``192.0.0.192``, 6to4 forms of loopback and others).

This module is the pure policy (parsing the setting, judging an address, checking an
endpoint or host that names a literal address); resolving names and connecting is the
adapters' part (``strongroom.adapters.outbound``), which asks ``EndpointPolicy.allows``
about every address a name resolves to.
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


def _networks(*cidrs: str) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)


# Cloud metadata services (AWS, GCP, Azure, OpenStack: 169.254.169.254 and the rest of
# IPv4 link-local; AWS's IPv6 endpoint; Alibaba's): never, whatever is listed.
METADATA = _networks("169.254.0.0/16", "fd00:ec2::254/128", "100.100.100.200/32")

# Special-purpose blocks (IANA registries) a listing may open: what a self-hosted service
# reaches on purpose (private, shared, loopback, unspecified, IPv6 link-local and ULA).
LISTABLE = _networks(
    "0.0.0.0/32",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "::/128",
    "::1/128",
    "fc00::/7",
    "fe80::/10",
)

# Every other special-purpose block: refused even when a listed network covers it.
# "This network" (0.0.0.0/8) but 0.0.0.0 itself, listable above.
_THIS_NETWORK = tuple(
    ipaddress.IPv4Network("0.0.0.0/8").address_exclude(ipaddress.IPv4Network("0.0.0.0/32"))
)
NEVER = (
    METADATA
    + _THIS_NETWORK
    + _networks(
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # 6to4 relay anycast
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, broadcast
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",  # discard-only
        "2001::/23",  # IETF protocol assignments (Teredo is unwrapped first)
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing
        "fec0::/10",  # deprecated site-local
        "ff00::/8",  # multicast
    )
)

# IPv6 global unicast: outside it nothing is public.
_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_SIIT = ipaddress.IPv6Network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_ISATAP_IDS = (0x00005EFE, 0x02005EFE)


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


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries (none for a plain IPv6 one): a packet
    to it ends at (or is relayed through) them, so they are what is judged."""
    value = int(address)
    low = ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if address in _MAPPED or address in _SIIT or address in _NAT64:
        return (low,)
    if address in _COMPATIBLE and value > 1:  # ``::`` and ``::1`` are IPv6's own
        return (low,)
    if address in _SIX_TO_FOUR:
        return (ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF),)
    if address in _TEREDO:
        assert address.teredo is not None
        return address.teredo
    if (value >> 32) & 0xFFFFFFFF in _ISATAP_IDS:
        return (low,)
    return ()


def _within(address: Address, networks: tuple[Network, ...]) -> bool:
    return any(address.version == net.version and address in net for net in networks)


def is_public(address: Address) -> bool:
    """A globally routable unicast address: in no special-purpose block (IPv6: within
    global unicast too). Embedded IPv4 forms: judge ``embedded_ipv4`` instead."""
    if _within(address, NEVER) or _within(address, LISTABLE):
        return False
    return address.version == 4 or address in _GLOBAL_UNICAST_V6


@attrs.frozen
class EndpointPolicy:
    """Public addresses, plus those in ``networks`` but never ``NEVER``'s."""

    networks: tuple[Network, ...] = attrs.field(
        factory=lambda: parse_networks(DEFAULT_ENDPOINT_NETWORKS)
    )

    @classmethod
    def parse(cls, text: str) -> EndpointPolicy:
        """The policy a ``STRONGROOM_ENDPOINT_NETWORKS`` value describes."""
        return cls(parse_networks(text))

    def allows(self, address: str | Address) -> bool:
        """Whether the service may connect to ``address`` (an IP address, never a name;
        an IPv6 one carrying IPv4 addresses is judged by them)."""
        parsed = ipaddress.ip_address(address) if isinstance(address, str) else address
        if isinstance(parsed, ipaddress.IPv6Address):
            if parsed.scope_id:
                parsed = ipaddress.IPv6Address(str(parsed).split("%", 1)[0])
            inner = embedded_ipv4(parsed)
            if inner:
                return all(self._judged(item) for item in inner)
        return self._judged(parsed)

    def _judged(self, address: Address) -> bool:
        if _within(address, NEVER):
            return False
        return is_public(address) or _within(address, self.networks)

    def check_endpoint(self, url: str, field: str) -> None:
        """Refuse with ``validation_failed`` an endpoint URL whose host is a literal address
        the policy does not allow. A name passes here: it is checked after every resolution,
        when the service connects."""
        parts = urlsplit(url)
        if "[" in parts.netloc:
            # A bracketed host must be an IPv6 literal (``[v1.fe]``, an IPvFuture, is not).
            literal = parts.netloc.rsplit("@", 1)[-1].split("]", 1)[0].lstrip("[")
            self.check_host(literal, field, bracketed=True)
            return
        if parts.hostname is not None:
            self.check_host(parts.hostname, field)

    def check_host(self, host: str, field: str, *, bracketed: bool = False) -> None:
        """Refuse with ``validation_failed`` a host (a PostgreSQL ``host``, an endpoint's
        host) that is a literal address the policy does not allow, in any spelling the
        system resolver reads as one (``127.1``, ``0x7f.0.0.1``, ``2130706433``)."""
        address = literal_address(host)
        if address is None and not bracketed:
            return
        if address is None or not self.allows(address):
            raise ValidationFailedError(
                f"{field} names an address outside the networks the service connects to"
            )


def literal_address(host: str) -> Address | None:
    """The address ``host`` spells, if it is a literal (brackets and a zone id allowed,
    and the classic ``inet_aton`` forms of IPv4); None for a name."""
    text = host.strip().removeprefix("[").removesuffix("]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return _inet_aton(text)


def _inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """IPv4 in the forms ``inet_aton`` accepts: 1 to 4 dotted parts, each decimal, octal
    (leading 0) or hexadecimal (0x), the last filling the remaining bytes."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        lowered = part.lower()
        try:
            if lowered.startswith("0x"):
                numbers.append(int(lowered[2:] or "0", 16))
            elif len(lowered) > 1 and lowered.startswith("0"):
                numbers.append(int(lowered[1:], 8))
            elif lowered.isascii() and lowered.isdigit():
                numbers.append(int(lowered))
            else:
                return None
        except ValueError:
            return None
    *head, last = numbers
    if any(number > 0xFF for number in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    value = 0
    for number in head:
        value = value << 8 | number
    return ipaddress.IPv4Address(value << (8 * (4 - len(head))) | last)


# Public addresses and the private ranges: the default of ``STRONGROOM_ENDPOINT_NETWORKS``.
DEFAULT_POLICY = EndpointPolicy()
