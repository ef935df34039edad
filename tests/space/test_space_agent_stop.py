"""Stop in the "Try an agent" tab (issue 24, item 3): a run stops at its next step boundary, only for the visitor
who asked, and leaves the tab free for the next run. Issue 39, item 4: a Stop cannot be pushed out by other
sessions' clicks, runs are capped per client and in all (refused at the click), and an answer that comes after Stop
says that Stop came too late.

The model is scripted and waits on a gate per call, so the test decides when a call is "in progress"; the agent,
its search tool, the prepared agent's stream and the tab's runtime are the real ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.fakes import ScriptedModel, code, search_then_cite  # noqa: E402
from helpers.polling import wait_until

SPEC = "py:test_space_agent_stop:gated_model"
ANSWER = "stop-test-answer"
#: Set by each test: call N waits on ``GATES[N - 1]``; ``ENTERED[N - 1]`` is set when call N has started.
GATES: list[threading.Event] = []
ENTERED: list[threading.Event] = []
#: When set by a test, the reply of call 1 (e.g. a step that shows nothing).
FIRST_REPLY: list[Any] = []


def gated_reply(text: str, tools: list[str]) -> Any:
    call = sum(e.is_set() for e in ENTERED)
    ENTERED[call].set()
    if not GATES[call].wait(timeout=120):
        raise RuntimeError("the test never opened the gate")
    if call == 0 and FIRST_REPLY:
        return FIRST_REPLY[0]
    if not tools:  # the code-REPL agent: one print per step
        return code("print(documents[0])")
    return search_then_cite(ANSWER, "invoice OR report")(text, tools)


def gated_model(**_: Any) -> ScriptedModel:
    return ScriptedModel([gated_reply], text_only=True, usage=None, model_id="gated")


@pytest.fixture
def runtime(layout, tmp_path: Path) -> Iterator[Any]:
    from madqa.space.agent_runtime import AgentRuntime
    from madqa.space.config import SpaceConfig

    GATES[:] = [threading.Event() for _ in range(4)]
    FIRST_REPLY.clear()
    ENTERED[:] = [threading.Event() for _ in range(4)]
    config = SpaceConfig.from_env(
        {
            "MADQA_HOME": str(layout.root),
            "MADQA_SPACE_DB": str(tmp_path / "db.sqlite"),
            "MADQA_SPACE_AGENT_MODEL": SPEC,
        }
    )
    runtime = AgentRuntime(config)
    try:
        yield runtime
    finally:
        for gate in GATES:  # never leave an agent thread waiting
            gate.set()


def _run_in_background(runtime: Any, stop: threading.Event) -> tuple[threading.Thread, list[list[Any]]]:
    from madqa.space.agent_tab import BM25, run_agent

    seen: list[list[Any]] = []

    def consume() -> None:
        for history in run_agent(runtime, {}, None, "What is the total of the invoice?", BM25, SPEC, stop):
            seen.append(list(history))

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    return thread, seen


def _is_waiting_status(title: str) -> bool:
    return title.startswith("waiting for another visitor's run to end… ")


def _wait_for_status(seen: list[list[Any]], matches: Callable[[str], bool], what: str) -> None:
    """Poll the latest history shown until one of its status titles ``matches`` (60 s at most)."""

    def shown() -> bool:
        return any(matches((m.metadata or {}).get("title", "")) for m in (seen[-1] if seen else []))

    wait_until(shown, what)


def _texts(history: list[Any]) -> list[str]:
    return [str(m.content) for m in history]


def test_stop_ends_the_run_when_the_pending_call_returns(runtime: Any) -> None:
    run = runtime.admit("visitor", "ip:a")
    thread, seen = _run_in_background(runtime, run.stop)
    assert ENTERED[0].wait(120), "the first model call never started"
    assert runtime.request_stop("visitor") is True
    # while the call is pending, the status line says the run will stop when it returns
    _wait_for_status(seen, lambda t: t.endswith("(stopping when this call returns)"), "the stopping status")
    GATES[0].set()  # the call returns: it asked for a search, which is shown, then the run stops
    thread.join(120)
    assert not thread.is_alive()
    final = _texts(seen[-1])
    assert any(t.startswith("**step 1: search** `invoice OR report`") for t in final)
    assert final[-1] == "Stopped at your request after step 1: no answer."
    assert not any("Final answer" in t for t in final)
    assert not ENTERED[1].is_set()  # no second model call was made
    assert runtime.lock.acquire(blocking=False)  # the tab is free for the next run
    runtime.lock.release()
    # the next run, without Stop, answers
    GATES[1].set()
    GATES[2].set()
    runtime.finish(run)  # the stopped run's handler ended
    thread, seen = _run_in_background(runtime, runtime.admit("visitor", "ip:a").stop)
    thread.join(120)
    assert any(t.startswith(f"**Final answer:** {ANSWER}") for t in _texts(seen[-1]))


def test_stop_after_a_step_that_shows_nothing(runtime: Any) -> None:
    """Issue 39 (c): a step with no search or code to show (here a call of a tool that does not exist) used to give
    the tab nothing to check its Stop on, so the run went on to its next model call and a final answer."""
    FIRST_REPLY.append(("no_such_tool", {}))
    run = runtime.admit("visitor", "ip:a")
    thread, seen = _run_in_background(runtime, run.stop)
    assert ENTERED[0].wait(120), "the first model call never started"
    assert runtime.request_stop("visitor") is True
    GATES[0].set()  # the call returns a step that shows nothing; the run must stop before call 2
    GATES[1].set()  # (were it to go on, call 2 would answer at once)
    thread.join(120)
    assert not thread.is_alive()
    final = _texts(seen[-1])
    assert not ENTERED[1].is_set(), final  # no second model call was made
    assert final[-1].startswith("Stopped at your request") and not any("Final answer" in t for t in final), final
    assert runtime.lock.acquire(blocking=False)  # the tab is free for the next run
    runtime.lock.release()


def test_stop_before_the_run_starts(runtime: Any) -> None:
    stop = runtime.admit("visitor", "ip:a").stop
    assert runtime.request_stop("visitor")  # pressed while gradio still queued the run
    thread, seen = _run_in_background(runtime, stop)
    thread.join(120)
    assert _texts(seen[-1])[-1] == "Stopped at your request before it started: no answer."
    assert not ENTERED[0].is_set()  # the model was never called


def test_stop_while_waiting_for_another_run_ends_the_wait(runtime: Any) -> None:
    assert runtime.lock.acquire(timeout=10)  # another visitor's run holds the agent
    try:
        stop = runtime.admit("visitor", "ip:a").stop
        thread, seen = _run_in_background(runtime, stop)
        wait_until(lambda: bool(seen), "the question to be shown")
        _wait_for_status(seen, _is_waiting_status, "the waiting status")
        assert thread.is_alive()  # it cannot end without the lock
        stop.set()
        thread.join(30)  # ends at its next slice, not after the 300 s wait
        assert not thread.is_alive()
        assert _texts(seen[-1])[-1] == "Stopped at your request before it started: no answer."
    finally:
        runtime.lock.release()  # it was never the stopped run's to release
    assert not ENTERED[0].is_set()


def test_a_stop_that_comes_as_the_agent_comes_free_still_ends_the_run_before_it_starts(runtime: Any) -> None:
    """Stop pressed while the run waits, in the same moment the other run ends: the waiter may take the agent in the
    slice it was waiting in, and must then give it back unused (seen in the browser test: the run was stopped only
    after loading the agent, "before its first step")."""
    assert runtime.lock.acquire(timeout=10)  # another visitor's run holds the agent
    stop = runtime.admit("visitor", "ip:a").stop
    thread, seen = _run_in_background(runtime, stop)
    _wait_for_status(seen, _is_waiting_status, "the run to wait")
    stop.set()
    runtime.lock.release()  # the other run ends as the Stop comes
    thread.join(120)
    assert not thread.is_alive()
    assert _texts(seen[-1])[-1] == "Stopped at your request before it started: no answer."
    assert not ENTERED[0].is_set()
    assert runtime.lock.acquire(blocking=False)  # given back
    runtime.lock.release()


def test_stop_during_set_up_ends_before_the_first_step(runtime: Any) -> None:
    """Stop pressed while the agent is being prepared (loading a local model takes seconds): no model call."""
    stop = runtime.admit("visitor", "ip:a").stop
    prepare = runtime.prepared

    def prepared_then_stopped(name: str, spec: str) -> Any:
        agent = prepare(name, spec)
        stop.set()
        return agent

    runtime.prepared = prepared_then_stopped
    thread, seen = _run_in_background(runtime, stop)
    thread.join(120)
    assert _texts(seen[-1])[-1] == "Stopped at your request before its first step: no answer."
    assert not ENTERED[0].is_set()
    assert runtime.lock.acquire(blocking=False)  # released by the run's thread
    runtime.lock.release()


def test_stop_reaches_only_the_visitor_who_asked(runtime: Any) -> None:
    mine, other = runtime.admit("visitor-a", "ip:a"), runtime.admit("visitor-b", "ip:b")
    assert runtime.request_stop("visitor-c") is False  # a session with no run
    assert runtime.request_stop("visitor-b") is True
    assert other.stop.is_set() and not mine.stop.is_set()
    assert runtime.claim("visitor-a", "ip:a") is mine  # the handler takes the run its click admitted, with its flag
    runtime.finish(mine)
    assert runtime.request_stop("visitor-a") is False  # ended: nothing left to stop
    made = runtime.claim("visitor-a", "ip:a")  # an API call has no click: its handler admits the run
    assert made is not mine and runtime.request_stop("visitor-a") is True and made.stop.is_set()


def test_other_sessions_cannot_push_a_visitors_run_out(runtime: Any) -> None:
    """The issue's attack: thousands of clicks from fresh sessions (and addresses) are refused, and the visitor's run
    keeps its place, so their Stop still stops it."""
    from madqa.space.agent_runtime import MAX_WAITING_RUNS, RunRefused

    mine = runtime.claim("visitor", "hf:visitor")
    refused = 0
    for i in range(5000):
        try:
            runtime.admit(f"attacker-{i}", f"ip:10.0.{i // 250}.{i % 250}")
        except RunRefused as exc:
            assert "the agent is busy" in str(exc)
            refused += 1
    assert refused == 5000 - MAX_WAITING_RUNS  # the first ones wait; none of the rest is admitted, none evicts
    assert runtime.request_stop("visitor") is True and mine.stop.is_set()
    assert runtime.waiting() == MAX_WAITING_RUNS + 1


def test_one_run_per_client_and_a_bounded_queue(runtime: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from madqa.space import agent_runtime
    from madqa.space.agent_runtime import RunRefused

    monkeypatch.setattr(agent_runtime, "MAX_WAITING_RUNS", 2)
    first = runtime.claim("a-tab-1", "ip:a")  # its handler runs (waiting for the agent or running it)
    with pytest.raises(RunRefused, match="you already have a run queued or running"):
        runtime.admit("a-tab-2", "ip:a")  # the same client from another tab
    with pytest.raises(RunRefused, match="you already have a run queued or running"):
        runtime.admit("a-tab-1", "ip:other")  # the same session under another address
    clicked = runtime.admit("b", "ip:b")  # a click whose handler has not started yet ...
    runtime.admit("b-tab-2", "ip:b")  # ... is replaced by its own client's newer click: still one place per client
    assert runtime.request_stop("b") is False and not clicked.stop.is_set()
    runtime.admit("c", "ip:c")
    with pytest.raises(RunRefused, match=r"the agent is busy \(3 runs are running or waiting"):
        runtime.admit("d", "ip:d")
    with pytest.raises(RunRefused, match="the agent is busy"):
        runtime.claim("d", "ip:d")  # an API call is refused the same way, in its handler
    runtime.finish(first)  # a run ends: its client and its place are free again
    runtime.claim("a-tab-2", "ip:a")
    with pytest.raises(RunRefused, match="the agent is busy"):
        runtime.admit("d", "ip:d")
    with pytest.raises(RunRefused, match="you already have a run queued or running"):
        runtime.claim("a-tab-3", "ip:a")  # a run whose handler started is never replaced


def test_a_click_whose_handler_never_comes_gives_its_place_back(runtime: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A click admitted but never followed by its handler (the page closed at once, or a client calling only the
    click's hidden handler) holds its place for CLAIM_WAIT_S only; a claimed run keeps its place however long."""
    from madqa.space import agent_runtime
    from madqa.space.agent_runtime import CLAIM_WAIT_S, RunRefused

    monkeypatch.setattr(agent_runtime, "MAX_WAITING_RUNS", 1)
    now = [1000.0]
    runtime.clock = lambda: now[0]
    running = runtime.claim("running", "ip:a")
    runtime.admit("clicked", "ip:b")
    now[0] += CLAIM_WAIT_S  # not yet past its time
    with pytest.raises(RunRefused, match="the agent is busy"):
        runtime.admit("late", "ip:c")
    now[0] += 1.0
    assert runtime.admit("late", "ip:c").session == "late"  # the unclaimed click was dropped, the running run kept
    assert runtime.request_stop("clicked") is False and runtime.request_stop("running") is True
    assert running.stop.is_set()


