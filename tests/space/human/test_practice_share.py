"""Sharing a practice run (the Space's "Solve it yourself" tab): opt-in only, dev labels only, scored over the
questions answered, guarded against duplicates, bad names and floods; nothing stored before the visitor shares."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("gradio")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def practice(layout, tmp_path: Path):
    """A dev practice service (in memory, as on the Space) and one visitor's run with two answers."""
    from madqa.space.human.corpus import HumanCorpus
    from madqa.space.human.service import HumanService, build_plan

    plan = build_plan("dev", out_dir=None)
    service = HumanService(plan, lambda: HumanCorpus.open(None))
    run = service.start("visitor-abc", service.batch_names()[0])
    first = run.current_item()
    gold = plan.gold[first["id"]]
    service.search(run, "water")
    service.cite(run, gold["evidence"][0]["document"], int(gold["evidence"][0]["page"]), True)
    service.submit(run, first["id"], "\n".join(gold["answer_variants"][0]))  # right answer, right page
    service.submit(run, run.current_item()["id"], "", gave_up=True)  # "I can't find it"
    return plan, service, run


def test_practice_report_scores_the_answered_questions_only(practice) -> None:
    from madqa.space.human.feedback import practice_report

    plan, _, run = practice
    report = practice_report(run.jsonl(), plan.gold)
    assert report["n"] == 2 and report["missing"] == 0  # the 23 unanswered questions of the batch are not counted
    assert report["accuracy"] == pytest.approx(0.5)  # one right, one empty answer
    assert report["page_f1"] == pytest.approx(0.5 * 2 / (1 + len(plan.gold[run.lines[0]["id"]]["evidence"])))
    assert report["mean_steps"] == pytest.approx(0.5)  # one search, then none
    with pytest.raises(ValueError, match="no answered question"):
        practice_report("", plan.gold)
    hidden = {k: {**v, "answer_variants": [], "evidence": []} for k, v in plan.gold.items()}
    with pytest.raises(ValueError, match="no public labels"):
        practice_report(run.jsonl(), hidden)  # a test row (no labels) is never scored here


def test_shelf_stores_on_share_and_refuses_duplicates_names_and_floods(practice, tmp_path: Path) -> None:
    from madqa.space.human.feedback import practice_report
    from madqa.space.identity import RateLimiter, SubmissionError
    from madqa.space.practice_runs import COLUMNS, PracticeShelf

    plan, service, run = practice
    clock = FakeClock()
    db = tmp_path / "space" / "db.sqlite"
    shelf = PracticeShelf(db, RateLimiter(2, 3600, clock))
    assert list(shelf.frame().columns) == list(COLUMNS) and shelf.frame().empty  # nothing stored before sharing
    text = run.jsonl()
    report = practice_report(text, plan.gold)
    number = shelf.share("  Ada   Lovelace ", text, report, batch=run.batch, identity="ip:1.2.3.4")
    [row] = shelf.frame().to_dict("records")
    assert row["#"] == number and row["Name"] == "Ada Lovelace" and row["Answered"] == 2
    assert row["Accuracy"] == 50.0 and row["Mean searches"] == 0.5 and row["Batch"] == run.batch
    assert [json.loads(x)["id"] for x in shelf.results(number).splitlines()] == [r["id"] for r in run.lines]
    assert (db.stat().st_mode & 0o777) == 0o600  # the identity column is private data

    with pytest.raises(SubmissionError, match=f"already on the practice board as #{number}"):
        shelf.share("Ada again", text, report, batch=run.batch, identity="ip:5.6.7.8")
    for bad, why in (
        ("", "required"),
        ("a\u200bb", "U\\+200B"),
        ("x" * 61, "longer than 60"),
        ("MADQA baselines", "reserved"),
        ("Ｂａｓｅｌｉｎｅ: me", "reserved"),
    ):
        with pytest.raises(SubmissionError, match=why):
            shelf.share(bad, text + "\n", report, batch=run.batch, identity="ip:9.9.9.9")

    service.submit(run, run.current_item()["id"], "three")
    second = shelf.share(
        "Ada", run.jsonl(), practice_report(run.jsonl(), plan.gold), batch=run.batch, identity="ip:1.2.3.4"
    )
    service.submit(run, run.current_item()["id"], "four")
    with pytest.raises(SubmissionError, match="rate limit: at most 2"):
        shelf.share("Ada", run.jsonl(), report, batch=run.batch, identity="ip:1.2.3.4")
    clock.now += 3601  # the window has passed
    third = shelf.share("Ada", run.jsonl(), report, batch=run.batch, identity="ip:1.2.3.4")
    assert (number, second, third) == (1, 2, 3)
    with sqlite3.connect(db) as con:  # refused shares left nothing behind
        assert con.execute("SELECT COUNT(*) FROM practice_runs").fetchone()[0] == 3
    assert set(shelf.frame()["#"]) == {1, 2, 3}


def test_share_request_needs_a_login_on_spaces(practice, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from madqa.space.human.feedback import practice_report
    from madqa.space.human.practice import ShareRefused
    from madqa.space.identity import RateLimiter
    from madqa.space.practice_runs import PracticeShelf

    plan, _, run = practice
    shelf = PracticeShelf(tmp_path / "db.sqlite", RateLimiter(5, 60), login_required=True)
    report = practice_report(run.jsonl(), plan.gold)
    request = SimpleNamespace(client=SimpleNamespace(host="10.0.0.1"))
    with pytest.raises(ShareRefused, match="log in"):
        shelf.share_request("Ada", run.jsonl(), report, batch=run.batch, request=request, profile=None)
    number = shelf.share_request(
        "Ada", run.jsonl(), report, batch=run.batch, request=request, profile=SimpleNamespace(username="ada")
    )
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        assert con.execute("SELECT identity FROM practice_runs WHERE id = ?", (number,)).fetchone()[0] == (
            "practice:hf:ada"
        )
    assert "identity" not in shelf.frame().columns and "practice:hf:ada" not in shelf.frame().to_csv()
