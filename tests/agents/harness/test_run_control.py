"""Runs that fail, stop, retry and resume as users expect: error kinds and short messages, the failing step's error,
``--retry-errors`` (infrastructure failures only, attempts counted), ``--question-timeout``, ``--resume`` refusing
mixed settings, and a stop request (the first Ctrl+C) starting no new question on either backend. The Ctrl+C tests
with real signals are in test_agent_runner.py."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helpers.ray_fixtures as ray_fixtures
import httpx
import openai
import pytest
from helpers.fakes import ScriptedModel, search_then_cite, shown_pages
from smolagents.utils import AgentGenerationError

from madqa.agents.harness.deadline import Deadline, StopRequest, active, check, question_deadline, remaining
from madqa.agents.harness.errors import QuestionTimeoutError, classify, kind_of_line, short_error
from madqa.agents.harness.runner import RunConfig, RunError, run_benchmark
from madqa.agents.sandbox.worker import ReplWorkerError
from madqa.metric.inputs import parse_results_text

cluster = ray_fixtures.cluster  # started only by the test that asks for it
CTRL = "py:test_run_control:control_model"
#: remaining() as each model call of this process saw it (the per-call HTTP timeout is built from it).
SEEN_REMAINING: list[float | None] = []
#: The question budget's clock in the timeout tests (``fake_clock``): each model call moves it by its delay instead
#: of sleeping, so the number of steps that fit in a budget does not depend on how busy the machine is.
FAKE_NOW: list[float] = []


def provider_error(chars: int = 19_000) -> openai.InternalServerError:
    """What an OpenAI-compatible server's HTTP 500 looks like to the openai SDK (the body as seen: 18-19 k)."""
    request = httpx.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")
    body = "Traceback (most recent call last): " + "x" * chars
    return openai.InternalServerError(
        f"Error code: 500 - {body}", response=httpx.Response(500, request=request), body=body
    )


def _matches(variable: str, question: str) -> bool:
    return any(word and word in question for word in os.environ.get(variable, "").split("|"))


def control_reply(text: str, tools: list[str]) -> Any:
    """One search then an answer; ``MADQA_CTRL_DELAY`` seconds per call; a question containing a word of
    ``MADQA_CTRL_FAIL`` gets an HTTP 500 on its second call, one of ``MADQA_CTRL_NOANSWER`` never answers."""
    question = re.search(r"Question: (.*)", text).group(1)
    SEEN_REMAINING.append(remaining())
    delay = float(os.environ.get("MADQA_CTRL_DELAY", "0"))
    if FAKE_NOW:
        FAKE_NOW[0] += delay
    else:
        time.sleep(delay)
    if os.environ.get("MADQA_CTRL_CHECK"):
        check()  # as an API model does before sending a call (agents/models/server_compat.py)
    if _matches("MADQA_CTRL_FAIL", question) and shown_pages(text):  # after its search
        raise provider_error()
    if _matches("MADQA_CTRL_NOANSWER", question):
        return "search_documents", {"query": "invoice"}
    return search_then_cite("17.85", "riverton OR invoice OR menu")(text, tools)