def test_stop_during_the_last_model_call_says_it_came_too_late(runtime: Any) -> None:
    """Stop pressed while the model's final call is pending: the answer that call brings is shown as given before
    Stop took effect, and the run's last message says Stop came too late (never a normal finish)."""
    from madqa.space.agent_tab import TOO_LATE

    stop = runtime.admit("visitor", "ip:a").stop
    thread, seen = _run_in_background(runtime, stop)
    GATES[0].set()  # step 1: the search
    assert ENTERED[1].wait(120), "the answering model call never started"
    assert runtime.request_stop("visitor") is True
    GATES[1].set()  # the pending call returns with the final answer
    thread.join(120)
    assert not thread.is_alive()
    final = _texts(seen[-1])
    assert final[-1] == TOO_LATE
    assert any(t.startswith(f"**Answer given before your Stop took effect:** {ANSWER}") for t in final)
    assert not any("Final answer" in t for t in final)
    assert not ENTERED[2].is_set()


def test_a_visitor_who_leaves_frees_the_agent_at_the_next_step(runtime: Any) -> None:
    """Gradio closes the handler's generator when the page goes away: the run stops after the pending call."""
    from madqa.space.agent_tab import BM25, run_agent

    run = run_agent(runtime, {}, None, "What is the total of the invoice?", BM25, SPEC)
    next(run)  # the question is shown; the next item is the first status line, a second later
    next(run)
    assert ENTERED[0].wait(120), "the first model call never started"
    run.close()  # the visitor left
    GATES[0].set()  # the pending call returns
    assert runtime.lock.acquire(timeout=60)  # released by the run's thread, not after a second call (gate shut)
    runtime.lock.release()
    assert not ENTERED[1].is_set()  # no model call for nobody


