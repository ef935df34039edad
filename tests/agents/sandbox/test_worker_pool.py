"""The walled workers of a run's slots (agents/sandbox/pool.py): one per slot, each with the step's wall-clock
limit, left running after a clean start, all closed when the block fails."""

from __future__ import annotations

import pytest

from madqa.agents.harness.protocol import Host
from madqa.agents.sandbox.pool import worker_pool


def test_a_failure_inside_the_pool_closes_every_started_worker() -> None:
    with pytest.raises(ValueError, match="model failed to load"):
        with worker_pool(7.0, 2, Host()) as workers:
            for worker in workers:
                worker.start()
            assert [w.alive for w in workers] == [True, True]
            raise ValueError("model failed to load")
    assert len(workers) == 2 and not any(w.alive for w in workers)


def test_a_clean_pool_keeps_its_workers_and_has_at_least_one() -> None:
    with worker_pool(7.0, 0, Host()) as workers:
        workers[0].start()
    try:
        assert len(workers) == 1 and workers[0].limits.wall_s == 7.0 and workers[0].alive
    finally:
        workers[0].close()