def control_model(**_: Any) -> ScriptedModel:
    """The fake of these tests (``py:test_run_control:control_model``)."""
    return ScriptedModel([control_reply], text_only=True, usage=lambda text, n: (len(text) // 4, 12), model_id="c")


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def questions(n: int) -> list[dict[str, Any]]:
    from madqa.loading_script.load import load_questions

    return load_questions("dev")[:n]


# --- error kinds -------------------------------------------------------------------------------------------------


def _raised(make: Any) -> BaseException:
    """``make()`` raised and caught, so the exception has its traceback and chain as in a real run."""
    try:
        make()
    except BaseException as exc:  # noqa: BLE001
        return exc
    raise AssertionError("nothing raised")


def _wrapped(inner: BaseException) -> BaseException:
    """``inner`` as smolagents raises it out of a run: inside AgentGenerationError."""

    def fail() -> None:
        try:
            raise inner
        except Exception as exc:
            raise AgentGenerationError(f"Error while generating output:\n{exc}", _Quiet()) from exc

    return _raised(fail)


class _Quiet:
    def log_error(self, *_: Any) -> None:
        pass


REQUEST = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda: provider_error(), "provider"),
        (
            lambda: openai.RateLimitError("Error code: 429", response=httpx.Response(429, request=REQUEST), body=None),
            "provider",
        ),
        (lambda: openai.APIConnectionError(request=REQUEST), "transport"),
        (lambda: openai.APITimeoutError(request=REQUEST), "transport"),
        (lambda: httpx.ConnectError("[Errno 111] Connection refused", request=REQUEST), "transport"),
        (
            lambda: httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
            "transport",
        ),
        (lambda: httpx.ReadTimeout("timed out", request=REQUEST), "transport"),
        (
            lambda: httpx.HTTPStatusError("503", request=REQUEST, response=httpx.Response(503, request=REQUEST)),
            "provider",
        ),
        (lambda: ConnectionResetError(104, "Connection reset by peer"), "transport"),
        (lambda: QuestionTimeoutError(60), "timeout"),
        (lambda: ReplWorkerError("the REPL worker did not start: killed"), "worker"),
        (lambda: RuntimeError("something the table does not know"), "provider"),
    ],
)
def test_exceptions_are_classified_by_their_chain(make: Any, kind: str) -> None:
    inner = make()
    assert classify(inner) == kind
    assert classify(_wrapped(inner)) == kind  # smolagents' wrapper is looked through


def test_openai_errors_chained_to_httpx_and_a_timeout_anywhere_wins() -> None:
    def connect() -> None:
        try:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=REQUEST)
        except httpx.ConnectError as exc:
            raise openai.APIConnectionError(request=REQUEST) from exc

    assert classify(_wrapped(_raised(connect))) == "transport"

    def cut_by_budget() -> None:
        try:
            raise QuestionTimeoutError(5)
        except QuestionTimeoutError:
            raise openai.APITimeoutError(request=REQUEST) from None  # the context stays

    assert classify(_raised(cut_by_budget)) == "timeout"


def test_hub_errors_are_provider_errors() -> None:
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError

    request = httpx2.Request("POST", "https://router.huggingface.co/v1/chat/completions")
    error = HfHubHTTPError("500 Server Error", response=httpx2.Response(500, request=request))
    assert classify(_wrapped(error)) == "provider"


def test_short_error_names_the_cause_and_cuts_the_body() -> None:
    message = short_error(_wrapped(provider_error()))
    assert message.startswith("InternalServerError: Error code: 500 - Traceback")
    assert message.endswith(" …") and len(message) < 340  # was the whole 19 k body
    assert short_error(QuestionTimeoutError(2.5)) == "QuestionTimeoutError: question took longer than 2.5 s"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ({"error": None, "final_state": "answered"}, None),
        (
            {
                "error": "no final answer after 10 steps: ValueError: the model called [] instead of final_answer",
                "final_state": "no_answer",
            },
            "model",
        ),
        (
            {
                "error": "AgentGenerationError: Error while generating output:\nError code: 500 - {…}",
                "final_state": "error",
            },
            "provider",
        ),
        (
            {
                "error": "AgentGenerationError: Error while generating output:\n"
                "Connection error. ConnectError: refused",
                "final_state": "error",
            },
            "transport",
        ),
        ({"error": "ray: The actor died unexpectedly before finishing this task.", "final_state": None}, "worker"),
        ({"error": "InternalServerError: …", "error_kind": "provider"}, "provider"),
    ],
)
def test_lines_written_before_error_kind_are_read_conservatively(line: dict[str, Any], kind: str | None) -> None:
    assert kind_of_line(line) == kind


# --- the question's budget ---------------------------------------------------------------------------------------


def test_deadline_is_per_thread_and_check_raises_once_spent(fake_clock) -> None:
    assert remaining() is None
    check()  # no budget: never raises
    with question_deadline(0.05) as deadline:
        assert remaining() == pytest.approx(0.05)
        seen: list[float | None] = []
        worker = threading.Thread(target=lambda: seen.append(remaining()))
        worker.start()
        worker.join()
        assert seen == [None]  # another thread has its own (none)
        fake_clock[0] += 0.04
        assert remaining() == pytest.approx(0.01) and not deadline.expired()
        check()
        fake_clock[0] += 0.02
        assert remaining() == 0.0
        with pytest.raises(QuestionTimeoutError, match="longer than 0.05 s"):
            check()
    assert remaining() is None
    with active(Deadline(None)):
        assert remaining() is None
    assert deadline.expired()


