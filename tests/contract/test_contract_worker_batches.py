"""Workers' credentials of many concurrent requests in one look, and their use in one
write (the long polls of issue 32): every adapter finds and touches exactly the same."""

from __future__ import annotations

from uuid import uuid4

from contract_records import Adapter, at, user, worker, workspace


def test_find_many_gives_each_hash_its_worker_and_leaves_out_the_unknown(
    adapter: Adapter,
) -> None:
    """Workers of any workspace, by hash; a hash of no worker (or repeated) is no error."""
    ada = user()
    mine, theirs = workspace(ada), workspace(ada)
    rack, shelf = worker(mine.id, last_seen_at=at(5)), worker(theirs.id)
    idle = worker(mine.id)
    adapter.store(ada, mine, theirs, rack, shelf, idle)
    with adapter.uow() as uow:
        found = uow.workers.find_many([rack.token_hash, shelf.token_hash, "no-such-hash"])
        assert found == {rack.token_hash: rack, shelf.token_hash: shelf}
        assert uow.workers.find_many([rack.token_hash, rack.token_hash]) == {rack.token_hash: rack}
        assert uow.workers.find_many([]) == {}


def test_touch_many_writes_only_stale_times(adapter: Adapter) -> None:
    """As ``touch`` of each: a time at or after ``stale_before`` stays, an older or absent
    one moves; an unknown id is no error."""
    ada = user()
    mine = workspace(ada)
    never, old, recent = (
        worker(mine.id),
        worker(mine.id, last_seen_at=at(5)),
        worker(mine.id, last_seen_at=at(15)),
    )
    adapter.store(ada, mine, never, old, recent)
    with adapter.uow() as uow:
        uow.workers.touch_many([never.id, old.id, recent.id, uuid4()], at(20), at(10))
        uow.workers.touch_many([], at(30), at(30))
        uow.commit()
    with adapter.uow() as uow:
        seen = {
            w.id: w.last_seen_at
            for w in uow.workers.find_many(
                [never.token_hash, old.token_hash, recent.token_hash]
            ).values()
        }
    assert seen == {never.id: at(20), old.id: at(20), recent.id: at(15)}
