"""The one retry policy of API model calls: a transient failure is retried while the question's budget has room.

The SDKs' own retries are off (the openai client's ``max_retries=0``; LiteLLM's ``num_retries=0`` and the
``max_retries=0`` it hands its openai client), so every HTTP attempt is one of ours and is counted in the question's
:class:`~madqa.agents.harness.deadline.CallTally` (the results line's ``calls``). :class:`RetryPolicy` replaces
smolagents' ``retryer`` on both API models (:mod:`madqa.agents.models.server_compat`), and the judge's calls go
through the same models.

**What is retried**: HTTP 408, 409, 429 and 5xx; a call that did not get through (refused, dropped, timed out); a
200 whose body is cut short or not JSON (:func:`is_truncated_reply`). Nothing else (a 400 is the request's fault).

**When**: after a wait, the ``Retry-After`` (or ``retry-after-ms``) the server sent, else an exponential backoff
(:data:`BACKOFF_FIRST_S` doubling, at most :data:`BACKOFF_MAX_S`, with jitter), up to the ``retries`` option. With a
question budget (``--question-timeout``), a retry is made only when its wait plus :data:`MIN_ATTEMPT_S` fits in what
is left, and each attempt's timeout is the ``timeout`` option cut to what is left. A wait that does not fit ends the
call at once with :class:`~madqa.agents.harness.errors.RetryBudgetError` (a ``provider`` line saying so) instead of
sleeping into a certain timeout. Without a budget, a wait longer than the ``timeout`` option is not made either.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from madqa.agents.harness.deadline import check, remaining, tally
from madqa.agents.harness.errors import RetryBudgetError, chain, classify, http_status, short_error
from madqa.agents.models.options import ModelOptions

__all__ = [
    "BACKOFF_FIRST_S",
    "BACKOFF_MAX_S",
    "MIN_ATTEMPT_S",
    "RETRY_STATUSES",
    "RetryPolicy",
    "attempt_timeout",
    "is_retryable",
    "is_truncated_reply",
    "retry_after",
]

logger = logging.getLogger(__name__)

#: Seconds an attempt needs to do useful work: a retry whose wait leaves less than this of the budget is not made.
MIN_ATTEMPT_S = 5.0
#: The first backoff wait (without ``Retry-After``); it doubles on each retry, up to :data:`BACKOFF_MAX_S`.
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0
#: Statuses worth another attempt (the openai SDK's own set).
RETRY_STATUSES = frozenset({408, 409, 429})
#: The shortest timeout an attempt is sent with (a budget nearly spent still gets a real try, then ends).
MIN_TIMEOUT_S = 0.5


def is_truncated_reply(exc: BaseException) -> bool:
    """A reply that arrived but cannot be read (body cut short, not JSON): worth another attempt.

    >>> is_truncated_reply(json.JSONDecodeError("Expecting value", "{", 1))
    True
    """
    for err in chain(exc):
        if isinstance(err, json.JSONDecodeError) or type(err).__name__ in (
            "APIResponseValidationError",
            "RemoteProtocolError",
            "IncompleteRead",
            "JSONDecodeError",
        ):
            return True
    return False


def _status(exc: BaseException) -> int | None:
    for err in chain(exc):
        status = http_status(err)
        if status is not None:
            return status
    return None


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a transient failure (see the module docstring).

    >>> is_retryable(ConnectionResetError(104, "reset")), is_retryable(ValueError("bad request"))
    (True, False)
    """
    status = _status(exc)
    if status is not None:
        return status in RETRY_STATUSES or status >= 500
    return is_truncated_reply(exc) or classify(exc) == "transport"


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, ``Retry-After`` in seconds or as an HTTP date).

    The headers are read from the error's ``response`` (openai, httpx) or LiteLLM's ``litellm_response_headers``.
    """
    for err in chain(exc):
        for headers in (getattr(getattr(err, "response", None), "headers", None), getattr(err, "headers", None)):
            seconds = _header_seconds(headers)
            if seconds is not None:
                return seconds
        seconds = _header_seconds(getattr(err, "litellm_response_headers", None))
        if seconds is not None:
            return seconds
    return None


def _header_seconds(headers: Any) -> float | None:
    if not isinstance(headers, Mapping) and not hasattr(headers, "get"):
        return None
    try:
        millis = headers.get("retry-after-ms")
        value = headers.get("retry-after") or headers.get("Retry-After")
    except Exception:  # noqa: BLE001 - headers we cannot read are no instruction
        return None
    try:
        if millis is not None:
            return max(0.0, float(millis) / 1000)
        if value is None:
            return None
        return max(0.0, float(value))
    except (TypeError, ValueError):
        try:
            when = email.utils.parsedate_to_datetime(str(value))
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


def attempt_timeout(options: ModelOptions) -> float:
    """The timeout of the next attempt: the ``timeout`` option, cut to what is left of the question's budget.

    Raises :class:`~madqa.agents.harness.errors.QuestionTimeoutError` when the budget is spent (nothing is sent).
    """
    left = remaining()
    if left is None:
        return options.timeout
    check()
    return max(MIN_TIMEOUT_S, min(options.timeout, left))


class RetryPolicy:
    """Call ``fn(**kwargs, timeout=…)`` until it succeeds, a failure is not transient, the ``retries`` option is
    spent, or the next wait does not fit (see the module docstring). A smolagents ``retryer``.

    The exception that ends a call carries ``retries_spent`` (the retries made), so a caller with its own retry
    loop (the judge's) does not retry it again.
    """

    #: How the policy waits (tests swap in a recorder, so that a backoff costs no wall time).
    sleep: ClassVar[Callable[[float], None]] = staticmethod(time.sleep)

    def __init__(self, options: ModelOptions) -> None:
        """Retry per ``options`` (``retries``, ``timeout``)."""
        self.options = options

    def wait_before(self, retry: int, exc: BaseException) -> float:
        """Seconds to wait before retry number ``retry`` (0-based) after ``exc``."""
        asked = retry_after(exc)
        if asked is not None:
            return asked
        backoff = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2**retry)
        return backoff * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not cryptography

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` under the policy."""
        calls = tally()
        retry = 0
        while True:
            timeout = attempt_timeout(self.options)
            if calls is not None:
                calls.attempt()
            try:
                return fn(*args, **{**kwargs, "timeout": timeout})
            except Exception as exc:
                if retry >= self.options.retries or not is_retryable(exc):
                    with contextlib.suppress(AttributeError):  # an exception class with __slots__ takes no mark
                        exc.retries_spent = retry  # type: ignore[attr-defined]
                    raise
                wait = self.wait_before(retry, exc)
                self._fits(wait, exc, retry)
                logger.warning(
                    "model call failed (%s); retry %d of %d in %.1f s",
                    short_error(exc),
                    retry + 1,
                    self.options.retries,
                    wait,
                )
                self.sleep(wait)
                if calls is not None:
                    calls.waited(wait)
                retry += 1

    def _fits(self, wait: float, exc: BaseException, retry: int) -> None:
        """Raise :class:`RetryBudgetError` (from ``exc``) when waiting ``wait`` s leaves no useful attempt."""
        left = remaining()
        asked = "Retry-After" if retry_after(exc) is not None else "backoff"
        if left is None:
            if wait <= self.options.timeout:
                return
            why = f"longer than one attempt's timeout ({self.options.timeout:g} s)"
        elif wait + MIN_ATTEMPT_S <= left:
            return
        else:
            why = (
                f"does not fit in the {left:.1f} s left of the question's budget "
                f"(a retry needs its wait plus {MIN_ATTEMPT_S:g} s)"
            )
        error = RetryBudgetError(f"{short_error(exc)}; not retried: the {wait:.1f} s wait ({asked}) {why}")
        error.retries_spent = retry  # type: ignore[attr-defined]
        raise error from exc
