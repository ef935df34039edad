"""The "Try an agent" tab in headless Chromium (issue 24, item 3), driven by a scripted model that waits on gates:
while a model call is pending the tab shows which step waits and for how long, the Run button is disabled, each
search's query is shown open (not folded away), and Run comes back when the answer is in; Stop, pressed while a
call is pending, ends the run when that call returns. A second run of one client, and a run past the queue's bound,
are refused at the click with a message (issue 39, item 4).

Visitors are told apart by address: the Space believes ``X-Forwarded-For`` from 127.0.0.1 here (its trusted proxy,
as on a Space), and each page sends the address it plays."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.browser_support import browser_page, chromium, require_browser, save_screens, watched_page  # noqa: E402
from helpers.fakes import ScriptedModel, search_then_cite  # noqa: E402
from helpers.launched_space import launched_space  # noqa: E402

pytestmark = pytest.mark.browser

sync_api = require_browser()

SPEC = "py:test_space_agent_browser:gated_model"
QUERY = "riverton OR invoice OR report"
ANSWER = "gated-answer-42"
#: One gate per model call: call N waits until ``GATES[N - 1]`` is set (the test opens them one by one); each test
#: sets fresh gates. ``CALLS`` counts the calls made.
GATES = [threading.Event(), threading.Event()]
CALLS: list[int] = []
#: How long a model call waits for its gate: only a bound on a broken test (the fixture opens every gate at the end),
#: generous so that no machine's load (the flood test's thousand requests) ends a call before the test opens it.
GATE_WAIT_S = 900
#: The launched app (the flood test finds the Run click's handler in it).
APP: dict[str, Any] = {}


def gated_reply(text: str, tools: list[str]) -> Any:
    gate = GATES[0] if not GATES[0].is_set() else GATES[1]
    CALLS.append(1)
    if not gate.wait(timeout=GATE_WAIT_S):
        raise RuntimeError("the test never opened the gate")
    return search_then_cite(ANSWER, QUERY)(text, tools)


def gated_model(**_: Any) -> ScriptedModel:
    return ScriptedModel([gated_reply], text_only=True, usage=None, model_id="gated")


@pytest.fixture(scope="module")
def url(layout, tmp_path_factory) -> Iterator[str]:
    env = {"MADQA_SPACE_AGENT_MODEL": SPEC, "MADQA_SPACE_TRUSTED_PROXIES": "127.0.0.1"}
    with launched_space(layout.root, tmp_path_factory.mktemp("space_agent_ui"), env) as (address, demo):
        APP["demo"] = demo
        try:
            yield address
        finally:
            for gate in GATES:  # never leave the agent's thread waiting
                gate.set()


def _open_agent_tab(page: Any, url: str) -> None:
    """The Space at ``url`` on its "Try an agent" tab, once the Run button is there."""
    page.goto(url, timeout=60_000)
    page.get_by_role("tab", name="Try an agent").click()
    page.locator("#run-agent").wait_for(timeout=30_000)


def _run_to_first_call(page: Any) -> None:
    """Press Run and wait until the run's first model call is pending."""
    page.locator("#run-agent").click()
    page.locator("#trajectory").get_by_text("step 1: waiting for the model").first.wait_for(timeout=60_000)


def test_live_status_disabled_run_and_visible_queries(url: str, tmp_path) -> None:
    expect = sync_api.expect
    with browser_page({"width": 1440, "height": 900}) as page:
        _open_agent_tab(page, url)
        run, stop = page.locator("#run-agent"), page.locator("#stop-agent")
        expect(stop).to_be_disabled(timeout=30_000)  # nothing to stop yet
        chat = page.locator("#trajectory")
        run.click()
        # the first model call waits: the tab says so, with a running clock, and Run cannot be pressed again
        status = chat.get_by_text("step 1: waiting for the model")
        status.first.wait_for(timeout=60_000)
        expect(run).to_be_disabled(timeout=30_000)
        expect(stop).to_be_enabled(timeout=30_000)
        first = status.first.inner_text()
        page.wait_for_timeout(2_500)
        assert chat.get_by_text("step 1: waiting for the model").first.inner_text() != first  # the clock moves
        GATES[0].set()
        # the search is shown open: its query is readable without clicking anything
        query = chat.get_by_text(QUERY)
        query.first.wait_for(timeout=60_000)
        assert query.first.is_visible()
        waiting = chat.get_by_text("step 2: waiting for the model").first
        waiting.wait_for(timeout=60_000)
        expect(run).to_be_disabled(timeout=30_000)
        waiting.scroll_into_view_if_needed()
        GATES[1].set()
        chat.get_by_text(f"Final answer: {ANSWER}").first.wait_for(timeout=60_000)
        expect(run).to_be_enabled(timeout=30_000)
        expect(stop).to_be_disabled(timeout=30_000)
        expect(chat.get_by_text("waiting for the model")).to_have_count(0)


