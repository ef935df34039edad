"""A pool of worker processes in which a task's crash, kill or hang costs only that task.

``concurrent.futures.ProcessPoolExecutor`` marks every pending future broken when one worker dies (an OOM kill,
a segfault in a PDF library) and cannot stop a task that hangs. Here each worker serves one task at a time over
its own pipe, so the parent always knows which task a dead worker held: it reports that task with the reason
(the signal, the exit status, the time limit), starts a fresh worker and goes on with the rest.

Workers are started with ``spawn`` (a clean interpreter: no locks inherited from the parent's threads), so the
task function and its arguments must be picklable, the function by its importable name.

Under memory pressure a worker, not the parent, is what goes: each worker raises its own
``/proc/self/oom_score_adj`` to :data:`WORKER_OOM_SCORE_ADJ` (allowed without privileges; the parent's is left as it
is), so the kernel's OOM killer picks a worker, whose task is then reported as killed while the run goes on. And a
worker never outlives the parent: it asks the kernel for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so a
killed run leaves no orphans busy with a file nobody waits for.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

#: What each worker writes to its ``/proc/self/oom_score_adj`` (the kernel's range is -1000..1000; 1000: the first
#: process the OOM killer picks, whatever its size).
WORKER_OOM_SCORE_ADJ = 1000
_PR_SET_PDEATHSIG = 1

_HINTS = {
    signal.SIGKILL: "out of memory?",
    signal.SIGSEGV: "a crash in the PDF or OCR library",
    signal.SIGBUS: "a crash in the PDF or OCR library",
    signal.SIGABRT: "the PDF or OCR library aborted",
}


@dataclass(frozen=True)
class Outcome:
    """The end of one task: ``value`` when it returned, ``failure`` (one line) when it raised, crashed or hung."""

    index: int
    value: Any = None
    failure: str | None = None


def exit_reason(exitcode: int | None) -> str:
    """A worker's end in words: ``worker killed by signal 9 (SIGKILL: out of memory?)``."""
    if exitcode is None:
        return "worker stopped answering"
    if exitcode < 0:
        number = -exitcode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown signal"
        hint = _HINTS.get(number)
        return f"worker killed by signal {number} ({name}{': ' + hint if hint else ''})"
    return f"worker exited with status {exitcode} in the middle of the task"


def make_expendable(parent_pid: int) -> None:
    """In a worker: be the OOM killer's first choice, and die with the parent (Linux; elsewhere nothing happens).

    Raising one's own ``oom_score_adj`` needs no privilege. ``PR_SET_PDEATHSIG`` sends SIGKILL when the parent
    ends; a parent that ended before it was set is caught by comparing ``os.getppid()`` with ``parent_pid``.
    """
    try:
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as fh:
            fh.write(str(WORKER_OOM_SCORE_ADJ))
    except OSError as exc:  # not Linux, or /proc read-only: the OOM killer chooses by size alone
        logger.debug("cannot set oom_score_adj: %s", exc)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError) as exc:  # no prctl (not Linux)
        logger.debug("cannot set PR_SET_PDEATHSIG: %s", exc)
    if os.getppid() != parent_pid:  # the parent died before the request was in place
        os._exit(1)


def _serve(conn: Any, fn: Callable[..., Any], initializer: Callable[[], None] | None, parent_pid: int) -> None:
    """Worker loop: receive a task, say it started, run it, send the result; ``None`` ends the loop."""
    make_expendable(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the parent's to handle; it stops the workers
    if initializer is not None:
        initializer()
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        conn.send(("started", None))
        try:
            message = ("ok", fn(*task))
        except Exception as exc:  # noqa: BLE001 - any error of one task is reported for that task only
            message = ("error", f"worker error: {type(exc).__name__}: {exc}")
        try:
            conn.send(message)
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable result
            conn.send(("error", f"worker error: the result could not be sent back ({type(exc).__name__}: {exc})"))


@dataclass
class _Worker:
    process: Any
    conn: Any
    index: int | None = None
    started: float | None = None

    def stop(self) -> None:
        """End the process: politely when idle, by SIGKILL when busy or deaf."""
        if self.index is None and self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


def _start(ctx: Any, fn: Callable[..., Any], initializer: Callable[[], None] | None) -> _Worker:
    parent, child = ctx.Pipe(duplex=True)
    process = ctx.Process(target=_serve, args=(child, fn, initializer, os.getpid()), daemon=True, name="madqa-extract")
    process.start()
    child.close()
    return _Worker(process, parent)


def _check(worker: _Worker, timeout_s: float | None) -> tuple[Outcome | None, bool]:
    """Collect what ``worker`` has to say about its task: (an outcome if the task ended, whether it lives on)."""
    broken = False
    try:
        while worker.conn.poll():
            kind, value = worker.conn.recv()
            if kind == "started":
                worker.started = time.monotonic()
                continue
            index, worker.index, worker.started = worker.index, None, None
            return Outcome(index, value=value) if kind == "ok" else Outcome(index, failure=value), True
    except (EOFError, OSError):
        broken = True  # the pipe closed: the process died, perhaps in the middle of a message
    if broken or not worker.process.is_alive():
        worker.process.join(timeout=5)
        code = worker.process.exitcode
        if code is None:  # closed its pipe yet lives on: not to be trusted with another task
            worker.process.kill()
            worker.process.join()
        return Outcome(worker.index, failure=exit_reason(code)), False  # type: ignore[arg-type]
    if timeout_s is not None and worker.started is not None and time.monotonic() - worker.started >= timeout_s:
        worker.process.kill()
        worker.process.join()
        return Outcome(worker.index, failure=f"timed out after {timeout_s:g} s"), False  # type: ignore[arg-type]
    return None, True


def run_isolated(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    *,
    workers: int,
    timeout_s: float | None = None,
    initializer: Callable[[], None] | None = None,
) -> Iterator[Outcome]:
    """Run ``fn(*task)`` for every task in ``workers`` processes; yield one :class:`Outcome` per task as it ends.

    A task whose worker dies (signal, exit) or runs longer than ``timeout_s`` (counted from when the worker
    picked it up) yields a failure naming the reason; its worker is replaced and the other tasks go on. Closing
    the iterator early (or an exception in the consumer) kills the workers.
    """
    ctx = multiprocessing.get_context("spawn")
    pending = deque(range(len(tasks)))
    pool: list[_Worker | None] = [None] * max(1, min(workers, len(tasks)))
    try:
        while True:
            for slot, worker in enumerate(pool):
                if not pending or (worker is not None and worker.index is not None):
                    continue
                worker = pool[slot] = worker or _start(ctx, fn, initializer)
                index = pending.popleft()
                try:
                    worker.conn.send(tasks[index])
                except Exception as exc:  # noqa: BLE001 - an unpicklable task, or a worker that died at start
                    worker.stop()
                    pool[slot] = None
                    yield Outcome(index, failure=f"could not be handed to a worker ({type(exc).__name__}: {exc})")
                    continue
                worker.index = index
            busy = [w for w in pool if w is not None and w.index is not None]
            if not busy:
                if pending:
                    continue
                return
            deadlines = [w.started + timeout_s for w in busy if w.started is not None and timeout_s is not None]
            wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            multiprocessing.connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy], wait_s)
            for slot, worker in enumerate(pool):
                if worker is None or worker.index is None:
                    continue
                outcome, alive = _check(worker, timeout_s)
                if not alive:
                    worker.index = None
                    worker.conn.close()
                    pool[slot] = None
                if outcome is not None:
                    yield outcome
    finally:
        for worker in pool:
            if worker is not None:
                worker.stop()
