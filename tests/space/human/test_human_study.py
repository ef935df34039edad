"""The pure layer of `madqa human`: batches, one question's trajectory and its results line, resume, kill -9
safety, file ownership and locking (no gradio, no dataset: a fake index and renderer)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.paths import TESTS

from madqa.agents.corpus.search import PageHit, QuerySyntaxError
from madqa.metric.inputs import parse_results_text
from madqa.space.human.batches import BatchError, code_name, find_batch, make_batches
from madqa.space.human.corpus import HumanCorpus
from madqa.space.human.registry import StudyRegistry
from madqa.space.human.service import HumanService, StudyPlan
from madqa.space.human.session import parse_answer_text
from madqa.space.human.study import StudyError, StudyRun, StudySettings, default_output

QUESTIONS = [{"id": f"q{i}", "question": f"Question {i}?", "answer_variants": [["SECRET"]]} for i in range(1, 4)]


class FakeIndex:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def search(self, query: str, k: int = 5) -> list[PageHit]:
        self.calls.append((query, k))
        if query.startswith("(("):
            raise QuerySyntaxError(query, "cannot parse")
        if query == "nothing":
            return []
        return [PageHit("a.pdf", 1, 2.0), PageHit("b.pdf", 2, 1.0)][:k]


class FakeRenderer:
    def image(self, document: str, page: int):  # noqa: ANN201
        from PIL import Image

        return Image.new("RGB", (8, 8))


class Clock:
    """One second per reading, from a fixed moment."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def corpus(k: int = 5) -> HumanCorpus:
    return HumanCorpus(FakeIndex(), FakeRenderer(), FakeRenderer(), {"a.pdf": 3, "b.pdf": 2}, k=k)  # type: ignore[arg-type]


def plan(tmp_path: Path, split: str = "dev", mode: str = "search", **kw) -> StudyPlan:
    batches = tuple(make_batches([q["id"] for q in QUESTIONS], size=25))
    questions = {q["id"]: {"id": q["id"], "question": q["question"]} for q in QUESTIONS}
    kw.setdefault("out_dir", tmp_path)
    return StudyPlan(
        split=split,
        mode=mode,
        batches=batches,
        questions=questions,
        dataset={"name": "sample", "revision": "r1"},
        config={"seed": 1},
        **kw,
    )


def open_run(path: Path, annotator: str = "ann", clock=None) -> StudyRun:  # noqa: ANN001
    return StudyRun(
        QUESTIONS,
        path,
        annotator=annotator,
        batch="Andromeda",
        settings=StudySettings(split="dev", dataset={"name": "sample", "revision": "r1"}),
        clock=clock or Clock(),
    )


# -- batches ---------------------------------------------------------------------------------------------------


def test_batches_are_seeded_stable_and_cut_in_25() -> None:
    ids = [f"id{i:03d}" for i in range(60)]
    first = make_batches(ids)
    assert [len(b.ids) for b in first] == [25, 25, 10]
    assert [b.name for b in first] == ["Andromeda", "Aquarius", "Aries"]
    assert make_batches(list(reversed(ids))) == first  # reading order does not matter
    assert sorted(i for b in first for i in b.ids) == ids  # a partition
    assert make_batches(ids, seed=7) != first
    assert first[0].ids != tuple(sorted(first[0].ids))  # shuffled, not cut in id order
    assert code_name(40) == "Andromeda-2"
    assert find_batch(first, "aquarius").name == "Aquarius"
    with pytest.raises(BatchError, match="Andromeda, Aquarius, Aries"):
        find_batch(first, "Orion")


def test_answer_text_is_a_list_answer() -> None:
    assert parse_answer_text("  12 ft \n\n16 ft\n ") == ["12 ft", "16 ft"]
    assert parse_answer_text("") == []


# -- one question's line ---------------------------------------------------------------------------------------


