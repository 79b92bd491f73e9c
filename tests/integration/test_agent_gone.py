"""A stopped agent gets no run (issue 27, finding 5; contract section 13): claims are
handed out only to a caller still connected.

A real ``strongroom agent`` long-polls a real ``strongroom serve``; it is stopped with
SIGTERM, and a run is triggered within the stopped agent's long-poll window. The server
must not claim it for the connection that is gone: the run stays queued, and the next
agent started claims it on its first attempt (not after a 60 s lease, as attempt 2).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from test_client_transfers import (
    Stack,
    machine_for,
    new_backup,
    new_worker,
    run_of,
    sqlite_stack,
    trigger,
    wait_for,
)

__all__ = ["sqlite_stack"]  # the fixture, found by its name

LONG_POLL = 30  # the stopped agent's wait_seconds: the run is triggered well within it
# How long the server has to (wrongly) claim the run for the gone agent: a wake-up is
# immediate (the claim asks whether its claimer is still there before it looks).
CLAIM_WINDOW = 2.5


def test_a_run_triggered_after_sigterm_goes_to_the_next_agent_on_attempt_1(
    sqlite_stack: Stack, tmp_path: Path
) -> None:
    stack = sqlite_stack
    machine = machine_for(stack, tmp_path)
    source = tmp_path / "source"
    source.mkdir()
    (source / "notes.txt").write_text("kept\n")
    worker_id, worker_token = new_worker(stack)
    backup_id = new_backup(stack, "local", worker_id)
    config = machine.agent_config(worker_token, backup_id, [source], wait_seconds=LONG_POLL)
    agent = machine.start("agent", "--config", str(config))
    assert agent.stderr is not None
    while "agent started" not in (line := agent.stderr.readline()):
        assert line, "the agent did not start"
    time.sleep(1.0)  # its long poll sent
    assert agent.poll() is None
    agent.send_signal(signal.SIGTERM)
    _, stderr = agent.communicate(timeout=30)
    assert agent.returncode == 0, stderr

    run_id = trigger(stack, backup_id)
    time.sleep(CLAIM_WINDOW)
    assert run_of(stack, run_id)["state"] == "queued"

    again = machine.run("agent", "--config", str(config), "--once")
    assert again.returncode == 0, again.stderr
    wait_for(lambda: run_of(stack, run_id)["state"] == "succeeded", 30, "the run")
    run = run_of(stack, run_id)
    assert (run["attempt"], run["worker_id"]) == (1, worker_id), again.stderr
