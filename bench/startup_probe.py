"""The scoring-worker probe of ``madqa bench startup``: a Space-like main module that starts one scoring process.

Run as ``python -m madqa.bench.startup_probe`` (a main module by name, as ``python -m madqa.space.app`` is). Like the
Space's app it imports gradio first (when installed), then starts a :class:`~madqa.space.scoring_pool.ScoringPool`
over ``--n`` synthetic test references, scores one results file and prints one JSON object: seconds from the pool's
start to the first score, and the worker's peak resident memory (``VmHWM``, read while it is alive).

With ``--imports`` the worker inherits ``PYTHONPROFILEIMPORTTIME=1`` (set after this process started, so only the
worker's imports are listed on stderr): what the worker imports, for the bench and
tests/project/test_startup_imports.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import sys
import time

if importlib.util.find_spec("gradio") is not None:  # the Space's main module imports it; its workers must not
    import gradio  # noqa: F401

from madqa.bench.measure import vm_hwm_mib
from madqa.bench.space import results_text, synthetic_references
from madqa.space.scoring_pool import PoolLimits, ScoringPool


def probe(n: int, imports: bool) -> dict[str, float]:
    """Start a one-worker pool over ``n`` references, score one file; the figures of :mod:`madqa.bench.startup`."""
    refs = synthetic_references(n)
    if imports:
        os.environ["PYTHONPROFILEIMPORTTIME"] = "1"  # read by the spawned interpreter only
    start = time.perf_counter()
    pool = ScoringPool(refs, n_resamples=100, limits=PoolLimits(workers=1, cpu_s=600))
    try:
        pool.evaluate(results_text(refs, 0))
        ready_s = time.perf_counter() - start
        workers = [p for p in multiprocessing.active_children() if p.name == "madqa-scoring"]
        peak = max((vm_hwm_mib(p.pid) or 0.0 for p in workers), default=0.0)
    finally:
        pool.close()
    return {"worker_first_score_s": ready_s, "worker_peak_rss_mib": peak, "worker_references": n}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m madqa.bench.startup_probe")
    parser.add_argument("--n", type=int, default=2250, help="synthetic test references the worker holds")
    parser.add_argument("--imports", action="store_true", help="list the worker's imports on stderr")
    args = parser.parse_args(argv)
    json.dump(probe(args.n, args.imports), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