def test_trajectory_is_logged_field_by_field(tmp_path: Path) -> None:
    service = HumanService(plan(tmp_path), corpus(k=1), clock=Clock())
    run = service.start("ann", "Andromeda")
    assert run.path == default_output(tmp_path, "dev", "Andromeda", "ann")
    qid = run.current_item()["id"]
    assert set(run.current_item()) == {"id", "question"}  # no label of the row travels with the run
    assert service.search(run, "water AND rate*").pages == (("a.pdf", 1),)  # k = 1 is passed to the engine
    assert service.search(run, "((x").error == "cannot parse"
    assert service.search(run, "nothing").pages == ()
    assert service.view(run, "a.pdf", 1, "result") == ("a.pdf", 1)
    assert service.view(run, "a.pdf", 99, "last") == ("a.pdf", 3)  # clamped into the document
    assert service.view(run, "missing.pdf", 1, "jump") is None
    assert service.cite(run, "a.pdf", 1, True) and service.cite(run, "a.pdf", 3, True)
    assert not service.cite(run, "a.pdf", 3, True)  # no duplicate citation
    assert service.cite(run, "a.pdf", 1, False)
    record, feedback = service.submit(run, qid, "first\n second \n")
    assert feedback is None  # the plan holds no gold: nothing to reveal
    assert record is not None
    assert [(s["query"], s["count"], s["results"]) for s in record["search_history"]] == [
        ("water AND rate*", 1, [{"document": "a.pdf", "page": 1}]),
        ("nothing", 0, []),
    ]
    assert [(s["query"], s["error"]) for s in record["refused_searches"]] == [("((x", "cannot parse")]
    assert record["search_history"][1]["error"]  # no page found: a search, with the engine's message
    stamps = [
        record["started_at"],
        *(s["timestamp"] for s in record["search_history"][:1]),
        *(s["timestamp"] for s in record["refused_searches"]),
        record["search_history"][1]["timestamp"],
        *(v["timestamp"] for v in record["page_views"]),
        record["ended_at"],
    ]
    assert stamps == sorted(stamps) and stamps[0] == "2026-01-02T03:04:06.000Z"
    assert [(v["document"], v["page"], v["via"]) for v in record["page_views"]] == [
        ("a.pdf", 1, "result"),
        ("a.pdf", 3, "last"),
    ]
    assert record["citations"] == [{"document": "a.pdf", "page": 3}]
    assert record["answer"] == ["first", "second"]
    assert record["steps"] == 2 and record["system_type"] == "human" and record["annotator"] == "ann"
    assert record["dataset"] == {"name": "sample", "revision": "r1"} and record["final_state"] == "answered"
    assert record["elapsed_s"] > 0
    line = run.path.read_text(encoding="utf-8")
    assert json.loads(line) == record
    [pred] = parse_results_text(line, "x")  # the metric reads it like an agent's line
    assert pred.answer == ("first", "second") and pred.steps == 2


def test_give_up_and_stale_submit_write_nothing_twice(tmp_path: Path) -> None:
    run = open_run(tmp_path / "r.jsonl")
    q1 = run.current_item()["id"]
    record = run.submit(q1, ["ignored"], gave_up=True)
    assert record is not None and record["answer"] == [] and record["final_state"] == "gave_up"
    assert run.submit(q1, ["again"]) is None  # a double click / a stale tab
    assert len(run.path.read_text().splitlines()) == 1 and run.position() == 2


# -- resume, kill -9, ownership ----------------------------------------------------------------------------------


def test_resume_at_first_unanswered_and_repair_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    run = open_run(path)
    run.submit("q1", ["a"])
    run.close()
    with open(path, "ab") as fh:
        fh.write(b'{"id": "q2", "answer": ["half')  # a kill in the middle of a write
    run = open_run(path)
    assert run.position() == 2 and run.current_item()["id"] == "q2"
    run.submit("q2", ["b"])
    run.submit("q3", ["c"])
    assert run.done and run.current_item() is None and run.session() is None
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == ["q1", "q2", "q3"]


