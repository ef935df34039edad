"""Human runs in the Space: leaderboard rows labelled `human` and filterable; the "Solve it yourself" tab
(practice on dev, answers kept in memory only, gold shown after each answer)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.clients import gradio_client
from helpers.practice_tab import embedded_practice

pytestmark = pytest.mark.server

pytest.importorskip("gradio")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def test_human_submissions_are_labelled_and_filterable(layout, tmp_path: Path) -> None:
    from madqa.space.identity import clean_form
    from madqa.space.leaderboard import board_frame, filter_board
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer, results_system_type

    rows = [json.loads(x) for x in layout.test_labels.read_text(encoding="utf-8").splitlines() if x.strip()]
    store = SubmissionStore(tmp_path / "db.sqlite")
    scorer = Scorer.from_labels(layout.test_labels, store, n_resamples=20)
    human = "".join(
        json.dumps(
            {
                "id": r["id"],
                "answer": r["answer_variants"][0],
                "system_type": "human",
                "annotator": "a1",
                "search_history": [],
            }
        )
        + "\n"
        for r in rows
    )
    agent = "".join(json.dumps({"id": r["id"], "answer": ["no"], "steps": 1}) + "\n" for r in rows)
    mixed = human.replace('"system_type": "human"', '"system_type": "agent"', 1)
    assert [results_system_type(t) for t in (human, agent, mixed)] == ["human", "agent", "agent"]
    form = {
        "system": "people",
        "submitter": "lab",
        "agent": "human",
        "model": "none",
        "contact": "x@y.z",
        "models_used": "none",
        "training_data": "none",
        "compute": "hours",
    }
    scorer.submit_text(human, clean_form(form))
    scorer.submit_text(agent, clean_form({**form, "system": "bot", "agent": "bm25"}))
    board = board_frame(store.submissions())
    assert dict(zip(board["System"], board["Type"], strict=True)) == {"people": "human", "bot": "agent"}
    assert list(filter_board(board, "human")["System"]) == ["people"]  # "Human" in a name would match too


def test_practice_tab_stores_nothing_and_shows_the_gold(layout, tmp_path: Path, monkeypatch) -> None:
    import gradio as gr

    from madqa.space.human.corpus import HumanCorpus
    from madqa.space.human.practice import build_practice_tab
    from madqa.space.human.service import HumanService, build_plan

    monkeypatch.chdir(tmp_path)
    with gr.Blocks() as space_like:
        practice = build_practice_tab(None)  # what the Space's tab builds: hidden handlers, lazy corpus
    assert practice is not None and practice.plan.practice and practice.output_for("visitor-1", "Andromeda") is None
    visit = practice.start("visitor-1", "Andromeda")
    practice.submit(visit, visit.current_item()["id"], "an answer")
    assert visit.path is None and len(visit.lines) == 1  # kept in memory: nothing is written anywhere
    elem_ids = {c.elem_id for c in space_like.blocks.values()}
    assert {"start", "results", "viewer", "download"} <= elem_ids
    assert all(dep.api_visibility != "public" for dep in space_like.fns.values())  # nothing on the Space's API

    opened: list[bool] = []

    def corpus() -> HumanCorpus:
        opened.append(True)
        return HumanCorpus.open(None)

    service = HumanService(build_plan("dev", out_dir=None), corpus)
    assert not opened  # the index is opened on first use, not when the Space starts
    with embedded_practice(service) as url:
        client = gradio_client(url)
        first = client.predict("Andromeda", api_name="/h_start")
        assert any(isinstance(v, str) and "Question 1 of 25" in v for v in first)
        client.predict("riverton water", api_name="/h_search")
        after = client.predict("12 ft by 16 ft", api_name="/h_submit")
        assert any(isinstance(v, str) and "Gold answer" in v for v in after)  # practice feedback on dev
    [run] = list(service.registry._runs.values())
    assert run.path is None and run.annotator.startswith("visitor-") and len(run.lines) == 1
    assert json.loads(run.jsonl())["search_history"][0]["query"] == "riverton water"
    assert opened == [True]
    assert not [p for p in tmp_path.rglob("*.jsonl")] and not list(layout.root.rglob("human-*.jsonl"))


def test_the_new_runs_limit_is_read_from_the_environment(layout, monkeypatch, caplog) -> None:
    from madqa.space.human.practice import ENV_NEW_RUNS, new_runs_per_hour
    from madqa.space.human.registry import NEW_RUNS_PER_CLIENT

    assert new_runs_per_hour({}) == NEW_RUNS_PER_CLIENT == 20
    assert new_runs_per_hour({ENV_NEW_RUNS: " 5 "}) == 5 and new_runs_per_hour({ENV_NEW_RUNS: "0"}) == 0
    assert new_runs_per_hour({ENV_NEW_RUNS: "-3"}) == NEW_RUNS_PER_CLIENT and ENV_NEW_RUNS in caplog.text
    import gradio as gr

    from madqa.space.human.practice import build_practice_tab

    monkeypatch.setenv(ENV_NEW_RUNS, "7")
    with gr.Blocks():
        practice = build_practice_tab(None)
    assert practice is not None and practice.registry.new_runs_per_client == 7


def test_practice_actions_are_queued_with_a_shared_limit(layout) -> None:
    """Attack: many visitors (or one script with many sessions) fire searches at once at the Space's practice tab.
    At most ``PUBLIC_ACTIONS_CONCURRENCY`` run at a time; the rest wait in the queue and are all answered. The
    standalone study app keeps the unqueued fast path (its annotators are the study's own)."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from madqa.space.human.app import PUBLIC_ACTIONS_CONCURRENCY, build_human_app
    from madqa.space.human.corpus import HumanCorpus
    from madqa.space.human.service import HumanService, build_plan

    corpus = HumanCorpus.open(None)
    search = corpus.search
    lock, running, peak = threading.Lock(), [0], [0]

    def slow_search(query: str):  # noqa: ANN202
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            time.sleep(0.4)
            return search(query)
        finally:
            with lock:
                running[0] -= 1

    corpus.search = slow_search  # type: ignore[method-assign]
    service = HumanService(build_plan("dev", out_dir=None), corpus)
    visitors = 6
    with embedded_practice(service, default_concurrency_limit=8) as url:
        clients = [gradio_client(url) for _ in range(visitors)]
        for c in clients:
            c.predict("Andromeda", api_name="/h_start")

        def visit(c: Any) -> str:  # the search message among the outputs
            return " ".join(v for v in c.predict("riverton water", api_name="/h_search") if isinstance(v, str))

        with ThreadPoolExecutor(visitors) as pool:
            messages = list(pool.map(visit, clients))
    assert all("page(s) for" in m for m in messages), messages
    assert peak[0] == PUBLIC_ACTIONS_CONCURRENCY  # the limit was reached and never passed
    standalone = build_human_app(HumanService(build_plan("dev", out_dir=None), corpus))
    searches = [d for d in standalone.fns.values() if d.api_name == "search"]
    assert searches and all(d.queue is False for d in searches)
    service.close()
