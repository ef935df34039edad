"""Repeated runs (``madqa run --repeats K``): every question answered K times into one results file.

Repeat ``r`` (0..K-1) is an ordinary run (:func:`madqa.agents.harness.runner.run_benchmark`) with the model seed
``base_seed + r`` (the ``seed`` model option; ``base_seed`` is the one given with ``--model-option seed=S``, else
0); each of its lines records ``repeat`` and ``seed`` at the top level (and the seed in ``config["model_options"]``),
so a line's identity is ``(id, repeat)``. The repeats run one after the other, the agent prepared afresh for each
(the seed is a model setting). Resuming (``--resume``) runs only the ``(id, repeat)`` pairs the file lacks: each
repeat compares and skips its own lines only, and a file of repeated runs is never mixed with an ordinary run's
lines (:func:`madqa.agents.harness.runner.prepare_output`). ``madqa evaluate`` reads such a file as K runs
(:mod:`madqa.metric.repeats`: spread, pass@k, pass^k, consistency).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from madqa.agents.harness.config import Repeat, RunConfig, RunError
from madqa.agents.harness.runner import Progress, RunSummary, run_benchmark

__all__ = ["base_seed", "run_repeats"]

logger = logging.getLogger(__name__)


def base_seed(model_options: Mapping[str, Any] | None) -> int:
    """The first repeat's seed: the ``seed`` model option when given, else 0.

    >>> base_seed({"seed": 7}), base_seed(None)
    (7, 0)
    """
    seed = (model_options or {}).get("seed")
    if seed is None:
        return 0
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise RunError(f"--repeats needs an integer seed, got seed={seed!r}")
    return seed


class _AllRepeats:
    """One progress for all the repeats: started once (K times the questions), later repeats' resumed lines counted
    as updates, so the bar and its running accuracy cover every ``(id, repeat)``."""

    def __init__(self, inner: Progress, repeats: int) -> None:
        self.inner, self.repeats, self.started = inner, repeats, False

    def start(self, total: int, finished: Sequence[Mapping[str, Any]]) -> None:
        if not self.started:
            self.started = True
            self.inner.start(total * self.repeats, finished)
            return
        for record in finished:
            self.inner.update(record)

    def update(self, record: Mapping[str, Any]) -> None:
        self.inner.update(record)


def run_repeats(
    config: RunConfig,
    output: str | os.PathLike[str],
    *,
    repeats: int,
    resume: bool = False,
    overwrite: bool = False,
    progress: Progress | None = None,
    model_options: Mapping[str, Any] | None = None,
    **run_options: Any,
) -> RunSummary:
    """Run ``config`` ``repeats`` times into ``output`` (module docstring); the other keyword arguments are
    :func:`~madqa.agents.harness.runner.run_benchmark`'s (``stop`` ends the repeats early too).

    The summary adds up the repeats'; its ``error_ids`` and ``retryable_ids`` read ``ID (repeat R)``.

    Raises:
        RunError: ``repeats`` below 1, a non-integer seed, or as :func:`run_benchmark`.
    """
    if repeats < 1:
        raise RunError(f"--repeats must be at least 1, got {repeats}")
    first = base_seed(model_options)
    total = RunSummary(Path(output))
    shared = None if progress is None else _AllRepeats(progress, repeats)
    stop = run_options.get("stop")
    for index in range(repeats):
        repeat = Repeat(index, first + index)
        summary = run_benchmark(
            config,
            output,
            resume=resume or index > 0,  # later repeats add to the file the first one started
            overwrite=overwrite and index == 0,
            progress=shared,
            model_options=model_options,
            repeat=repeat,
            **run_options,
        )
        total.selected += summary.selected
        total.skipped += summary.skipped
        total.written += summary.written
        total.errors += summary.errors
        total.error_ids += [f"{rid} (repeat {index})" for rid in summary.error_ids]
        total.retryable_ids += [f"{rid} (repeat {index})" for rid in summary.retryable_ids]
        total.abandoned += summary.abandoned
        if stop is not None and stop.is_set():
            total.interrupted = True
            break
    return total