@pytest.fixture
def fake_clock(monkeypatch) -> Iterator[list[float]]:
    """The question budget measured on :data:`FAKE_NOW`, which the control model's calls advance."""
    FAKE_NOW[:] = [1000.0]
    monkeypatch.setattr(Deadline, "clock", staticmethod(lambda: FAKE_NOW[0]))
    yield FAKE_NOW
    FAKE_NOW.clear()


def test_a_question_that_runs_out_of_time_is_a_timeout_line(layout, tmp_path: Path, monkeypatch, fake_clock) -> None:
    slow, quick = questions(2)
    monkeypatch.setenv("MADQA_CTRL_NOANSWER", slow["question"][:30])  # searches until the budget is spent
    monkeypatch.setenv("MADQA_CTRL_DELAY", "0.2")
    SEEN_REMAINING.clear()
    out = tmp_path / "t.jsonl"
    summary = run_benchmark(RunConfig(model=CTRL, limit=2, question_timeout=0.5), out)
    rows = {r["id"]: r for r in lines(out)}
    late = rows[slow["id"]]
    assert late["error"] == "QuestionTimeoutError: question took longer than 0.5 s"
    assert late["error_kind"] == "timeout" and late["final_state"] == "error" and late["answer"] == []
    assert len(late["trajectory"]) == 3  # 0.2 s a step on the budget's clock: stopped after the step that ran over
    assert rows[quick["id"]]["error"] is None and rows[quick["id"]]["error_kind"] is None
    assert late["config"]["question_timeout"] == 0.5 and summary.retryable_ids == [slow["id"]]
    # Inside a model call the budget is visible (what a per-call HTTP timeout is cut to).
    assert SEEN_REMAINING and all(r is not None and 0 <= r <= 0.5 for r in SEEN_REMAINING)


def test_a_model_call_cut_by_the_budget_is_a_timeout_on_its_step(
    layout, tmp_path: Path, monkeypatch, fake_clock
) -> None:
    (slow,) = questions(1)
    monkeypatch.setenv("MADQA_CTRL_NOANSWER", slow["question"][:30])
    monkeypatch.setenv("MADQA_CTRL_DELAY", "0.2")
    monkeypatch.setenv("MADQA_CTRL_CHECK", "1")
    out = tmp_path / "c.jsonl"
    run_benchmark(RunConfig(model=CTRL, limit=1, question_timeout=0.5), out)
    (row,) = lines(out)
    assert row["error"] == "QuestionTimeoutError: question took longer than 0.5 s" and row["error_kind"] == "timeout"
    *done, cut = row["trajectory"]
    assert done and all(s["error"] is None for s in done)
    assert cut["error"] == row["error"] and cut["model_output"] is None  # the call that the budget stopped


# --- the line's error, the failing step's error, --retry-errors and attempts ------------------------------------


def test_a_provider_error_is_short_classified_and_on_its_step(layout, tmp_path: Path, monkeypatch) -> None:
    (victim,) = questions(1)
    monkeypatch.setenv("MADQA_CTRL_FAIL", victim["question"][:30])
    out = tmp_path / "e.jsonl"
    run_benchmark(RunConfig(model=CTRL, limit=1), out)
    (row,) = lines(out)
    assert row["error"].startswith("InternalServerError: Error code: 500") and len(row["error"]) < 340
    assert row["error_kind"] == "provider" and row["attempts"] == 1
    first, failed = row["trajectory"]
    assert first["error"] is None and first["tool_calls"][0]["name"] == "search_documents"
    assert failed["error"] == row["error"] and failed["model_output"] is None  # was error: None


