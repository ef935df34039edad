"""Scoring off the request threads: a few long-lived processes, a CPU-time budget per submission, a bounded queue.

Why: scoring in a request thread holds the GIL, so one costly upload slows every board view, and nothing stops a
file that is legal but expensive. Here each submission is scored by one of ``workers`` spawned processes (they hold
the test references, loaded once), under ``RLIMIT_CPU`` re-armed per submission and an address-space limit. A
submission that exhausts its budget kills only its process (replaced at once) and is rejected with a clear message;
nothing is stored. At most ``workers`` submissions are scored at a time; the others wait up to ``queue_timeout_s``
for a free process and are then told the Space is busy (their quota untouched, nothing stored).

Judge mode is not sent here (the judge model and its cache live in the server process); the parser's caps bound
its cost.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing as mp
import multiprocessing.util  # noqa: F401 - its exit handler is registered before ours, so ours runs first
import os
import queue
import signal
import sys
import threading
import time
import types
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .identity import SubmissionError
from .scoring import Evaluation

logger = logging.getLogger(__name__)

#: Shown when a submission's scoring ran out of CPU time or memory (nothing label-derived in it).
BUDGET_MESSAGE = (
    "scoring this file used more than the Space's budget of {cpu_s} CPU seconds or {mem_mb} MB; "
    "nothing was stored. Shorten the answers or contact the maintainers."
)
BUSY_MESSAGE = (
    "the Space is busy scoring other submissions; nothing was stored and your quota is untouched. Retry soon."
)


#: Shown when the Space stops (Ctrl+C, a restart) while a file is scored: nothing was decided about it.
STOPPING_MESSAGE = "the Space is stopping; nothing was stored and your quota is untouched. Retry in a minute."

BASE_CPU_S = 30
CPU_S_PER_ITEM = 0.25


class PoolClosed(SubmissionError):
    """The pool closed while the file was scored (the server is stopping): not a verdict on the file.

    Why its own class: a process lost to the shutdown is not one lost to a budget, and the private part's scorer
    must leave such a file queued for the next start rather than record it as failed.
    """


#: Every open pool, closed at interpreter exit before multiprocessing ends their (daemonic) processes.
_OPEN: weakref.WeakSet[ScoringPool] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    # atexit runs handlers last-registered first: this one runs before multiprocessing.util's, which terminates
    # daemonic children, so a file still being scored then is seen as cut short by the shutdown, not as a crash.
    for pool in list(_OPEN):
        pool.close()


@dataclass(frozen=True)
class PoolLimits:
    """Limits of the scoring processes.

    Attributes:
        workers: scoring processes, i.e. submissions scored at the same time.
        cpu_s: CPU seconds one submission may use (``RLIMIT_CPU``, re-armed per submission); 0 = automatic:
            :data:`BASE_CPU_S` plus :data:`CPU_S_PER_ITEM` per test item, twice the cost of the costliest legal
            line (answers at the parser's caps: ~130 ms of ANLS* CPU per line here, `madqa bench metric`).
        memory_mb: address-space limit of a scoring process (``RLIMIT_AS``).
        queue_timeout_s: how long a submission waits for a free process before it is turned away.
        wall_s: wall-clock backstop per submission (the process is killed past it).
    """

    workers: int = 1
    cpu_s: int = 0
    memory_mb: int = 3072
    queue_timeout_s: float = 120.0
    wall_s: float = 300.0


def _set_cpu_budget(resource: Any, cpu_s: int) -> None:
    used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    soft = int(used) + cpu_s + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY and soft > hard:
        soft = hard
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _worker_main(
    conn: Any,
    references: Sequence[Any],
    other_split_ids: Mapping[str, str],
    n_resamples: int,
    limits: PoolLimits,
    scored_ids: frozenset[str] | None,
) -> None:  # pragma: no cover - subprocess
    """Score texts received on ``conn`` until it closes.

    Each reply is ``("ok", Evaluation)``, ``("error", message)``, ``("budget",)`` or ``("internal", detail)``.
    """
    import resource

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the parent's to handle (see _Worker)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"  # one scoring process = one core; BLAS threads would also inflate RLIMIT_AS
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    from madqa.metric.report import ReportOptions

    from .scoring import evaluate_results

    test_ids = {r.id for r in references}
    if references:  # warm-up: every lazy import happens before the address-space limit
        import json

        warm = json.dumps({"id": references[0].id, "answer": ["warm-up"], "citations": [], "steps": 1})
        try:
            evaluate_results(warm, references, test_ids, other_split_ids, options=ReportOptions(n_resamples=1))
        except SubmissionError:
            pass
    options = ReportOptions(n_resamples=n_resamples)
    mem = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    while True:
        try:
            text = conn.recv()
        except (EOFError, OSError):  # the server closed the pipe, or died (kill -9) mid-send: nothing left to do
            return
        _set_cpu_budget(resource, limits.cpu_s)
        try:
            reply: tuple[Any, ...] = (
                "ok",
                evaluate_results(text, references, test_ids, other_split_ids, options=options, scored_ids=scored_ids),
            )
        except SubmissionError as exc:
            reply = ("error", str(exc))
        except MemoryError:
            reply = ("budget",)
        except Exception as exc:  # noqa: BLE001 - a bug, not the user's mistake: the parent logs it, shows no detail
            reply = ("internal", f"{type(exc).__name__}: {exc}")
        del text
        try:
            conn.send(reply)
        except OSError as exc:  # BrokenPipeError, ConnectionResetError: the server died (kill -9) while we scored
            # An expected event, not a bug: one line in the server's log, never a traceback (the submission was
            # never acknowledged, so nothing is lost).
            logger.warning(
                "scoring process %d: the server went away before the result was sent (%s); exiting",
                os.getpid(),
                type(exc).__name__,
            )
            return


#: One worker starts at a time: :func:`_start_without_main_module` swaps a process-wide entry.
_START_LOCK = threading.Lock()


def _start_without_main_module(proc: Any) -> None:
    """Start a spawned process that does not run the parent's ``__main__`` again.

    Why: multiprocessing's spawn imports the parent's main module in the child (by name for ``python -m
    madqa.space.app``, by path for a hosted Space's ``app.py``), so every scoring process imported gradio and the
    whole app: 265 MiB and seconds per worker instead of the metric's ~100 MiB (issue 47). The worker's target and
    arguments live in this module and the metric, so the child needs nothing from ``__main__``: while it starts, a
    bare stand-in without ``__spec__`` or ``__file__`` takes the main module's place, and spawn then records none.
    """
    with _START_LOCK:
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            proc.start()
        finally:
            sys.modules["__main__"] = main


class _Worker:
    """One scoring process and the parent's end of its pipe."""

    def __init__(self, ctx: Any, args: tuple[Any, ...]) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, *args), daemon=True, name="madqa-scoring")
        # Ctrl+C reaches the whole process group; the worker must not die of it mid-import with a traceback (the
        # parent closes it). An *ignored* SIGINT survives fork and exec, and Python installs its KeyboardInterrupt
        # handler only over the default one, so a worker spawned while the parent ignores SIGINT ignores it from its
        # first instruction. (A blocked mask does not help: the spawned interpreter starts with none blocked.) Only
        # the main thread may change a handler: a replacement started from a request thread is covered once its
        # _worker_main runs, which leaves the second or so of its imports.
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                _start_without_main_module(self.proc)
            finally:
                signal.signal(signal.SIGINT, previous)
        else:
            _start_without_main_module(self.proc)
        child.close()

    def stop(self) -> None:
        try:
            self.conn.close()
        finally:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(timeout=5)


