"""Connections to customer endpoints are checked after every resolution (contract 13).

A listener on loopback stands for whatever an attacker would like the service to reach;
a fake resolver plays the rebinding name server. The guard must refuse before connecting:
the listener never sees a connection.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence

import pytest
import urllib3

from strongroom.adapters.outbound.policy import (
    Budget,
    Outbound,
    Stage,
    UnreachableError,
    resolve_within,
)
from strongroom.adapters.resolver import Resolver
from strongroom.adapters.storage.outbound import guarded_pool_manager
from strongroom.domain.endpoints import DEFAULT_POLICY, EndpointPolicy
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.entrypoints.settings import Settings


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP socket listening on loopback (nothing accepts: the backlog tells)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.settimeout(0.3)
        yield sock


def connected(listener: socket.socket) -> bool:
    """Whether anyone connected to ``listener``."""
    try:
        peer, _ = listener.accept()
    except TimeoutError:
        return False
    peer.close()
    return True


def resolving(table: dict[str, Sequence[str]]) -> Resolver:
    def resolve(host: str, port: int) -> Sequence[str]:
        return table[host]

    return resolve


def get(manager: urllib3.PoolManager, url: str) -> None:
    manager.request("GET", url, retries=False, timeout=2.0)


class TestGuardedConnections:
    """Every address of a name is checked; a disallowed one refuses before any packet."""

    def test_a_name_resolving_to_loopback_is_refused_without_connecting(
        self, listener: socket.socket
    ) -> None:
        """DNS rebinding: ``rebind.test`` points at loopback; refused like an unreachable
        host (``NewConnectionError``), and the listener sees nothing."""
        port = listener.getsockname()[1]
        manager = guarded_pool_manager(DEFAULT_POLICY, resolving({"rebind.test": ["127.0.0.1"]}))
        with pytest.raises(urllib3.exceptions.NewConnectionError):
            get(manager, f"http://rebind.test:{port}/")
        assert not connected(listener)

    @pytest.mark.parametrize("address", ["169.254.169.254", "0.0.0.0", "::1", "fe80::1"])
    def test_metadata_unspecified_and_link_local_names_are_refused(self, address: str) -> None:
        """The guard refuses before connecting, so no packet leaves for these."""
        manager = guarded_pool_manager(DEFAULT_POLICY, resolving({"meta.test": [address]}))
        with pytest.raises(urllib3.exceptions.NewConnectionError):
            get(manager, "http://meta.test/latest/meta-data/")

    def test_one_disallowed_address_among_allowed_ones_refuses_the_name(
        self, listener: socket.socket
    ) -> None:
        """A name answering an allowed and a disallowed address is refused whole."""
        port = listener.getsockname()[1]
        policy = EndpointPolicy.parse("127.0.0.0/8")
        manager = guarded_pool_manager(
            policy, resolving({"mixed.test": ["127.0.0.1", "169.254.169.254"]})
        )
        with pytest.raises(urllib3.exceptions.NewConnectionError):
            get(manager, f"http://mixed.test:{port}/")
        assert not connected(listener)

    def test_a_literal_loopback_address_is_refused_too(self, listener: socket.socket) -> None:
        """A literal needs no name server, and gets the same check."""
        port = listener.getsockname()[1]
        manager = guarded_pool_manager(DEFAULT_POLICY)
        with pytest.raises(urllib3.exceptions.NewConnectionError):
            get(manager, f"http://127.0.0.1:{port}/")
        assert not connected(listener)

    @pytest.mark.parametrize("host", ["2130706433", "127.1", "0x7f.0.0.1", "localhost"])
    def test_odd_spellings_of_loopback_are_resolved_then_refused(
        self, listener: socket.socket, host: str
    ) -> None:
        """Forms that are no literal for the PATCH check (a decimal number, a short or hex
        dotted form, a name) are judged by what the system resolves them to."""
        port = listener.getsockname()[1]
        manager = guarded_pool_manager(DEFAULT_POLICY)
        with pytest.raises(urllib3.exceptions.HTTPError):
            get(manager, f"http://{host}:{port}/")
        assert not connected(listener)

    def test_a_listed_network_is_reached_at_the_checked_address(
        self, listener: socket.socket
    ) -> None:
        """Allowed by configuration: the connection goes to the address that was checked
        (the name is not looked up again by the connect)."""
        port = listener.getsockname()[1]
        policy = EndpointPolicy.parse("127.0.0.0/8")
        manager = guarded_pool_manager(policy, resolving({"store.test": ["127.0.0.1"]}))
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):
            manager.request(
                "GET", f"http://store.test:{port}/", retries=False, timeout=urllib3.Timeout(1, 0.2)
            )
        assert connected(listener)


class TestSetting:
    """``STRONGROOM_ENDPOINT_NETWORKS`` reaches the facade through bootstrap."""

    def test_the_default_and_a_listed_network(self) -> None:
        """Default: private ranges, not loopback; a listed network adds to public ones."""
        default = Settings.from_env({})
        assert default.endpoint_policy == DEFAULT_POLICY
        assert not default.endpoint_policy.allows("127.0.0.1")
        listed = Settings.from_env({"STRONGROOM_ENDPOINT_NETWORKS": "127.0.0.0/8"})
        assert listed.endpoint_policy.allows("127.0.0.1")
        assert not listed.endpoint_policy.allows("10.0.0.1")
        facade = bootstrap(endpoint_policy=listed.endpoint_policy)
        assert facade.deps.endpoint_policy == listed.endpoint_policy
        assert bootstrap().deps.endpoint_policy == DEFAULT_POLICY

    def test_a_malformed_value_refuses_to_start(self) -> None:
        """A typo must not silently open or close the network."""
        with pytest.raises(ValueError, match="STRONGROOM_ENDPOINT_NETWORKS"):
            Settings.from_env({"STRONGROOM_ENDPOINT_NETWORKS": "127.0.0.1/40"})


class TestPolicyMechanics:
    """``Outbound``: a bounded resolution, and failures that are one message at one time."""

    def test_a_slow_name_server_is_cut_at_the_budget(self) -> None:
        def slow(_host: str, _port: int) -> Sequence[str]:
            time.sleep(2)
            return ["8.8.8.8"]

        started = time.monotonic()
        with pytest.raises(UnreachableError):
            resolve_within(slow, "slow.test", 80, 0.2)
        assert time.monotonic() - started < 1

    def test_a_name_with_one_disallowed_address_is_unreachable(self) -> None:
        outbound = Outbound(resolve=resolving({"mixed.test": ["8.8.8.8", "::ffff:a9fe:a9fe"]}))
        with pytest.raises(UnreachableError):
            outbound.addresses("mixed.test", 80)
        assert Outbound(resolve=resolving({"ok.test": ["8.8.8.8"]})).addresses("ok.test", 80) == [
            "8.8.8.8"
        ]

    def test_a_failure_is_the_stage_message_at_the_floor_without_its_cause(self) -> None:
        outbound = Outbound(budget=Budget(0.1, 0.2, 0.4))
        started = time.monotonic()
        with (
            pytest.raises(RuntimeError) as failed,
            outbound.stage(Stage.WEBHOOK, RuntimeError),
        ):
            raise ConnectionRefusedError("connection to 10.0.0.5 port 5432 refused, pw=hunter2")
        assert time.monotonic() - started >= 0.39
        assert str(failed.value) == "the webhook could not be reached"
        assert failed.value.__cause__ is None
        assert failed.value.__suppress_context__

    def test_kept_errors_pass_at_once(self) -> None:
        outbound = Outbound(budget=Budget(0.1, 0.2, 5.0))
        started = time.monotonic()
        with pytest.raises(KeyError), outbound.stage(Stage.SOURCE, RuntimeError, keep=(KeyError,)):
            raise KeyError("ours")
        assert time.monotonic() - started < 1

    def test_a_floor_shorter_than_the_budget_is_refused(self) -> None:
        with pytest.raises(ValueError, match="floor"):
            Budget(resolve=1, exchange=3, floor=2)