def test_retry_errors_reruns_only_infrastructure_failures(layout, tmp_path: Path, monkeypatch) -> None:
    qs = questions(5)
    infra, model, old_infra, old_model = qs[1], qs[2], qs[3], qs[4]
    monkeypatch.setenv("MADQA_CTRL_FAIL", "|".join(q["question"][:30] for q in (infra, old_infra)))
    monkeypatch.setenv("MADQA_CTRL_NOANSWER", "|".join(q["question"][:30] for q in (model, old_model)))
    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(model=CTRL, limit=5, max_steps=2), out)
    rows = lines(out)
    for row in rows:  # two lines as written before error_kind and attempts existed
        if row["id"] in (old_infra["id"], old_model["id"]):
            del row["error_kind"], row["attempts"]
            row["error"] = row["error"].replace(
                "InternalServerError", "AgentGenerationError: Error while generating output:\nError code: 500"
            )
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    before = {r["id"]: r for r in rows}
    assert before[model["id"]]["error_kind"] == "model" and before[infra["id"]]["error_kind"] == "provider"

    monkeypatch.setenv("MADQA_CTRL_NOANSWER", "")  # a retry would now answer them: it must not be asked
    monkeypatch.setenv("MADQA_CTRL_FAIL", infra["question"][:30])  # fails once more
    summary = run_benchmark(RunConfig(model=CTRL, limit=5, max_steps=2), out, resume=True, retry_errors=True)
    after = {r["id"]: r for r in lines(out)}
    assert summary.written == 2 and len(after) == 5
    assert after[model["id"]] == before[model["id"]] and after[old_model["id"]] == before[old_model["id"]]
    assert after[old_infra["id"]]["error"] is None and after[old_infra["id"]]["attempts"] == 2
    assert after[infra["id"]]["error_kind"] == "provider" and after[infra["id"]]["attempts"] == 2

    monkeypatch.setenv("MADQA_CTRL_FAIL", "")
    run_benchmark(RunConfig(model=CTRL, limit=5, max_steps=2), out, resume=True, retry_errors=True)
    final = {r["id"]: r for r in lines(out)}
    assert final[infra["id"]]["error"] is None and final[infra["id"]]["attempts"] == 3
    assert final[qs[0]["id"]]["attempts"] == 1 and final[model["id"]]["final_state"] == "no_answer"


# --- --resume and settings ---------------------------------------------------------------------------------------


def test_resume_refuses_lines_of_other_settings_and_names_them(layout, tmp_path: Path, caplog) -> None:
    out = tmp_path / "s.jsonl"
    options = {
        "max_tokens": 64,
        "temperature": 0.1,
        "api_key": "sk-very-secret",
        "hf_token": "hf_secret",
        "timeout": 30,
    }
    run_benchmark(RunConfig(model=CTRL, limit=2, options={"top_k": 3, "page_chars": 500}), out, model_options=options)
    text = out.read_text(encoding="utf-8")
    assert "sk-very-secret" not in text and "hf_secret" not in text
    assert lines(out)[0]["config"]["model_options"] == {"max_tokens": 64, "temperature": 0.1, "timeout": 30}

    def resume(**changes: Any) -> Any:
        config = {"model": CTRL, "limit": 3, "top_k": 3, "page_chars": 500, **changes.pop("config", {})}
        runner = {k: config.pop(k) for k in ("model", "limit", "question_timeout") if k in config}
        return run_benchmark(
            RunConfig(**runner, options=config),
            out,
            resume=True,
            model_options=changes.pop("options", options),
            **changes,
        )

    with pytest.raises(
        RunError,
        match=r"s\.jsonl holds lines written with top_k=3 \(this run: top_k=5\); rerun with "
        r"the same settings, or add --allow-mixed-settings",
    ):
        resume(config={"top_k": 5})
    with pytest.raises(RunError, match=r"model_options\.max_tokens=64 \(this run: model_options\.max_tokens=128\)"):
        resume(options={**options, "max_tokens": 128})
    with pytest.raises(RunError, match=r"page_chars=500 \(this run: page_chars="):  # a default the agent resolved
        resume(config={"page_chars": None})
    assert len(lines(out)) == 2  # nothing written by a refused run
    # What does not change a finished line's result may differ: the budget, the per-call timeout, the limit.
    assert resume(config={"question_timeout": 100.0}, options={**options, "timeout": 5}).written == 1
    with caplog.at_level("WARNING"):
        assert resume(config={"top_k": 5, "limit": 4}, allow_mixed_settings=True).written == 1
    assert "holds lines written with top_k=3 (this run: top_k=5)" in caplog.text
    assert [r["config"]["top_k"] for r in lines(out)] == [3, 3, 3, 5]