CHILD = textwrap.dedent("""
    import sys, time
    sys.path[:0] = [{here!r}, {tests!r}]
    from test_human_study import open_run
    from pathlib import Path
    run = open_run(Path({path!r}))
    for _ in range(2):
        item = run.current_item()
        run.submit(item["id"], ["x"])
    run.session().record_search("in progress", [])
    print("READY", flush=True)
    time.sleep(60)
""")


def test_kill_9_mid_batch_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "k.jsonl"
    code = CHILD.format(here=str(Path(__file__).parent), tests=str(TESTS), path=str(path))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "READY"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    run = open_run(path)  # the kernel dropped the dead process's lock
    assert set(run.answered) == {"q1", "q2"} and run.current_item()["id"] == "q3"
    run.submit("q3", ["y"])
    ids = [json.loads(x)["id"] for x in path.read_text().splitlines()]
    assert ids == ["q1", "q2", "q3"]


def test_files_are_locked_and_owned(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    run = open_run(path, "alice")
    with pytest.raises(StudyError, match="in use"):
        open_run(path, "alice")  # a second process (or server) on the same file
    run.submit("q1", ["a"])
    run.close()
    with pytest.raises(StudyError, match="annotator 'alice'"):
        open_run(path, "bob")
    with pytest.raises(StudyError, match="not valid"):
        open_run(tmp_path / "x.jsonl", "../etc")


def test_registry_shares_a_run_per_file_and_keeps_annotators_apart(tmp_path: Path) -> None:
    service = HumanService(plan(tmp_path), corpus())
    alice, again, bob = (
        service.start("alice", "Andromeda"),
        service.start("alice", "andromeda"),
        service.start("bob", "Andromeda"),
    )
    assert alice is again and alice is not bob and alice.path != bob.path
    service.search(alice, "water")
    assert bob.session().searches == [] and len(again.session().searches) == 1  # a reload keeps the searches
    registry = StudyRegistry()
    registry.open(tmp_path / "s.jsonl", "ann", "Andromeda", lambda: open_run(tmp_path / "s.jsonl"))
    with pytest.raises(StudyError, match="not yours"):
        registry.open(tmp_path / "s.jsonl", "eve", "Andromeda", lambda: open_run(tmp_path / "s.jsonl", "eve"))
    registry.close()
    service.close()


def test_a_run_kept_in_memory_logs_a_bounded_number_of_actions(tmp_path: Path) -> None:
    """The Space's practice runs (no file) stop logging at the cap, across questions; a study's file-backed run
    logs everything. Attack: an endless loop of searches and page turns on one visitor's run."""
    from madqa.space.human.session import MEMORY_RUN_MAX_ACTIONS

    service = HumanService(plan(tmp_path, out_dir=None), corpus())
    run = service.start("visitor-1", "Andromeda")
    assert run.path is None and run.max_actions == MEMORY_RUN_MAX_ACTIONS
    run.max_actions = 5  # before its first question's session starts
    for _ in range(2):
        assert service.search(run, "water").error is None
    service.view(run, "a.pdf", 1, "result")
    first = run.current_item()["id"]  # type: ignore[index]
    assert service.submit(run, first, "an answer")[0] is not None  # 3 of 5 used by the first question
    service.search(run, "water")
    assert service.view(run, "a.pdf", 2, "next") == ("a.pdf", 2)  # the 5th action: logged
    calls = len(service.corpus.index.calls)  # type: ignore[union-attr]
    refused = service.search(run, "water")
    assert refused.pages == () and "5 searches and page views" in (refused.error or "")
    assert len(service.corpus.index.calls) == calls  # type: ignore[union-attr]  # refused before searching
    assert service.view(run, "a.pdf", 3, "next") == ("a.pdf", 3)  # still shown, no longer logged
    session = run.session()
    assert session is not None and session.actions() == 2 and session.full
    assert service.submit(run, session.id, "x")[0] is not None
    lines = [json.loads(x) for x in run.jsonl().splitlines()]
    assert sum(len(x["search_history"]) + len(x["page_views"]) for x in lines) == 5
    file_run = HumanService(plan(tmp_path), corpus()).start("ann", "Andromeda")
    assert file_run.max_actions is None
    for _ in range(8):
        file_run.session().record_search("water", [])  # type: ignore[union-attr]
    assert file_run.path is not None and file_run.session().actions() == 8  # type: ignore[union-attr]
    file_run.close()
    service.close()


def test_an_overlong_query_is_refused_and_logged_only_up_to_the_engine_limit(tmp_path: Path) -> None:
    """Attack: a megabyte posted as a query, over and over: each logged search stays small."""
    from madqa.agents.corpus.search import MAX_QUERY_CHARS, open_index

    index = open_index([{"document": "a.pdf", "page": 1, "text": "water rates"}], tmp_path / "idx", progress=False)
    real = HumanCorpus(index, FakeRenderer(), FakeRenderer(), {"a.pdf": 1})  # type: ignore[arg-type]
    service = HumanService(plan(tmp_path, out_dir=None), real)
    run = service.start("visitor-2", "Andromeda")
    outcome = service.search(run, "water " * 200_000)
    assert outcome.pages == () and f"at most {MAX_QUERY_CHARS}" in (outcome.error or "")
    [logged] = run.session().refused  # type: ignore[union-attr]  # refused: no search, no step
    assert len(logged["query"]) == MAX_QUERY_CHARS and logged["error"] == outcome.error
    assert len(logged["error"]) < 300  # the engine's message does not repeat the query
    assert service.search(run, "water").pages == (("a.pdf", 1),)
    service.close()


def test_a_step_that_stays_on_the_page_in_view_is_not_a_page_view(tmp_path: Path) -> None:
    service = HumanService(plan(tmp_path), corpus())
    run = service.start("ann", "Andromeda")
    assert service.view(run, "b.pdf", 2, "result") == ("b.pdf", 2)
    assert service.view(run, "b.pdf", 3, "next", shown=("b.pdf", 2)) is None  # Next on the last page
    assert service.view(run, "b.pdf", 2, "last", shown=("b.pdf", 2)) is None
    assert service.view(run, "b.pdf", 9, "jump", shown=("b.pdf", 2)) is None  # clamped onto the page in view
    assert service.view(run, "b.pdf", 1, "previous", shown=("b.pdf", 2)) == ("b.pdf", 1)
    assert service.view(run, "b.pdf", 1, "result", shown=("b.pdf", 1)) == ("b.pdf", 1)  # a result is a view
    assert service.view(run, "nope.pdf", 1, "result") is None
    session = run.session()
    assert session is not None
    assert [(v["page"], v["via"]) for v in session.snapshot()["page_views"]] == [
        (2, "result"),
        (1, "previous"),
        (1, "result"),
    ]
    service.close()


def test_registry_drops_the_run_used_longest_ago(tmp_path: Path) -> None:
    registry = StudyRegistry(max_memory_runs=2)

    def memory_run(name: str) -> StudyRun:
        return registry.open(
            None,
            name,
            "Andromeda",
            lambda: StudyRun(QUESTIONS, None, annotator=name, batch="Andromeda", settings=StudySettings(split="dev")),
        )

    a, _b = memory_run("a"), memory_run("b")
    assert memory_run("a") is a  # a comes back: b is now the oldest
    memory_run("c")
    assert memory_run("a") is a and memory_run("b") is not _b  # b was dropped, a kept


def test_registry_limits_new_runs_per_client_and_drops_only_a_fair_share(tmp_path: Path) -> None:
    """The policy of the practice tab's registry, on a fake clock (the API attack is
    tests/space/human/test_practice_keys.py):
    new runs per client and window, re-attaching is free, a full registry drops the run of the client holding the
    most, and a fresh run of a one-run client is never dropped for a newcomer (who is refused instead)."""
    from madqa.space.human.registry import RunLimitError, new_visitor_key, visitor_name

    now = [0.0]
    registry = StudyRegistry(max_memory_runs=3, new_runs_per_client=2, window_s=100, fresh_s=50, clock=lambda: now[0])

    def run(key: str, client: str | None) -> StudyRun:
        return registry.open(
            None,
            visitor_name(key),
            "Andromeda",
            lambda: StudyRun(
                QUESTIONS, None, annotator=visitor_name(key), batch="Andromeda", settings=StudySettings(split="dev")
            ),
            key=key,
            client=client,
        )

    a = run("ka", "A")
    b1 = run("kb1", "B")
    run("kb2", "B")
    with pytest.raises(RunLimitError, match="at most 2 per 100 s"):
        run("kb3", "B")
    assert run("kb1", "B") is b1 and registry.memory_runs() == 3  # coming back is not a new run
    now[0] = 101  # B's starts left the window
    run("kb3", "B")  # full, and B holds the most: B's own run used longest ago goes
    assert registry.find("kb2", "Andromeda") is None and registry.find("kb1", "Andromeda") is b1
    assert registry.find("ka", "Andromeda") is a
    run("kc", "C")  # a newcomer: the client holding the most (B, 2 runs) loses its run used longest ago
    assert not registry.holds("kb3") and registry.holds("kb1") and registry.holds("ka")  # kb1 was used since
    with pytest.raises(RunLimitError, match="the practice tab is full"):
        run("kd", "D")  # every other client holds one run, the eldest used 0 s ago
    now[0] = 152
    run("kd", "D")  # the eldest (kb1) is now idle for 51 s
    assert not registry.holds("kb1") and registry.holds("kd") and registry.find("ka", "Andromeda") is a
    assert not registry.holds(visitor_name("kd")) and registry.memory_runs() == 3
    for n in range(5):  # a trusted caller (no client) has no limit of new runs
        run(f"local{n}", None)
    key = new_visitor_key()
    assert len(key) >= 22 and key != new_visitor_key() and key not in visitor_name(key)  # >= 128 bits
    assert visitor_name(key) == visitor_name(key) and len(visitor_name(key)) == len("visitor-") + 12


def test_registry_remembers_a_bounded_number_of_clients(monkeypatch) -> None:
    """Attack: a new address for every Start (IPv6 rotation): the registry's memory of clients stays bounded."""
    import madqa.space.human.registry as registry_module

    monkeypatch.setattr(registry_module, "MAX_TRACKED_CLIENTS", 300)
    registry = StudyRegistry(max_memory_runs=4, new_runs_per_client=1, fresh_s=0)
    for n in range(1000):
        key = f"k{n}"
        registry.open(
            None,
            key,
            "Andromeda",
            lambda key=key: StudyRun(
                QUESTIONS, None, annotator=key, batch="Andromeda", settings=StudySettings(split="dev")
            ),
            key=key,
            client=f"ip:2001:db8::{n:x}",
        )
    assert len(registry._starts) <= 301 and registry.memory_runs() == 4


def test_fixed_annotator_and_output(tmp_path: Path) -> None:
    service = HumanService(plan(tmp_path, annotator="me", output=tmp_path / "me.jsonl"), corpus())
    assert service.start("", "Andromeda").path == tmp_path / "me.jsonl"
    with pytest.raises(StudyError, match="for annotator 'me'"):
        service.start("someone", "Andromeda")
    service.close()


def test_oracle_shows_exactly_the_evidence(tmp_path: Path) -> None:
    evidence = {
        "q1": [{"document": "b.pdf", "page": 2}],
        "q2": [{"document": "a.pdf", "page": 1}, {"document": "a.pdf", "page": 3}],
        "q3": [],
    }
    service = HumanService(plan(tmp_path, mode="oracle", evidence=evidence), corpus())
    run = service.start("ann", "Andromeda")
    qid = run.current_item()["id"]
    assert service.oracle_pages(run) == [(e["document"], e["page"]) for e in evidence[qid]]
    record, _ = service.submit(run, qid, "x")
    assert record["mode"] == "oracle" and run.path.name.endswith("-oracle-ann.jsonl")
    service.close()
