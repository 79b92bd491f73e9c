"""Sign-ups per client address (contract section 13): at most ``SIGNUPS_PER_ADDRESS`` in
``SIGNUP_WINDOW``, counted in this process (each instance of a scaled-out service counts
its own), so that one address cannot flood the service with accounts or argon2 work."""

from __future__ import annotations

import math
from collections import deque
from datetime import datetime, timedelta

from strongroom.domain.errors import RateLimitedError

SIGNUPS_PER_ADDRESS = 50
SIGNUP_WINDOW = timedelta(minutes=10)
# Addresses remembered at most: the oldest are forgotten first (a flood of addresses
# cannot grow the process without bound).
MAX_ADDRESSES = 100_000


class SignupLimiter:
    """A sliding window of sign-up times per client address."""

    def __init__(self, limit: int = SIGNUPS_PER_ADDRESS, window: timedelta = SIGNUP_WINDOW) -> None:
        self._limit = limit
        self._window = window
        self._seen: dict[str, deque[datetime]] = {}

    def admit(self, address: str, now: datetime) -> None:
        """Count a sign-up from ``address`` at ``now``; 429 ``rate_limited`` (with
        ``Retry-After``) when the address used up its window."""
        times = self._seen.pop(address, None) or deque()
        while times and times[0] <= now - self._window:
            times.popleft()
        if len(times) >= self._limit:
            self._seen[address] = times
            wait = times[0] + self._window - now
            raise RateLimitedError(
                "too many sign-ups from this address; wait and retry",
                retry_after=math.floor(wait.total_seconds()) + 1,
            )
        times.append(now)
        self._seen[address] = times  # most recent last: the oldest go first
        if len(self._seen) > MAX_ADDRESSES:
            del self._seen[next(iter(self._seen))]
