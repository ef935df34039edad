"""No per-item signal from test submissions: what the Space shows depends on whole-submission aggregates only.

The attack (issue 10): submit every test id with a distinct ``steps`` value, then read the cumulative-difference or
budget curve of the submission back: each step of the curve is one item's correctness. The argument of
``space/disclosure.py`` is checked here as a differential test: two submissions that differ in *which* items are
correct, but not in any whole-submission aggregate, must look exactly the same in everything a participant can
reach (stored report, board row, acceptance message, plot data and the drawn figure).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.submission_form import submission_form

from madqa.bench.space import synthetic_references
from madqa.metric.inputs import parse_results_text
from madqa.metric.report import ReportOptions, build_report, score_predictions
from madqa.space.disclosure import MIN_GROUP, public_report
from madqa.space.leaderboard import row_of
from madqa.space.plots import plot_data, plot_systems
from madqa.space.storage import SubmissionStore
from madqa.space.submission import Scorer, format_accepted

N = 48
FORM = submission_form(system="probe", submitter="attacker")


def _lines(refs: list[Any], correct: set[int]) -> str:
    """Every test id, steps = position + 1 (all distinct), the same citations, answers right exactly on ``correct``."""
    rows = []
    for i, r in enumerate(refs):
        answer = r.answer_variants[0][0] if i in correct else "wrong"
        rows.append(
            {
                "id": r.id,
                "answer": [answer],
                "steps": i + 1,
                "citations": [{"document": r.evidence[0].document, "page": r.evidence[0].page}],
            }
        )
    return "".join(json.dumps(x) + "\n" for x in rows)


def _full_report(refs: list[Any], text: str, n_resamples: int = 50) -> dict[str, Any]:
    run = score_predictions(parse_results_text(text, "r.jsonl"), refs)
    return build_report(run, refs, ReportOptions(n_resamples=n_resamples))


def _twin_submissions(refs: list[Any]) -> tuple[str, str]:
    """Two files with equal aggregates (accuracy, F1, Kuiper) but different correct items.

    The Kuiper statistic and its bootstrap CI are allow-listed single numbers that do depend on the arrangement
    (the module docstring of ``space/disclosure.py`` counts them); the twins are chosen with equal statistics, and
    every view except the Kuiper CI must be identical.
    """
    # a long run of right answers first: the curve's extremes sit there, so swapping two neighbours later on
    # changes the curve but not its range (the Kuiper statistic)
    base = set(range(12)) | {i for i in range(12, N) if i % 2 == 0}
    full_a = _full_report(refs, _lines(refs, base))
    for i in range(N - 1):  # swap the outcome of two neighbours in effort order
        if (i in base) == (i + 1 in base) or refs[i].hop_type != refs[i + 1].hop_type:
            continue  # same hop group: group accuracies by (hidden) hop type are allow-listed aggregates
        twin = base ^ {i, i + 1}
        full_b = _full_report(refs, _lines(refs, twin))
        if full_b["kuiper"] == full_a["kuiper"]:
            # the unreduced report does carry the per-item signal: the curves differ
            assert full_a["kuiper_curve"] != full_b["kuiper_curve"]
            assert full_a["budget_curve"] != full_b["budget_curve"]
            return _lines(refs, base), _lines(refs, twin)
    raise AssertionError("no twin pair found")  # pragma: no cover - the construction above always finds one


@pytest.fixture()
def refs() -> list[Any]:
    return synthetic_references(N)


def test_public_report_keeps_aggregates_only(refs) -> None:
    full = _full_report(refs, _lines(refs, {0, 5, 9}))
    public = public_report(full, [{"doc_f1": 1.0, "page_f1": 0.0, "correct": True}, {}])
    for dropped in ("kuiper_curve", "budget_curve", "missing_ids", "unknown_ids", "items", "wasted_effort_ratio"):
        assert dropped not in public
    assert public["accuracy"] == full["accuracy"] and public["kuiper"] == full["kuiper"]
    assert public["cascade"] == {"found_doc": 0.5, "found_page": 0.0, "correct": 0.5}
    # groups under MIN_GROUP items disappear with their size; larger ones keep n and accuracy only
    sizes = {g: s["n"] for g, s in full["by_hop"].items()}
    assert {g for g, n in sizes.items() if n >= MIN_GROUP} == set(public["by_hop"])
    assert all(set(s) == {"n", "accuracy", "accuracy_ci"} for s in public["by_hop"].values())
    assert public_report(public) == public  # idempotent (old rows are reduced again when read)
    assert public_report({**full, "some_future_curve": [1, 0, 1]}).get("some_future_curve") is None


def test_two_submissions_differing_only_in_which_items_are_right_look_identical(refs, tmp_path: Path) -> None:
    text_a, text_b = _twin_submissions(refs)
    store = SubmissionStore(tmp_path / "db.sqlite")
    scorer = Scorer(refs, store, n_resamples=50)
    acc_a = scorer.submit_text(text_a, {**FORM, "system": "probe"})
    acc_b = scorer.submit_text(text_b, {**FORM, "system": "probe"})
    subs = {s.id: s for s in store.submissions()}

    def masked(d: dict[str, Any], *keys: str) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in (*keys, "kuiper_ci", "kuiper_ci_normalized", "Kuiper CI")}

    # the stored report (what every view reads) is identical
    assert masked(subs[acc_a.id].report) == masked(subs[acc_b.id].report)

    # the acceptance message differs only in the submission number and the board's size
    def message(acc: Any) -> str:
        return format_accepted(acc).replace(f"#{acc.id}", "#N").replace(f"of {acc.total}", "of T")

    assert message(acc_a) == message(acc_b)
    row_a, row_b = row_of(subs[acc_a.id]), row_of(subs[acc_b.id])
    assert masked(row_a, "#") == masked(row_b, "#")
    da, db = plot_data(store, [acc_a.id]), plot_data(store, [acc_b.id])
    assert [masked(d, "id", "label") for d in da] == [masked(d, "id", "label") for d in db]
    # the per-item scores are stored (server side) and do differ: the reduction is what hides them
    assert store.item_scores(acc_a.id) != store.item_scores(acc_b.id)


def test_drawn_figure_has_no_curve(refs, tmp_path: Path) -> None:
    store = SubmissionStore(tmp_path / "db.sqlite")
    scorer = Scorer(refs, store, n_resamples=50)
    ids = [scorer.submit_text(_lines(refs, set(range(0, N, k))), {**FORM, "system": f"s{k}"}).id for k in (2, 3)]
    fig = plot_systems(store, ids)
    for ax in fig.axes:
        for line in ax.get_lines():  # error bars have two points; a curve over items would have many
            assert len(line.get_xdata()) <= 2
    assert len(plot_data(store, [*ids, "x", None, 10**9, ids[0]])) == 2  # junk ids are ignored, repeats once


def test_a_refused_file_does_no_gold_dependent_work(refs, monkeypatch) -> None:
    """A refused file costs no quota, so it must not be able to time the labels: no ANLS* against a gold answer
    may run before every refusal (here: a long answer for one item plus a line that matches no question)."""
    import madqa.metric.report as report_module
    from madqa.space.submission import SubmissionError, evaluate_results

    calls: list[int] = []
    real = report_module.anls_star
    monkeypatch.setattr(report_module, "anls_star", lambda *a, **k: calls.append(1) or real(*a, **k))
    probe = json.dumps({"id": refs[0].id, "answer": ["x" * 4000], "steps": 1}) + "\n"
    probe += json.dumps({"question": "a question that is not in the test split", "answer": []}) + "\n"
    with pytest.raises(SubmissionError, match="match no test question"):
        evaluate_results(probe, refs, {r.id for r in refs}, {})
    assert calls == []
    first_line = probe.split("\n")[0] + "\n"
    evaluate_results(first_line, refs, {r.id for r in refs}, {}, options=ReportOptions(n_resamples=10))
    assert calls  # the counter does see the scoring of an accepted file


def _lenient(refs: list[Any]) -> str:
    """A file the metric scores with warnings: a misspelt field, a line without answer, a model's huge page."""
    text = _lines(refs, set(range(0, N, 2))).split("\n")
    rows = [json.loads(line) for line in text if line]
    rows[0]["citatons"] = rows[0].pop("citations")
    del rows[1]["answer"]
    rows[2]["citations"] = [{"document": refs[2].evidence[0].document, "page": 1506387294}]
    rows[3]["anwser"] = rows[3].pop("answer")
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_a_stored_submission_shows_the_warnings_it_was_accepted_with(refs, tmp_path: Path) -> None:
    """Issue 22: the stored report keeps the file's input notes, so a replay (same key: a retried request, or
    the page reloaded after a lost answer) and any later read of the store show the same warnings."""
    from madqa.metric.inputs import parse_results

    text = _lenient(refs)
    expected = tuple(parse_results(text, "results.jsonl").notes.warnings())  # from the file, no gold in sight
    assert len(expected) == 4 and expected[0].startswith("results.jsonl line 1: unknown field 'citatons'")
    store = SubmissionStore(tmp_path / "db.sqlite")
    scorer = Scorer(refs, store, n_resamples=20)
    first = scorer.submit_text(text, FORM, identity="user-1", key="k1")
    replay = scorer.submit_text(text, FORM, identity="user-1", key="k1")
    assert replay.replayed and replay.id == first.id and len(store.submissions()) == 1
    assert first.warnings == replay.warnings == expected
    assert format_accepted(replay) == format_accepted(first)
    assert "**Warnings** (scored anyway):" in format_accepted(first)
    # read back by another process (a restarted Space): the stored report holds notes and messages
    stored = SubmissionStore(tmp_path / "db.sqlite").submissions()[0].report
    assert stored["warnings"] == list(expected)
    assert stored["input_notes"] == {
        "lines_without_answer": 2,
        "citations_above_max_page": 1,
        "unknown_fields": {"citatons": "citations", "anwser": "answer"},
    }
    assert Scorer(refs, SubmissionStore(tmp_path / "db.sqlite")).accepted(first.id).warnings == expected