def test_stop_ends_the_run_when_the_pending_call_returns(url: str, tmp_path) -> None:
    expect = sync_api.expect
    GATES[:] = [threading.Event(), threading.Event()]
    CALLS.clear()
    with browser_page({"width": 1440, "height": 900}) as page:
        _open_agent_tab(page, url)
        run, stop, chat = page.locator("#run-agent"), page.locator("#stop-agent"), page.locator("#trajectory")
        _run_to_first_call(page)
        stop.click()
        expect(stop).to_have_text("Stopping…", timeout=30_000)
        expect(stop).to_be_disabled(timeout=30_000)
        # the pending call is not cut: the status says the run stops when it returns
        chat.get_by_text("(stopping when this call returns)").first.wait_for(timeout=30_000)
        expect(run).to_be_disabled(timeout=30_000)
        save_screens(page, "space-agent-stopping-1440", tmp_path)
        GATES[0].set()
        chat.get_by_text("Stopped at your request after step 1: no answer.").wait_for(timeout=60_000)
        expect(run).to_be_enabled(timeout=30_000)
        expect(stop).to_be_disabled(timeout=30_000)
        expect(stop).to_have_text("Stop", timeout=30_000)
        expect(chat.get_by_text("Final answer")).to_have_count(0)
        assert len(CALLS) == 1  # no model call after Stop


def test_stop_while_queued_behind_another_visitor_and_only_for_its_visitor(url: str) -> None:
    """Visitor B presses Run while A's run holds the agent (gradio queues B's run), then Stop: B's run ends before it
    starts, A's run is untouched and answers, and the model is never called for B."""
    expect = sync_api.expect
    GATES[:] = [threading.Event(), threading.Event()]
    CALLS.clear()
    with chromium() as browser:
        (a, a_errors), (b, b_errors) = watched_page(browser), watched_page(browser)  # two sessions
        for page, address in ((a, "10.0.0.1"), (b, "10.0.0.2")):  # two visitors
            page.set_extra_http_headers({"X-Forwarded-For": address})
            _open_agent_tab(page, url)
        _run_to_first_call(a)
        b.locator("#run-agent").click()
        expect(b.locator("#stop-agent")).to_be_enabled(timeout=30_000)
        b.locator("#stop-agent").click()
        expect(b.locator("#stop-agent")).to_have_text("Stopping…", timeout=30_000)
        expect(a.locator("#stop-agent")).to_have_text("Stop", timeout=30_000)  # B's Stop reaches B's run only
        GATES[0].set()
        GATES[1].set()
        a.locator("#trajectory").get_by_text(f"Final answer: {ANSWER}").first.wait_for(timeout=60_000)
        b.locator("#trajectory").get_by_text("Stopped at your request before it started: no answer.").wait_for(
            timeout=60_000
        )
        expect(b.locator("#run-agent")).to_be_enabled(timeout=30_000)
        expect(b.locator("#trajectory").get_by_text("Final answer")).to_have_count(0)
        assert len(CALLS) == 2  # A's two calls; none for B
        assert not a_errors and not b_errors


