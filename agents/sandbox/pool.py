"""Walled workers for a run's slots (the repl and shell agents): started together, closed together on a failure.

With ``host.require_isolation`` the workers start at once, so that a host without the kernel walls refuses
(:class:`~madqa.agents.harness.protocol.AgentUnavailableError`) before any model is loaded; otherwise each starts
with its first command.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from madqa.agents.harness.protocol import AgentUnavailableError, Host
from madqa.agents.sandbox.worker import IsolationUnavailableError, ReplWorker, WorkerLimits

__all__ = ["WorkerSlots", "worker_pool"]


@contextmanager
def worker_pool(wall_s: float, slots: int, host: Host) -> Iterator[list[ReplWorker]]:
    """One worker per slot (at least one), each command limited to ``wall_s`` seconds; a failure inside the block
    closes them all.

    Raises:
        AgentUnavailableError: ``host.require_isolation`` and the workers' kernel walls are incomplete.
    """
    limits = WorkerLimits(wall_s=wall_s)
    workers = [
        ReplWorker(limits, require_isolation=host.require_isolation, protected_paths=host.protected_paths)
        for _ in range(max(1, slots))
    ]
    try:
        if host.require_isolation:
            for worker in workers:
                worker.start()
        yield workers
    except IsolationUnavailableError as exc:
        for worker in workers:
            worker.close()
        raise AgentUnavailableError(str(exc)) from exc
    except BaseException:
        for worker in workers:
            worker.close()
        raise


class _WorkerSlot(Protocol):
    worker: ReplWorker


class WorkerSlots:
    """The slot hooks of a prepared agent whose slots each hold a ``worker`` (a mixin of ``SmolagentsPrepared``)."""

    host: Host

    def release(self, slot: _WorkerSlot) -> None:
        """With ``host.sandbox_per_question``, stop the worker: the next question starts a fresh one."""
        if self.host.sandbox_per_question:
            slot.worker.close()

    def close_slot(self, slot: _WorkerSlot) -> None:
        """Stop the slot's worker."""
        slot.worker.close()