def test_stored_input_notes_come_from_the_file_never_from_the_labels(refs) -> None:
    """The same file scored against other labels (other answers, evidence, hop types) stores the same notes and
    warnings, although its scores differ: nothing in them depends on a gold value; none is quoted."""
    from dataclasses import replace

    from madqa.metric.schema import Citation
    from madqa.space.submission import evaluate_results

    other = [
        replace(
            r,
            answer_variants=((f"secret {i}",),),
            hop_type="cross_page",
            evidence=(Citation(r.evidence[0].document, 1 + (r.evidence[0].page % 4)),),
        )
        for i, r in enumerate(refs)
    ]
    text, ids = _lenient(refs), {r.id for r in refs}
    a = evaluate_results(text, refs, ids, {}, options=ReportOptions(n_resamples=20))
    b = evaluate_results(text, other, ids, {}, options=ReportOptions(n_resamples=20))
    assert a.report["accuracy"] != b.report["accuracy"]  # the labels do matter to the scores ...
    assert a.report["input_notes"] == b.report["input_notes"] and a.report["warnings"] == b.report["warnings"]
    assert a.warnings == b.warnings == tuple(a.report["warnings"])  # ... not to the notes
    shown = json.dumps([a.report["input_notes"], a.report["warnings"]])
    assert not any(f"answer {i}" in shown or f"secret {i}" in shown for i in range(N))


def test_public_report_keeps_input_notes_bounded() -> None:
    from madqa.metric.notes import MAX_WARNED_KEYS
    from madqa.space.disclosure import MAX_WARNING_CHARS, MAX_WARNINGS

    junk = {
        "input_notes": {
            "lines_without_answer": 3,
            "citations_above_max_page": -1,
            "extra": "x" * 10**5,
            "unknown_fields": {f"fld{i}": "answer" for i in range(1000)} | {"y" * 500: "page"},
        },
        "warnings": ["w" * 10**4] + [f"warning {i}" for i in range(100)] + [{"not": "text"}],
    }
    public = public_report(junk)
    notes = public["input_notes"]
    assert notes["lines_without_answer"] == 3 and notes["citations_above_max_page"] == 0
    assert "extra" not in notes and len(notes["unknown_fields"]) == MAX_WARNED_KEYS
    assert len(public["warnings"]) == MAX_WARNINGS and len(public["warnings"][0]) == MAX_WARNING_CHARS
    assert public_report(public) == public  # idempotent
    assert "warnings" not in public_report({"accuracy": 0.5})  # rows stored before: no notes, no warnings
