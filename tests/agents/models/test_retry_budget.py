"""The retry policy over real HTTP (the openai SDK and LiteLLM against the fault proxy), on an injected clock.

Every request here is answered by the fault proxy itself (its scripts hold faults only), so no model server is
needed; the budget's clock stands still (:class:`Deadline.clock`), so "60 s left" is exactly that on any machine,
and the policy's waits are recorded instead of slept (:attr:`RetryPolicy.sleep`). The same faults in front of the
real llama-cpp-python server, where the question then answers, are in ``test_real_server.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from helpers.fault_proxy import PINNED_REASON, FaultProxy

from madqa.agents.harness.deadline import Deadline, active
from madqa.agents.harness.errors import QuestionTimeoutError, RetryBudgetError, classify, short_error
from madqa.agents.models.factory import make_model
from madqa.agents.models.options import ModelOptions
from madqa.agents.models.retry_policy import BACKOFF_FIRST_S, MIN_ATTEMPT_S, RetryPolicy, attempt_timeout

#: Never forwarded to: the proxies below answer every request with a fault.
NOWHERE = "http://127.0.0.1:9"


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """What is left of a budget is what the test made it, however slow the machine."""
    monkeypatch.setattr(Deadline, "clock", staticmethod(lambda: 1000.0))


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the policy makes, recorded instead of slept."""
    seen: list[float] = []
    monkeypatch.setattr(RetryPolicy, "sleep", staticmethod(seen.append))
    return seen


@contextlib.contextmanager
def _proxy(script: list[str], **kwargs: float) -> Iterator[FaultProxy]:
    proxy = FaultProxy(NOWHERE, script, **kwargs)
    try:
        yield proxy
    finally:
        proxy.close()


def _say_hi(spec: str, proxy: FaultProxy, **options: object) -> None:
    from smolagents import ChatMessage, MessageRole

    model = make_model(spec, api_base=f"{proxy.url}/v1", api_key="x", max_tokens=4, **options)
    model.generate([ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": "Say hi."}])])


def test_each_attempt_gets_the_timeout_cut_to_what_is_left() -> None:
    options = ModelOptions.resolve({"timeout": 300})
    assert attempt_timeout(options) == 300  # no budget: the option
    with active(Deadline(60)):
        assert attempt_timeout(options) == 60
    with active(Deadline(0.0)), pytest.raises(QuestionTimeoutError):
        attempt_timeout(options)  # a spent budget: nothing is sent


@pytest.mark.parametrize("fault", ["429", "500"])
def test_a_fast_fault_with_60_s_left_is_retried(fault: str, waits: list[float]) -> None:
    """The issue's case: the default 300 s attempt timeout does not fit in 60 s, yet a fast failure is retried."""
    with _proxy([fault, fault]) as proxy:
        with active(Deadline(60)) as deadline, pytest.raises(Exception) as failed:
            _say_hi("openai:m", proxy, retries=1)
        assert proxy.seen == [fault, fault]  # the retry was sent (the rule of old sent one attempt only)
        assert len(waits) == 1 and 0 < waits[0] <= BACKOFF_FIRST_S
        assert deadline.calls.as_dict() == {"attempts": 2, "retries": 1, "waited_s": round(waits[0], 3)}
        assert failed.value.retries_spent == 1  # the judge does not retry it again


def test_a_retry_after_that_does_not_fit_ends_the_call_saying_so(waits: list[float]) -> None:
    """5 s left, Retry-After: 30: no wait, no second attempt, a provider error that says why."""
    with _proxy(["429-retry-after"] * 3, retry_after=30) as proxy:
        with active(Deadline(5)) as deadline, pytest.raises(RetryBudgetError) as failed:
            _say_hi("openai:m", proxy)
        assert proxy.seen == ["429-retry-after"] and waits == []
        assert deadline.calls.as_dict() == {"attempts": 1, "retries": 0, "waited_s": 0.0}
        line_error = short_error(failed.value)
        assert classify(failed.value) == "provider"
        assert "30.0 s wait (Retry-After)" in line_error and "5.0 s left" in line_error, line_error
        assert "RateLimitError" in line_error and "injected 429" in line_error, line_error


def test_a_retry_after_that_fits_is_waited(waits: list[float]) -> None:
    """With 60 s left, a 30 s Retry-After plus a useful attempt fits: the policy waits exactly what was asked."""
    assert 30 + MIN_ATTEMPT_S <= 60
    with _proxy(["429-retry-after"] * 2, retry_after=30) as proxy:
        with active(Deadline(60)) as deadline, pytest.raises(Exception, match="429"):
            _say_hi("openai:m", proxy, retries=1)
        assert proxy.seen == ["429-retry-after"] * 2 and waits == [30.0]
        assert deadline.calls.as_dict() == {"attempts": 2, "retries": 1, "waited_s": 30.0}


def test_the_servers_own_reason_is_kept(waits: list[float]) -> None:
    """transformers serve's 400 is not OpenAI-shaped; its words still reach the line's error, and it is not retried."""
    with _proxy(["400-detail"] * 2) as proxy:
        with active(Deadline(None)) as deadline, pytest.raises(Exception) as failed:
            _say_hi("openai:m", proxy)
        assert proxy.seen == ["400-detail"] and waits == []
        assert deadline.calls.attempts == 1
        assert PINNED_REASON in short_error(failed.value), short_error(failed.value)


@pytest.mark.parametrize("spec", ["openai:m", "litellm:openai/m"])
def test_no_sdk_retries_are_hidden(spec: str, waits: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each HTTP attempt is one the line counts: the SDKs (openai's max_retries, LiteLLM's num_retries and its
    openai client's) add none of their own."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _proxy(["503"] * 8) as proxy:
        with active(Deadline(None)) as deadline, pytest.raises(Exception, match="503"):
            _say_hi(spec, proxy, retries=2)
        assert proxy.seen == ["503"] * 3, proxy.seen
        assert deadline.calls.as_dict()["attempts"] == len(proxy.seen) and len(waits) == 2
