"""A scoring pool whose worker holds a file until its server is gone, for killing the server mid-file for real.

:func:`drive` runs in a subprocess (the "server"): it starts a one-process :class:`ScoringPool` whose worker runs the
real ``_worker_main`` with one change, a gate in front of ``evaluate_results``: on the first real file (not the
warm-up) the worker writes its pid to ``$MADQA_TEST_GATE_DIR/scoring.pid`` and waits until its parent has died
(its parent pid changes). A test kills the server with SIGKILL once that file exists, so the worker is mid-file
when the server dies and then finishes scoring and sends its reply into a dead pipe, by construction rather than
by timing luck.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from madqa.space import scoring_pool

#: The worker's entry point as shipped (the driver swaps the module attribute, never the function).
REAL_WORKER_MAIN = scoring_pool._worker_main
#: Longest wait for the server's death; the test kills it as soon as the pid file appears.
GATE_LIMIT_S = 600.0


def gated_worker_main(*args: Any) -> None:  # pragma: no cover - runs in the spawned worker
    """The shipped worker, with ``evaluate_results`` held at the gate until the parent is gone."""
    from madqa.space import scoring

    real = scoring.evaluate_results
    folder = Path(os.environ["MADQA_TEST_GATE_DIR"])

    def gated(text: str, *rest: Any, **kwargs: Any) -> Any:
        if '"warm-up"' not in text:
            parent = os.getppid()
            (folder / "scoring.pid.tmp").write_text(str(os.getpid()), encoding="utf-8")
            (folder / "scoring.pid.tmp").replace(folder / "scoring.pid")
            deadline = time.monotonic() + GATE_LIMIT_S
            while os.getppid() == parent and time.monotonic() < deadline:
                time.sleep(0.05)
        return real(text, *rest, **kwargs)

    scoring.evaluate_results = gated
    REAL_WORKER_MAIN(*args)


def drive() -> None:  # pragma: no cover - runs in the "server" subprocess
    """Start the pool and score one file (it never returns: the test kills this process first)."""
    from madqa.bench.space import results_text, synthetic_references

    refs = synthetic_references(20)
    scoring_pool._worker_main = gated_worker_main  # type: ignore[assignment]
    pool = scoring_pool.ScoringPool(refs, n_resamples=10, limits=scoring_pool.PoolLimits(workers=1, cpu_s=120))
    pool.evaluate(results_text(refs, 1))


def drive_exit(outcome: dict[str, Any]) -> None:  # pragma: no cover - runs in the "server" subprocess
    """Start scoring one file in a thread, then let the interpreter exit while the worker holds it at the gate.

    The exit is an ordinary one (the end of the main thread, as after Ctrl+C): atexit closes the pool, then
    multiprocessing ends the daemonic worker. ``outcome["thread"]`` is the scoring thread and ``outcome["error"]``
    what :meth:`ScoringPool.evaluate` raised (the caller reports them from an atexit handler of its own that runs
    after both).
    """
    import threading

    from madqa.bench.space import results_text, synthetic_references

    refs = synthetic_references(20)
    scoring_pool._worker_main = gated_worker_main  # type: ignore[assignment]
    pool = scoring_pool.ScoringPool(refs, n_resamples=10, limits=scoring_pool.PoolLimits(workers=1, cpu_s=120))

    def score() -> None:
        try:
            pool.evaluate(results_text(refs, 1))
            outcome["error"] = None
        except Exception as exc:  # noqa: BLE001 - reported, whatever it is
            outcome["error"] = f"{type(exc).__name__}: {exc}"

    outcome["thread"] = threading.Thread(target=score, daemon=True)
    outcome["thread"].start()
    pid_file = Path(os.environ["MADQA_TEST_GATE_DIR"]) / "scoring.pid"
    deadline = time.monotonic() + GATE_LIMIT_S
    while not pid_file.is_file() and time.monotonic() < deadline:
        time.sleep(0.05)
    if os.environ.get("MADQA_TEST_PAUSE"):  # as while a public answer is at work (.quiet): the worker is SIGSTOPped
        pool.pause()
        stat = Path(f"/proc/{pid_file.read_text()}/stat")
        while stat.read_text().rsplit(")", 1)[1].split()[0] != "T" and time.monotonic() < deadline:
            time.sleep(0.01)  # stopped for real before the exit begins (else the exit's SIGTERM may come first)
