"""``Outbound``: how the service connects to an address a customer named.

1. **Resolve** the name with a time budget (``Budget.resolve``), in a helper thread, so a
   slow name server cannot stretch an answer.
2. **Judge** every address it resolves to with ``EndpointPolicy.allows`` (which unwraps
   embedded IPv4 and refuses metadata addresses whatever is listed); one disallowed
   address refuses the name, before a packet leaves.
3. **Connect** only to a judged address, within ``Budget.exchange`` for the connection and
   the first answer (the adapters pass it to urllib3 or libpq).
4. **Report** a failure as the stage's one fixed message (``Stage``), never the driver's
   text, an address, a port or a credential; the cause is logged by its type only. A
   failure is answered no sooner than ``Budget.floor`` after the stage began, and every
   way of failing ends within it, so the time taken tells a closed port from an open one
   from a server of another protocol no better than the text does.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import threading
import time
from collections.abc import Callable, Iterator

import attrs

from strongroom.adapters import resolver
from strongroom.adapters.resolver import Resolver
from strongroom.domain.endpoints import DEFAULT_POLICY, EndpointPolicy

logger = logging.getLogger(__name__)


class Stage(enum.Enum):
    """Where an outbound exchange failed, and the one message that says so."""

    SOURCE = "the source could not be reached"
    SOURCE_READ = "the source failed while it was read"
    DESTINATION = "the destination could not be reached"
    RESTORE_TARGET = "the restore target could not be reached"
    RESTORE_WRITE = "the restore target refused the restore"
    WEBHOOK = "the webhook could not be reached"

    @property
    def message(self) -> str:
        """The user-visible text of a failure at this stage."""
        return str(self.value)


@attrs.frozen
class Budget:
    """Seconds: to resolve a name, to connect and get a first answer, and the floor under
    which no failure is answered (at least ``resolve + exchange``)."""

    resolve: float = 1.5
    exchange: float = 3.0
    floor: float = 5.0

    def __attrs_post_init__(self) -> None:
        # (PostgreSQL paths wait at least libpq's 2 s: keep ``exchange`` at 2 s or more
        # where they must answer at the floor too.)
        if self.floor < self.resolve + self.exchange:
            raise ValueError("an outbound budget's floor must cover resolving and exchanging")

    @property
    def libpq_timeout(self) -> int:
        """libpq's ``connect_timeout`` (whole seconds, at least 2: libpq's own minimum)."""
        return max(2, int(self.exchange))


DEFAULT_BUDGET = Budget()


class UnreachableError(Exception):
    """A name that does not resolve in time, or resolves to an address the policy refuses
    (internal: reported as the stage's message like any other failure)."""


def resolve_within(resolve: Resolver, host: str, port: int, seconds: float) -> list[str]:
    """``resolve(host, port)`` given at most ``seconds``; ``UnreachableError`` when it fails
    or takes longer (the look-up thread is left to finish on its own)."""
    answer: list[str] = []
    failed: list[BaseException] = []

    def look_up() -> None:
        try:
            answer.extend(str(address) for address in resolve(host, port))
        except BaseException as error:  # handed over below
            failed.append(error)

    thread = threading.Thread(target=look_up, name="outbound-resolve", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive() or failed or not answer:
        raise UnreachableError()
    return answer


def system_resolve(host: str, port: int) -> list[str]:
    """The system's resolver, looked up at each call (tests stand in a name server)."""
    return resolver.system_resolver(host, port)


@attrs.frozen
class Outbound:
    """The policy every outbound path follows (see the module documentation)."""

    endpoints: EndpointPolicy = DEFAULT_POLICY
    resolve: Resolver = system_resolve
    budget: Budget = DEFAULT_BUDGET

    def addresses(self, host: str, port: int) -> list[str]:
        """Every address of ``host`` (a name or a literal), when the policy allows each;
        ``UnreachableError`` otherwise."""
        addresses = resolve_within(self.resolve, host, port, self.budget.resolve)
        if not all(self.endpoints.allows(address) for address in addresses):
            logger.info("an outbound name resolves outside the endpoint policy")
            raise UnreachableError()
        return addresses

    @contextlib.contextmanager
    def stage(
        self,
        stage: Stage,
        error: Callable[[str], Exception],
        *,
        keep: tuple[type[BaseException], ...] = (),
    ) -> Iterator[None]:
        """Run an exchange of ``stage``: any exception but ``keep``'s becomes
        ``error(stage.message)``, raised no sooner than ``budget.floor`` after entry."""
        started = time.monotonic()
        try:
            yield
        except keep:
            raise
        except Exception as failure:
            logger.info("outbound %s failed: %s", stage.name.lower(), type(failure).__name__)
            self.wait_floor(started)
            raise error(stage.message) from None

    def wait_floor(self, started: float) -> None:
        """Sleep until ``budget.floor`` seconds after ``started`` (a ``monotonic`` time)."""
        time.sleep(self.until_floor(started))

    def until_floor(self, started: float) -> float:
        """Seconds left until ``budget.floor`` after ``started`` (0 when past)."""
        return max(0.0, started + self.budget.floor - time.monotonic())

    def with_endpoints(self, endpoints: EndpointPolicy) -> Outbound:
        """The same resolver and budget, judging by ``endpoints``."""
        return attrs.evolve(self, endpoints=endpoints)


def outbound_for(policy: EndpointPolicy | Outbound, resolve: Resolver | None = None) -> Outbound:
    """An ``Outbound`` from what the adapters are given (a bare policy keeps the default
    budget; ``resolve`` replaces the resolver, as the tests' rebinding name server)."""
    outbound = policy if isinstance(policy, Outbound) else Outbound(policy)
    return outbound if resolve is None else attrs.evolve(outbound, resolve=resolve)
