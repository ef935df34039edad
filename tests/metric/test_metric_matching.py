"""Coverage: matching by id, question-text fallback, missing, duplicate and unknown ids."""

from __future__ import annotations

import json

import pytest

from madqa.metric.inputs import InputError, parse_references, parse_results_text
from madqa.metric.matching import match_predictions
from madqa.metric.report import evaluate_predictions

GOLD = parse_references(
    [
        {"id": f"g{i}", "question": q, "answer_variants": [[a]], "evidence": [{"document": "d.pdf", "page": i + 1}]}
        for i, (q, a) in enumerate(
            [("What is A?", "1"), ("What is B?", "2"), ("What is C?", "3"), ("Same?", "4"), ("Same?", "5")]
        )
    ],
    "gold",
)


def results(*records) -> list:
    return parse_results_text("\n".join(json.dumps(r) for r in records), "r.jsonl")


def test_missing_and_unknown_ids():
    preds = results({"id": "g2", "answer": ["3"]}, {"id": "nope", "answer": ["1"]}, {"id": "g0", "answer": ["1"]})
    m = match_predictions(preds, GOLD)
    assert [p.id if p else None for p in m.predictions] == ["g0", None, "g2", None, None]
    assert m.orders == (2, -1, 0, -1, -1)
    assert m.missing_ids == ("g1", "g3", "g4")
    assert m.unknown == ("nope",)
    assert m.matched_by_question == 0
    report = evaluate_predictions(preds, GOLD)
    assert (report["n"], report["n_predicted"], report["missing"], report["n_unknown"]) == (5, 2, 3, 1)
    assert report["missing_ids"] == ["g1", "g3", "g4"] and report["unknown_ids"] == ["nope"]
    assert report["accuracy"] == pytest.approx(2 / 5)  # the denominator is the gold set
    assert report["page_f1"] == 0.0


def test_duplicate_ids_are_an_error_naming_them():
    preds = results({"id": "g1", "answer": ["2"]}, {"id": "g0", "answer": []}, {"id": "g1", "answer": ["x"]})
    with pytest.raises(InputError) as info:
        match_predictions(preds, GOLD)
    assert str(info.value) == "duplicate predictions: gold id 'g1' is predicted more than once (line 1, line 3)"


def test_duplicate_unknown_ids_are_an_error():
    preds = results({"id": "zz", "answer": ["2"]}, {"id": "zz", "answer": []})
    with pytest.raises(InputError, match="id 'zz' \\(not in the gold set\\) appears more than once"):
        match_predictions(preds, GOLD)


def test_question_text_fallback_only_without_id_and_counted():
    preds = results(
        {"question": "  What is  B? ", "answer": ["2"]},  # whitespace-normalised match
        {"id": "g9", "question": "What is A?", "answer": ["1"]},  # has an id: no fallback
        {"question": "Same?", "answer": ["4"]},  # ambiguous
        {"question": "Unheard of?", "answer": ["4"]},
    )
    m = match_predictions(preds, GOLD)
    assert m.matched_by_question == 1
    assert m.predictions[1] is not None and m.predictions[0] is None
    assert m.unknown[0] == "g9"
    assert m.unknown[1].startswith("ambiguous question (line 3)")
    assert m.unknown[2].startswith("unknown question (line 4)")
    report = evaluate_predictions(preds, GOLD)
    assert report["matched_by_question"] == 1 and report["accuracy"] == pytest.approx(1 / 5)


def test_id_less_lines_with_no_exact_question_are_unknown_not_accepted():
    # Near misses of a gold question never match (the Space refuses a file with any unknown line)
    near = ["what is a?", "What is A", "What is A?!", "What is", "What is A? Really?", "Q: What is A?", "What is D?"]
    preds = results(*({"question": q, "answer": ["1"], "steps": 1} for q in near))
    m = match_predictions(preds, GOLD)
    assert m.matched_by_question == 0 and all(p is None for p in m.predictions)
    assert [u.split(":", 1)[0] for u in m.unknown] == [f"unknown question (line {i})" for i in range(1, 8)]
    report = evaluate_predictions(preds, GOLD)
    assert (report["n_predicted"], report["n_unknown"], report["accuracy"]) == (0, 7, 0.0)
    assert report["unknown_ids"][0] == "unknown question (line 1): 'what is a?'"


def test_duplicate_through_question_text():
    preds = results({"id": "g0", "answer": ["1"]}, {"question": "What is A?", "answer": ["1"]})
    with pytest.raises(InputError, match="gold id 'g0' is predicted more than once \\(line 1, line 2\\)"):
        match_predictions(preds, GOLD)


def test_none_placeholders_are_skipped():
    m = match_predictions([None, None], GOLD)
    assert m.missing_ids == tuple(r.id for r in GOLD)
