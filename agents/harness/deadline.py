"""When to stop: a question's wall-clock budget (``--question-timeout``), and a run's stop request (Ctrl+C).

**The question's budget.** :class:`madqa.agents.harness.smolagents_loop.SmolagentsPrepared` makes a :class:`Deadline`
per question
and makes it the current thread's around each step (:func:`active`; a streamed question may be resumed on another
thread between steps, as the Space does), then calls :meth:`Deadline.check` after the step. Code that runs inside a
step reads the current thread's budget with the module functions::

    from madqa.agents.harness.deadline import check, remaining

    timeout = min(per_call_timeout, remaining() or per_call_timeout)  # a model call never outlives the question
    check()  # raises QuestionTimeoutError once the budget is spent

:func:`remaining` is ``None`` when no budget is set (the default, and any thread the runner did not set one on:
threads started inside a step do not inherit it). Code that starts threads inside a step hands its budget on::

    budget = current()  # in the step's thread, then in each thread it starts:
    with active(budget):
        ...  # model calls here see the question's remaining() (the executor's llm_query_batched does this)

**The question's model calls.** Each :class:`Deadline` carries a :class:`CallTally`: every HTTP attempt of a model
call made under it (retries included; the SDKs' own retries are off, so none is hidden) and every second waited
before a retry (:mod:`madqa.agents.models.retry_policy` counts them, :func:`tally` finds the current one). The
results line records it as ``calls``.

**The run's stop request.** :class:`StopRequest` is set by the first Ctrl+C of ``madqa run``: the backends start no
new question, and wait at most :attr:`StopRequest.wait_s` for those in flight (:meth:`StopRequest.waiting`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from madqa.agents.harness.errors import QuestionTimeoutError

__all__ = [
    "DEFAULT_INTERRUPT_WAIT",
    "CallTally",
    "Deadline",
    "QuestionTimeoutError",
    "StopRequest",
    "active",
    "check",
    "current",
    "question_deadline",
    "remaining",
    "tally",
]

logger = logging.getLogger(__name__)

#: Seconds the first Ctrl+C waits for the questions in flight (``--interrupt-wait``).
DEFAULT_INTERRUPT_WAIT = 30.0

_current = threading.local()


class CallTally:
    """The model calls of one question: HTTP attempts, retries among them, seconds waited before retries.

    Thread-safe: the code agent's sub-calls run in threads that share their question's budget.
    """

    def __init__(self) -> None:
        """Nothing counted yet."""
        self.attempts = 0
        self.retries = 0
        self.waited_s = 0.0
        self._lock = threading.Lock()

    def attempt(self) -> None:
        """One HTTP attempt is about to be sent."""
        with self._lock:
            self.attempts += 1

    def waited(self, seconds: float) -> None:
        """A retry comes after ``seconds`` of waiting."""
        with self._lock:
            self.retries += 1
            self.waited_s += seconds

    def as_dict(self) -> dict[str, Any]:
        """``{"attempts", "retries", "waited_s"}`` for a results line."""
        with self._lock:
            return {"attempts": self.attempts, "retries": self.retries, "waited_s": round(self.waited_s, 3)}


class Deadline:
    """A wall-clock budget that starts when it is made (``seconds`` ``None``: no limit), and its :class:`CallTally`."""

    #: What the budget is measured on. Tests swap in a clock that their scripted model calls advance, so that a
    #: loaded machine cannot change how many steps fit in a budget.
    clock: Callable[[], float] = staticmethod(time.monotonic)

    def __init__(self, seconds: float | None) -> None:
        """Start the budget now."""
        self.seconds = seconds
        self.at = None if seconds is None else self.clock() + seconds
        self.calls = CallTally()

    def remaining(self) -> float | None:
        """Seconds left (never below 0), or ``None`` without a limit."""
        return None if self.at is None else max(0.0, self.at - self.clock())

    def expired(self) -> bool:
        """Whether the budget is spent."""
        return self.at is not None and self.clock() >= self.at

    def check(self) -> None:
        """Raise :class:`QuestionTimeoutError` once the budget is spent."""
        if self.expired():
            raise QuestionTimeoutError(self.seconds or 0.0)


@contextlib.contextmanager
def active(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Make ``deadline`` the current thread's for the block (the previous one is restored after it)."""
    previous = getattr(_current, "deadline", None)
    _current.deadline = deadline
    try:
        yield deadline
    finally:
        _current.deadline = previous


@contextlib.contextmanager
def question_deadline(seconds: float | None) -> Iterator[Deadline]:
    """A budget of ``seconds`` from now, the current thread's for the block (``None``: no limit)."""
    deadline = Deadline(seconds)
    with active(deadline):
        yield deadline


def current() -> Deadline | None:
    """The current thread's question budget (``None``: none), to hand on to threads started inside a step."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    return deadline


def remaining() -> float | None:
    """Seconds left of the current thread's question budget (at least 0), or ``None`` when there is none."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    return deadline.remaining() if deadline is not None else None


def tally() -> CallTally | None:
    """The current thread's question's :class:`CallTally` (``None`` outside a question, e.g. the judge's calls)."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    return deadline.calls if deadline is not None else None


def check() -> None:
    """Raise :class:`QuestionTimeoutError` when the current thread's question budget is spent."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.check()


class StopRequest:
    """A request to start no new question, then to wait at most ``wait_s`` for those in flight (first Ctrl+C).

    Attributes:
        wait_s: seconds to wait for the questions in flight once the request is set.
        abandoned: questions still in flight when the wait ran out (their lines are not written).
        writer: the run's results writer, once writing has started (:meth:`writes_held`).
    """

    def __init__(self, wait_s: float = DEFAULT_INTERRUPT_WAIT) -> None:
        """Not set yet."""
        self.wait_s = wait_s
        self.abandoned = 0
        self.writer: Any = None
        self._at: float | None = None
        self._said = False

    def set(self) -> None:
        """Ask the run to stop (safe in a signal handler: it only records the time)."""
        if self._at is None:
            self._at = time.monotonic()

    def is_set(self) -> bool:
        """Whether a stop was asked for."""
        return self._at is not None

    def waiting(self, in_flight: int) -> bool:
        """With the request set: whether the ``in_flight`` questions may still be waited for (the first call logs
        what happens; when the wait has run out they are counted in :attr:`abandoned`)."""
        if not self._said:
            self._said = True
            if in_flight:
                logger.warning(
                    "interrupted: waiting up to %g s for %d question(s) in flight; press Ctrl+C again to stop now",
                    self.wait_s,
                    in_flight,
                )
            else:
                logger.warning("interrupted: no question in flight; stopping")
        if in_flight and self._at is not None and time.monotonic() - self._at >= self.wait_s:
            self.abandoned = in_flight
            logger.warning("interrupted: gave up waiting for %d question(s)", in_flight)
            return False
        return bool(in_flight)

    @contextlib.contextmanager
    def writes_held(self) -> Iterator[None]:
        """No results line is being written inside the block (the writer's lock is held), e.g. to exit at once."""
        lock = getattr(self.writer, "lock", None)
        if lock is None:
            yield
            return
        with lock:
            yield
