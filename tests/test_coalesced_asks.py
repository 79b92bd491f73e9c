"""``Coalesced`` (ports/driving/coalescing.py): a lone ask is answered by a call of its own
at once; asks made while a call is in flight are answered together by the next one, each
with its own answer; an error reaches every ask of its batch and no other; an ask
cancelled while it leads leaves the others to the next batch."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest

from strongroom.ports.driving.coalescing import Coalesced


class Held:
    """Answers each key with its double when released; records every batch."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.releases: list[asyncio.Event] = []
        self.fail: set[int] = set()

    async def __call__(self, keys: Sequence[int]) -> Mapping[int, int]:
        self.batches.append(list(keys))
        released = asyncio.Event()
        self.releases.append(released)
        await released.wait()
        if self.fail & set(keys):
            raise RuntimeError("batch failed")
        return {key: key * 2 for key in keys if key >= 0}


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_asks_made_during_a_call_are_answered_by_the_next_one() -> None:
    async def scenario() -> None:
        held = Held()
        asks = Coalesced(held, limit=3)
        first = asyncio.ensure_future(asks.ask(1))
        await settle()
        assert held.batches == [[1]]  # alone: at once
        later = [asyncio.ensure_future(asks.ask(key)) for key in (2, 3, -4, 5)]
        await settle()
        assert held.batches == [[1]]  # one call in flight at a time
        held.releases[0].set()
        assert await first == 2
        await settle()
        assert held.batches == [[1], [2, 3, -4]]  # the limit
        held.releases[1].set()
        await settle()
        assert held.batches[2] == [5]
        held.releases[2].set()
        assert await asyncio.gather(*later) == [4, 6, None, 10]

    asyncio.run(scenario())


def test_an_error_reaches_its_batch_only() -> None:
    async def scenario() -> None:
        held = Held()
        held.fail = {2}
        asks = Coalesced(held)
        first = asyncio.ensure_future(asks.ask(1))
        await settle()
        failing = [asyncio.ensure_future(asks.ask(key)) for key in (2, 3)]
        await settle()
        held.releases[0].set()
        await settle()
        after = asyncio.ensure_future(asks.ask(4))
        held.releases[1].set()
        await settle()
        held.releases[2].set()
        assert await first == 2
        for failed in failing:
            with pytest.raises(RuntimeError):
                await failed
        assert await after == 8
        assert held.batches == [[1], [2, 3], [4]]

    asyncio.run(scenario())


def test_a_leader_cancelled_leaves_its_batch_to_the_next() -> None:
    async def scenario() -> None:
        held = Held()
        asks = Coalesced(held)
        leader = asyncio.ensure_future(asks.ask(1))
        await settle()
        queued = [asyncio.ensure_future(asks.ask(key)) for key in (2, 3)]
        await settle()
        held.releases[0].set()
        await settle()
        assert held.batches == [[1], [2, 3]]
        assert await leader == 2
        queued[0].cancel()  # the leader of the second batch gives up
        await settle()
        assert held.batches == [[1], [2, 3], [3]]
        held.releases[2].set()
        assert await queued[1] == 6

    asyncio.run(scenario())
