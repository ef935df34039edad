"""The submit answer's timing, closed as a channel: answers on a time grid, the private part scored in idle time.

Two timing channels were measured on the Space (issue 39): the time to the answer grew with the public part's gold
answer lengths (0.7–1.0 s for the shortest gold, 1.7–2.5 s for the longest), and after a file with long private
answers the next answer was slower (6 of 6 pairs): the private part's scoring shared the CPU with it. Both are closed
here rather than measured:

* :class:`AnswerGrid`: the submit handler's answer is released only at a point of a doubling grid counted from the
  request's start (``first_s``, ``2 first_s``, ``4 first_s`` …). An answer that took less than ``first_s`` (the
  default, 4 s, covers the slowest measured answer above with room) is released at ``first_s`` whatever it cost, so
  its time says nothing about the labels. A file crafted to cost more lands on a later grid point: its time says
  which of at most :func:`grid_cells` cells the cost fell in, ``log2`` of that in bits per accepted file at most
  (:func:`timing_bits_bound`, printed beside the shown numbers' bound). Every answer of a request that reached the
  scoring (``scorer.evaluate_text``) is held so, refusals after it (a CPU budget, an internal error) included; a
  refusal before it touched no gold answer (:mod:`.scoring` refuses before any gold work) and leaves at once.
* :class:`PublicActivity`: counts the submit handlers at work. The private part's scorer starts a file only when
  none is (:meth:`PublicActivity.wait_idle`), and its walled scoring process is stopped (``SIGSTOP``) from the
  moment a submit handler starts until none is at work, then continued (``SIGCONT``); it also runs at the lowest
  CPU priority (``nice`` 19). So no answer ever shares the CPU with private scoring.

:func:`quiet_answers` wires both around the Space's submit handler (one call in :mod:`.app`).
"""

from __future__ import annotations

import atexit
import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger(__name__)

#: The first point of the answer grid, in seconds (``MADQA_SPACE_ANSWER_GRID_S``; 0 releases at once).
DEFAULT_GRID_S = 4.0
#: The longest a submit answer can take: the scoring pool's queue wait plus its wall-clock backstop (both in
#: :class:`~.scoring_pool.PoolLimits`), and the time around them; the grid's last cell ends past it.
LONGEST_ANSWER_S = 120.0 + 300.0 + 60.0


def release_at(elapsed: float, first_s: float) -> float:
    """The grid point (seconds after the start) at which an answer ready after ``elapsed`` seconds is released.

    >>> release_at(0.3, 4.0), release_at(4.0, 4.0), release_at(4.01, 4.0), release_at(30.0, 4.0)
    (4.0, 4.0, 8.0, 32.0)
    """
    if first_s <= 0:
        return max(elapsed, 0.0)
    if elapsed <= first_s:
        return first_s
    return first_s * 2.0 ** math.ceil(math.log2(elapsed / first_s))


def grid_cells(first_s: float, longest_s: float = LONGEST_ANSWER_S) -> int:
    """How many grid points an answer can be released at (1 + the doublings up to ``longest_s``).

    >>> grid_cells(4.0), grid_cells(4.0, 3.0)
    (8, 1)
    """
    if first_s <= 0:
        raise ValueError("no grid: the answer time is not bounded")
    return 1 + max(0, math.ceil(math.log2(max(longest_s, first_s) / first_s)))


def timing_bits_bound(first_s: float, longest_s: float = LONGEST_ANSWER_S) -> float:
    """Most bits the answer's release time can say about the labels, per accepted file (``inf`` without a grid).

    >>> timing_bits_bound(4.0)
    3.0
    """
    return math.inf if first_s <= 0 else math.log2(grid_cells(first_s, longest_s))


class AnswerGrid:
    """Holds an answer until its grid point; ``clock`` and ``sleep`` are injectable (tests)."""

    def __init__(
        self,
        first_s: float = DEFAULT_GRID_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.first_s, self.clock, self.sleep = first_s, clock, sleep

    def hold(self, started: float) -> float:
        """Sleep until the grid point of an answer whose request started at ``started``; returns that point."""
        target = started + release_at(self.clock() - started, self.first_s)
        while (left := target - self.clock()) > 0:  # a sleep may return early (signals): re-check the clock
            self.sleep(left)
        return target


class PublicActivity:
    """How many submit handlers are at work; listeners hear the first start and the last end."""

    def __init__(self) -> None:
        self._busy = 0
        self._cond = threading.Condition()
        self._listeners: list[tuple[Callable[[], Any], Callable[[], Any]]] = []

    def listen(self, on_busy: Callable[[], Any], on_idle: Callable[[], Any]) -> None:
        """Call ``on_busy`` when a handler starts while none was at work, ``on_idle`` when the last one ends."""
        with self._cond:
            self._listeners.append((on_busy, on_idle))
            if self._busy:
                on_busy()

    @property
    def busy(self) -> bool:
        with self._cond:
            return self._busy > 0

    @contextmanager
    def active(self) -> Iterator[None]:
        """One submit handler at work."""
        with self._cond:
            self._busy += 1
            if self._busy == 1:
                self._notify(0)
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                if self._busy == 0:
                    self._notify(1)
                    self._cond.notify_all()

    def _notify(self, which: int) -> None:
        for pair in self._listeners:
            try:
                pair[which]()
            except Exception:  # noqa: BLE001 - a listener's failure must not fail a submission
                logger.exception("public-activity listener failed")

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no submit handler is at work; ``False`` on time-out."""
        with self._cond:
            return self._cond.wait_for(lambda: self._busy == 0, timeout)


def quiet_answers(
    handler: Callable[..., Any], scorer: Any, first_s: float = DEFAULT_GRID_S, *, grid: AnswerGrid | None = None
) -> Callable[..., Any]:
    """``handler`` (the Space's submit handler) with its answer on the grid and the private part kept off the CPU
    while it works (see the module docstring). The signature (and so gradio's ``gr.Request`` injection) is kept."""
    grid = grid or AnswerGrid(first_s)
    activity = getattr(scorer.private, "activity", None) if scorer.private is not None else None
    if activity is None:
        activity = PublicActivity()
    if scorer.private is not None:
        scorer.private.activity = activity
    pool = getattr(scorer, "private_pool", None)
    if pool is not None:
        pool.lower_priority()
        activity.listen(pool.pause, pool.resume)
        # a process stopped at exit would ignore multiprocessing's SIGTERM and hang its join: continue it first
        # (registered after multiprocessing's own exit handler, so it runs before it)
        atexit.register(pool.resume)

    touched = threading.local()  # whether this request's thread reached the scoring (gold work)
    evaluate = scorer.evaluate_text

    def evaluate_text(text: str) -> Any:
        touched.gold = True
        return evaluate(text)

    scorer.evaluate_text = evaluate_text

    @functools.wraps(handler)
    def answered(*args: Any, **kwargs: Any) -> Any:
        started, touched.gold = grid.clock(), False
        try:
            with activity.active():
                return handler(*args, **kwargs)
        finally:  # also for a refusal or an internal error after the scoring began
            if touched.gold:
                grid.hold(started)

    answered.activity = activity  # type: ignore[attr-defined]
    return answered
