"""The extraction pool replaces a dead worker, every time (loading_script/pdf_pool.py; issue 29).

Documented: a task whose worker dies yields a failure naming the reason; "its worker is replaced and the other
tasks go on". Here workers are killed twice in one run (SIGKILL, as the OOM killer does, and an exit status), with
one worker (so each replacement is needed for the run to go on) and with two.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from madqa.loading_script.pdf_pool import Outcome, run_isolated


def task(kind: str, n: int) -> tuple[int, int]:
    """Test task (imported by name in the pool's processes): ``die`` kills its own worker, ``exit`` exits it."""
    if kind == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "exit":
        os._exit(3)
    return n * 10, os.getpid()


TASKS = [("ok", 0), ("die", 1), ("ok", 2), ("ok", 3), ("exit", 4), ("ok", 5), ("die", 6), ("ok", 7)]


@pytest.mark.parametrize("workers", [1, 2])
def test_workers_killed_more_than_once_are_replaced_and_every_other_task_runs(workers: int) -> None:
    outcomes: dict[int, Outcome] = {}

    def run() -> None:  # in a thread: a pool that lost its workers would wait forever
        for outcome in run_isolated(task, TASKS, workers=workers, timeout_s=60):
            outcomes[outcome.index] = outcome

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    seen, last = 0, time.monotonic()
    while runner.is_alive() and time.monotonic() - last < 20:  # each task takes well under a second
        runner.join(0.2)
        if len(outcomes) != seen:
            seen, last = len(outcomes), time.monotonic()
    assert not runner.is_alive(), f"the pool stopped making progress after {sorted(outcomes)}"
    assert sorted(outcomes) == list(range(len(TASKS)))
    for index, (kind, n) in enumerate(TASKS):
        outcome = outcomes[index]
        if kind == "ok":
            assert outcome.failure is None and outcome.value[0] == n * 10, (index, outcome)
        elif kind == "die":
            assert outcome.failure is not None and "SIGKILL" in outcome.failure, (index, outcome)
        else:
            assert outcome.failure == "worker exited with status 3 in the middle of the task", (index, outcome)
    pids = {outcomes[i].value[1] for i, (kind, _) in enumerate(TASKS) if kind == "ok"}
    if workers == 1:  # one process before the first death and one after each of the three
        assert len(pids) == 4, pids
    assert all(pid != os.getpid() for pid in pids)