def _signal(worker: _Worker, name: str) -> None:
    """Send signal ``name`` to a worker that may have died meanwhile (then there is nothing to stop)."""
    try:
        os.kill(worker.proc.pid, getattr(signal, name))
    except (ProcessLookupError, TypeError, AttributeError):  # gone, never started, or no such signal here
        pass


def _renice(worker: _Worker, nice: int) -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, worker.proc.pid, nice)
    except (OSError, TypeError, AttributeError):  # gone, or a platform without priorities: best effort
        pass


class ScoringPool:
    """``workers`` scoring processes for one set of test references; thread-safe.

    Args:
        references: the labelled test items (sent once to each process).
        other_split_ids: public ids of other splits, for better rejection messages.
        n_resamples: Kuiper bootstrap resamples.
        limits: the processes' limits.
        scored_ids: the part of the labels these processes score (``None``: all; see ``evaluate_results``).
    """

    def __init__(
        self,
        references: Sequence[Any],
        other_split_ids: Mapping[str, str] | None = None,
        *,
        n_resamples: int = 1000,
        limits: PoolLimits | None = None,
        scored_ids: frozenset[str] | None = None,
    ) -> None:
        limits = limits or PoolLimits()
        if limits.cpu_s <= 0:
            limits = replace(limits, cpu_s=int(BASE_CPU_S + CPU_S_PER_ITEM * len(references)))
        self.limits = limits
        self._args = (list(references), dict(other_split_ids or {}), n_resamples, self.limits, scored_ids)
        self._ctx = mp.get_context("spawn")  # never fork the threaded server
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        self.killed = 0  #: processes lost to a budget or a crash (and replaced)
        self._running: set[_Worker] = set()  # workers scoring a text now
        self._paused = False  # running workers are stopped (SIGSTOP) while a public answer is at work (.quiet)
        self._nice = 0  # niceness of every worker, replacements included (lower_priority)
        self._workers: set[_Worker] = set()
        for _ in range(max(1, self.limits.workers)):
            self._idle.put(self._spawn())
        _OPEN.add(self)

    def _spawn(self) -> _Worker:
        worker = _Worker(self._ctx, self._args)
        with self._lock:
            self._workers = {w for w in self._workers if w.proc.is_alive()} | {worker}
            if self._nice:
                _renice(worker, self._nice)
        return worker

    def lower_priority(self, nice: int = 19) -> None:
        """Run every worker (and every replacement) at niceness ``nice``: the private part's pool (:mod:`.quiet`)."""
        with self._lock:
            self._nice = nice
            for w in self._workers:
                _renice(w, nice)

    def pause(self) -> None:
        """Stop (``SIGSTOP``) the workers scoring now, and any that starts, until :meth:`resume` (:mod:`.quiet`):
        the private part's scoring never shares the CPU with a public answer. Paused time is not counted against
        the wall-clock backstop; the CPU budget counts CPU time only."""
        with self._lock:
            self._paused = True
            for w in self._running:
                _signal(w, "SIGSTOP")

    def resume(self) -> None:
        """Continue what :meth:`pause` stopped."""
        with self._lock:
            self._paused = False
            for w in self._running:
                _signal(w, "SIGCONT")

    def _wait_reply(self, worker: _Worker) -> bool:
        """Whether ``worker`` replied within the wall-clock backstop, time spent paused not counted."""
        left = self.limits.wall_s
        while left > 0:
            t0 = time.monotonic()
            if worker.conn.poll(min(left, 1.0)):
                return True
            if not self._paused:
                left -= time.monotonic() - t0
        return False

    def evaluate(self, text: str) -> Evaluation:
        """Score ``text`` in a free process (see :func:`~.submission.evaluate_results`).

        Raises:
            SubmissionError: the file is invalid, the queue is full, or the budget ran out.
            PoolClosed: the pool was closed (the server is stopping) before or while the file was scored.
        """
        if self._closed:
            raise PoolClosed(STOPPING_MESSAGE)
        try:
            worker = self._idle.get(timeout=self.limits.queue_timeout_s)
        except queue.Empty:
            raise SubmissionError(BUSY_MESSAGE) from None
        healthy = closing = False
        with self._lock:
            self._running.add(worker)
            if self._paused:
                _signal(worker, "SIGSTOP")
        try:
            worker.conn.send(text)
            if not self._wait_reply(worker):
                raise EOFError("wall-clock backstop")
            reply = worker.conn.recv()
            healthy = True
        except (EOFError, OSError, BrokenPipeError) as exc:
            closing = self._closed  # ended by the shutdown, not by the file: no warning, no replacement, no verdict
            if not closing:
                logger.warning("scoring process lost (%s); replacing it", exc)
            reply = ("budget",)
        finally:
            with self._lock:
                self._running.discard(worker)
                if self._paused:  # stopped after its reply: an idle worker waits on its pipe, using no CPU
                    _signal(worker, "SIGCONT")
            if not healthy:
                worker.stop()
                if not closing:
                    with self._lock:
                        self.killed += 1
                    worker = self._spawn()
            if self._closed:  # close() has emptied the idle queue already: nothing may wait there
                worker.stop()
            else:
                self._idle.put(worker)
        if closing:
            raise PoolClosed(STOPPING_MESSAGE)
        if reply[0] == "ok":
            return reply[1]  # type: ignore[no-any-return]
        if reply[0] == "error":
            raise SubmissionError(reply[1])
        if reply[0] == "internal":
            raise RuntimeError(f"scoring process failed: {reply[1]}")
        raise SubmissionError(BUDGET_MESSAGE.format(cpu_s=self.limits.cpu_s, mem_mb=self.limits.memory_mb))

    def close(self) -> None:
        """Stop every process (idle ones now; busy ones are not waited for)."""
        self._closed = True
        self.resume()  # a worker stopped by pause() holds any SIGTERM, and multiprocessing's exit joins it: forever
        while True:
            try:
                self._idle.get_nowait().stop()
            except queue.Empty:
                return