# --- stopping (the Ctrl+C tests with real signals are in test_agent_runner.py) ---------------------------


def _valid(out: Path) -> list[dict[str, Any]]:
    rows = lines(out)
    assert len(parse_results_text(out.read_text(encoding="utf-8"), str(out))) == len(rows)
    assert len({r["id"] for r in rows}) == len(rows)
    return rows


class _StopAfterFirst:
    """A :class:`madqa.agents.harness.runner.Progress` that asks the run to stop when the first line is written."""

    def __init__(self, stop: StopRequest) -> None:
        self.stop = stop

    def start(self, total: int, finished: Any) -> None:
        pass

    def update(self, record: Any) -> None:
        self.stop.set()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["threads", "ray"])
def test_a_stop_request_starts_no_new_question(layout, tmp_path: Path, monkeypatch, request, backend: str) -> None:
    """Both backends: once the stop is asked for, the questions in flight finish and none starts."""
    chosen = None
    if backend == "ray":
        pytest.importorskip("ray", reason="Ray is not installed: pip install 'madqa[ray]'")
        request.getfixturevalue("cluster")
        from madqa.agents.harness.ray_run import RayBackend

        chosen = RayBackend()
    monkeypatch.setenv("MADQA_CTRL_DELAY", "0.3")
    # A wait far longer than the question in flight needs: a Ray worker importing the harness for the first time took
    # over 30 s on a loaded machine (load 12-18), and the question was abandoned. Only a hang makes it wait that long.
    stop = StopRequest(wait_s=600)
    out = tmp_path / "s.jsonl"
    summary = run_benchmark(
        RunConfig(model=CTRL, limit=8), out, workers=2, progress=_StopAfterFirst(stop), stop=stop, backend=chosen
    )
    assert summary.interrupted and summary.abandoned == 0
    assert 1 <= summary.written == len(_valid(out)) <= 2  # the first line, and the one in flight with it


def forced_call_fails_model() -> ScriptedModel:
    """Never calls a tool on the last step, then the forced final call gets an HTTP 500."""

    return ScriptedModel(
        ["I am not sure.", lambda text, tools: (_ for _ in ()).throw(provider_error(200))], text_only=True
    )


def test_a_provider_error_in_the_forced_last_call_is_infrastructure(built_home: Path, tmp_path: Path) -> None:
    """No answer because the provider failed (not the model) is retried by --retry-errors: its kind is provider."""
    out = tmp_path / "r.jsonl"
    run_benchmark(
        RunConfig(model="py:test_run_control:forced_call_fails_model", split="dev", limit=1, max_steps=1), out
    )
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert line["final_state"] == "no_answer" and line["error"].startswith("no final answer")
    assert line["error_kind"] == "provider", line["error"]


def test_a_context_window_overflow_is_the_models_failure() -> None:
    """A conversation that outgrew the model's context is the system under test failing: not rerun by
    --retry-errors (a shorter path on a rerun would be a best-of-N), whether raised now or read from an old line."""
    request = httpx.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")
    text = (
        "Error code: 400 - This model's maximum context length is 4096 tokens. However, you requested 6796 "
        "tokens (5772 in the messages, 1024 in the completion)."
    )
    overflow = openai.BadRequestError(text, response=httpx.Response(400, request=request), body=None)
    wrapped = RuntimeError("Error while generating output")  # as smolagents wraps a failed call
    wrapped.__cause__ = overflow
    assert classify(overflow) == classify(wrapped) == "model"
    assert kind_of_line({"error": f"BadRequestError: {text}", "final_state": "error"}) == "model"
    other = openai.BadRequestError(
        "Error code: 400 - bad tool schema", response=httpx.Response(400, request=request), body=None
    )
    assert classify(other) == "provider"
