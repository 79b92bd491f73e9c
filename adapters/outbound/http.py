"""The HTTP client of an outbound path (S3 endpoints today, webhooks next): connections
only to judged addresses (``guarded_pool_manager``), the budget's ``exchange`` for
connecting and for each answer, no retry of a failed connection. Its failures are turned
into the stage's message by ``Outbound.stage`` around the calls."""

from __future__ import annotations

import urllib3

from strongroom.adapters.outbound.policy import Outbound
from strongroom.adapters.storage.outbound import guarded_pool_manager


def outbound_http(outbound: Outbound, maxsize: int = 4) -> urllib3.PoolManager:
    """A ``PoolManager`` within ``outbound`` (502-504 answers retried twice: a server's
    own answer, no reachability signal)."""
    return guarded_pool_manager(
        outbound,
        timeout=urllib3.Timeout(total=outbound.budget.exchange),
        retries=urllib3.Retry(
            total=2,
            connect=0,
            read=0,
            status=2,
            backoff_factor=0.2,
            status_forcelist=[502, 503, 504],
        ),
        maxsize=maxsize,
    )