def test_a_second_run_of_one_client_and_a_run_past_the_queue_are_refused_at_the_click(url: str, monkeypatch) -> None:
    """With room for one waiting run: A runs; A's second tab is refused (one run per client); B's run waits, with a
    status line saying so; C is refused (the queue is full). Each refusal shows at the click, and leaves Run enabled
    and Stop disabled; nothing is run for the refused ones."""
    from madqa.space import agent_runtime

    expect = sync_api.expect
    monkeypatch.setattr(agent_runtime, "MAX_WAITING_RUNS", 1)
    GATES[:] = [threading.Event(), threading.Event()]
    CALLS.clear()
    with chromium() as browser:
        pages = {name: watched_page(browser) for name in ("a", "a2", "b", "c")}
        for name, (page, _) in pages.items():
            page.set_extra_http_headers(
                {"X-Forwarded-For": {"a": "10.0.1.1", "a2": "10.0.1.1", "b": "10.0.1.2", "c": "10.0.1.3"}[name]}
            )
            _open_agent_tab(page, url)
        (a, _), (a2, _), (b, _), (c, _) = pages.values()
        _run_to_first_call(a)
        a2.locator("#run-agent").click()
        mine = "Not started: you already have a run queued or running"
        a2.locator("#trajectory").get_by_text(mine).wait_for(timeout=30_000)
        b.locator("#run-agent").click()
        b.locator("#trajectory").get_by_text("waiting for another visitor's run to end").first.wait_for(timeout=60_000)
        c.locator("#run-agent").click()
        full = "Not started: the agent is busy (2 runs are running or waiting, the most this Space queues)"
        c.locator("#trajectory").get_by_text(full).wait_for(timeout=30_000)
        for refused in (a2, c):
            expect(refused.locator("#run-agent")).to_be_enabled(timeout=30_000)
            expect(refused.locator("#stop-agent")).to_be_disabled(timeout=30_000)
        GATES[0].set()
        GATES[1].set()
        for ran in (a, b):
            ran.locator("#trajectory").get_by_text(f"Final answer: {ANSWER}").first.wait_for(timeout=60_000)
            expect(ran.locator("#run-agent")).to_be_enabled(timeout=30_000)
        for refused, message in ((a2, mine), (c, full)):  # the message stays; nothing ran
            expect(refused.locator("#trajectory").get_by_text(message)).to_have_count(1)
            expect(refused.locator("#trajectory").get_by_text("step 1")).to_have_count(0)
        assert len(CALLS) == 4  # two calls each for A and B; none for the refused clicks
        assert not any(errors for _, errors in pages.values())


FLOOD = 1000


def _run_click(demo: Any) -> tuple[int, Any]:
    """The ``fn_index`` of the Run button's click handler (what a script posts to), and the tab's runtime (its
    closure), which the flood test tidies after itself."""
    for index, block_fn in demo.fns.items():
        fn = block_fn.fn
        if getattr(fn, "__name__", "") == "start" and any(
            getattr(o, "elem_id", None) == "run-agent" for o in block_fn.outputs
        ):
            return index, fn.__closure__[fn.__code__.co_freevars.index("runtime")].cell_contents
    raise AssertionError("no Run click handler in the app")


def test_a_flood_of_clicks_from_other_sessions_does_not_take_a_visitors_stop(url: str) -> None:
    """The issue's attack: while a visitor's run is pending, calls of Run's click handler over plain HTTP, each from a
    new session and a new address (4,200 of them pushed the visitor's flag out of the old table of 4,096 stop flags;
    1,000 here, far past the 3 places the queue has now). The first few take the queue's places, every other call is
    refused, and the visitor's Stop still stops their run."""
    import secrets
    import time

    import httpx

    from madqa.space.agent_runtime import CLAIM_WAIT_S, MAX_WAITING_RUNS

    expect = sync_api.expect
    index, runtime = _run_click(APP["demo"])
    GATES[:] = [threading.Event(), threading.Event()]
    CALLS.clear()
    try:
        with browser_page({"width": 1440, "height": 900}) as page:
            page.set_extra_http_headers({"X-Forwarded-For": "10.0.2.1"})
            _open_agent_tab(page, url)
            stop, chat = page.locator("#stop-agent"), page.locator("#trajectory")
            _run_to_first_call(page)
            answers = []
            # the flood's own length must not expire the admitted places (CLAIM_WAIT_S): on a loaded machine the
            # 1,000 posts took longer, and three more clicks got in; time stands still until the finally below
            frozen = time.monotonic()
            runtime.clock = lambda: frozen
            with httpx.Client(timeout=60) as script:
                for i in range(FLOOD):
                    body = {"data": [], "fn_index": index, "session_hash": secrets.token_hex(8)}
                    address = {"X-Forwarded-For": f"10.9.{i // 250}.{i % 250 + 1}"}
                    answers.append(script.post(f"{url}gradio_api/run/predict", json=body, headers=address).text)
            stop.click()
            expect(stop).to_have_text("Stopping…", timeout=30_000)
            GATES[0].set()
            chat.get_by_text("Stopped at your request after step 1: no answer.").wait_for(timeout=60_000)
            expect(chat.get_by_text("Final answer")).to_have_count(0)
            assert len(CALLS) == 1  # no model call after Stop
            assert sum("Not started: the agent is busy" in a for a in answers) == FLOOD - MAX_WAITING_RUNS
    finally:  # the script's admitted clicks never get a handler: give their places back now, not in CLAIM_WAIT_S
        GATES[0].set()
        runtime.clock = lambda: time.monotonic() + CLAIM_WAIT_S + 1
        try:
            runtime.finish(runtime.admit("tidy", "ip:tidy"))
        finally:
            del runtime.clock
