"""How PostgreSQL's group commit (``postgres_group_commit.GroupCommit``) forms and starts
its batches, with a runner that answers when told to: a second batch starts while the first
runs, a third waits for one of them, and a batch takes its statements in the order of the
workspaces they lock, each caller still answered with its own row."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from strongroom.adapters.sql.postgres_group_commit import GroupCommit, Statement
from strongroom.adapters.sql.rows import Row


class HeldRunner:
    """Runs a batch when ``release`` is called; records every batch it was handed."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self._releases: list[asyncio.Event] = []

    async def __call__(self, statements: Sequence[Statement]) -> list[Row | None]:
        self.batches.append([str(params["name"]) for _, params in statements])
        released = asyncio.Event()
        self._releases.append(released)
        await released.wait()
        return [{"name": params["name"]} for _, params in statements]

    def release(self, batch: int) -> None:
        self._releases[batch].set()


def statement(workspace: str, name: str) -> Statement:
    return (b"INSERT", {"workspace_id": workspace, "name": name})


def group_commit(runner: HeldRunner) -> GroupCommit:
    return GroupCommit(runner, lambda lock: str(lock[1]["workspace_id"]))


async def never_alone(_retry: bool) -> Row | None:
    raise AssertionError("no batch failed: nobody runs alone")


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_second_batch_is_sent_while_the_first_runs_and_a_third_waits() -> None:
    async def scenario() -> None:
        runner = HeldRunner()
        commits = group_commit(runner)
        run = commits.run
        first = asyncio.create_task(run(statement("w", "a"), never_alone))
        await settle()
        second = [asyncio.create_task(run(statement("w", n), never_alone)) for n in "bc"]
        await settle()
        third = [asyncio.create_task(run(statement("w", n), never_alone)) for n in "de"]
        await settle()
        assert runner.batches == [["a"], ["b"]]  # "b" started the second batch at once
        runner.release(0)
        assert await first == {"name": "a"}
        await settle()
        assert runner.batches == [["a"], ["b"], ["c", "d", "e"]]
        runner.release(1)
        runner.release(2)
        assert [await task for task in [*second, *third]] == [{"name": n} for n in "bcde"]

    asyncio.run(scenario())


def test_a_batch_takes_its_statements_in_workspace_order_and_answers_each_caller() -> None:
    async def scenario() -> None:
        runner = HeldRunner()
        commits = group_commit(runner)
        blockers = [asyncio.create_task(commits.run(statement("w0", n), never_alone)) for n in "xy"]
        await settle()  # two batches running: the next statements wait together
        arrivals = [("w2", "p"), ("w1", "q"), ("w2", "r"), ("w1", "s"), ("w3", "t")]
        waiting = [
            asyncio.create_task(commits.run(statement(workspace, name), never_alone))
            for workspace, name in arrivals
        ]
        await settle()
        runner.release(0)
        await settle()
        assert runner.batches[2] == ["q", "s", "p", "r", "t"]  # by workspace, then arrival
        runner.release(1)
        runner.release(2)
        answers = await asyncio.gather(*blockers, *waiting)
        assert answers == [{"name": n} for n in "xypqrst"]

    asyncio.run(scenario())


def test_a_batch_whose_order_key_fails_answers_its_callers_with_the_error() -> None:
    async def scenario() -> None:
        runner = HeldRunner()
        commits = group_commit(runner)
        blockers = [asyncio.create_task(commits.run(statement("w0", n), never_alone)) for n in "xy"]
        await settle()  # two batches running: the next statements wait together
        keyless: Statement = (b"INSERT", {"name": "k"})
        waiting = [
            asyncio.create_task(commits.run(statement("w1", "p"), never_alone)),
            asyncio.create_task(commits.run(keyless, never_alone)),
        ]
        await settle()
        runner.release(0)  # its end takes the next batch: "p" and the keyless statement
        answers = await asyncio.wait_for(
            asyncio.gather(*waiting, return_exceptions=True), timeout=5
        )
        assert [type(answer) for answer in answers] == [KeyError, KeyError]
        assert runner.batches == [["x"], ["y"]]  # the failed batch never reached the database
        runner.release(1)
        assert await asyncio.gather(*blockers) == [{"name": n} for n in "xy"]

    asyncio.run(scenario())