def _sandbox_children() -> list[int]:
    """This process's child processes that run the REPL worker's sandbox script."""
    from madqa.agents.sandbox.worker import SANDBOX_SCRIPT

    pids = [int(p) for t in Path("/proc/self/task").iterdir() for p in (t / "children").read_text().split()]
    found = []
    for pid in pids:
        try:
            if str(SANDBOX_SCRIPT).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:  # gone meanwhile
            pass
    return found


def test_stop_ends_the_repl_workers_process(runtime: Any) -> None:
    """Stopping the code-REPL agent leaves no worker process (model-written code's home) behind."""
    from madqa.agents.harness.protocol import AgentUnavailableError
    from madqa.space.agent_tab import REPL, run_agent

    try:
        runtime.prepared("repl", SPEC)
    except AgentUnavailableError as exc:  # the tab refuses the agent on such a host (tested elsewhere)
        pytest.skip(f"this host cannot wall the REPL worker: {exc}")
    stop = runtime.admit("visitor", "ip:a").stop
    seen: list[list[Any]] = []
    thread = threading.Thread(
        target=lambda: seen.extend(run_agent(runtime, {}, None, "Q?", REPL, SPEC, stop)), daemon=True
    )
    thread.start()
    assert ENTERED[0].wait(120), "the first model call never started"
    assert _sandbox_children(), "the REPL worker is not running during the run"
    stop.set()
    GATES[0].set()  # the call returns: its code runs in the worker, then the run stops
    thread.join(120)
    final = _texts(seen[-1])
    assert any("print(documents[0])" in t for t in final)
    assert final[-1] == "Stopped at your request after step 1: no answer."
    assert _sandbox_children() == []  # the worker was closed with the run, not left for garbage collection
