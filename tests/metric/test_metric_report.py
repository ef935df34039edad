"""The assembled report on a hand-computed fixture, plus the METRICS declaration and JSON strictness."""

from __future__ import annotations

import json

import pytest
from helpers.gold import gold_record
from helpers.report_keys import REPORT_KEYS

from madqa.cli.table import format_kappa, format_report
from madqa.metric.inputs import parse_references, parse_results_text
from madqa.metric.report import ReportOptions, compare_runs, evaluate_predictions, score_predictions
from madqa.metric.schema import METRICS

GOLD = parse_references(
    [
        gold_record("s1", "A?", [["alpha"]], [("a.pdf", 1)], "fin", "report"),
        gold_record("p1", "B?", [["beta"]], [("b.pdf", 1), ("b.pdf", 2)], "fin", "form"),
        gold_record("d1", "C?", [["gamma"]], [("c.pdf", 3), ("e.pdf", 1)], "law", "report"),
        gold_record("s2", "D?", [["delta"]], [("d.pdf", 4)], "law", "form"),
    ],
    "gold",
)

RESULTS = "\n".join(
    json.dumps(x)
    for x in [
        # correct, exact page: page F1 1, doc F1 1, 1 step
        {"id": "s1", "answer": ["Alpha"], "citations": [{"document": "a.pdf", "page": 1}], "search_history": ["q"]},
        # wrong answer, right document wrong page -> navigation; 3 steps
        {"id": "p1", "answer": ["zzz"], "citations": [{"file": "b.pdf", "page": 7}], "steps": 3},
        # correct, one of two documents cited on the right page plus a wrong one: page P 1/2 R 1/2; doc P 1/2 R 1/2
        {
            "id": "d1",
            "answer": "gamma",
            "citations": [{"document": "c.pdf", "page": "3"}, {"document": "x.pdf", "page": 1}],
            "iterations": 2,
        },
        # s2 missing
    ]
)


def test_report_hand_values():
    report = evaluate_predictions(parse_results_text(RESULTS, "r.jsonl"), GOLD, ReportOptions(n_resamples=200))
    assert REPORT_KEYS <= set(report)
    assert report["mode"] == "anls"
    assert (report["n"], report["n_predicted"], report["missing"], report["unscored"]) == (4, 3, 1, 0)
    assert report["accuracy"] == report["accuracy_raw"] == 0.5
    assert report["anls"] == 0.5
    assert report["page_f1"] == pytest.approx((1 + 0 + 0.5 + 0) / 4)
    assert report["doc_f1"] == pytest.approx((1 + 1 + 0.5 + 0) / 4)
    # Kuiper over the 3 items with effort: (1, 1), (2, 1), (3, 0); ybar 2/3 -> D = 1/3, 2/3, 0 -> K = 2/3
    assert report["kuiper"] == pytest.approx(2 / 3)
    assert report["kuiper_normalized"] == pytest.approx(2 / 9)
    assert report["kuiper_n"] == 3 and report["kuiper_excluded"] == 1
    assert report["kuiper_curve"]["k"] == [0, 1, 2, 3]
    assert report["wasted_effort_ratio"] == pytest.approx(3 / 1.5)
    assert report["errors"]["counts"] == {"retrieval": 0, "navigation": 1, "comprehension": 0, "no_answer": 1}
    assert report["budget_curve"] == [
        {"budget": 1, "accuracy": 0.25},
        {"budget": 2, "accuracy": 0.5},
        {"budget": 3, "accuracy": 0.5},
    ]
    assert report["by_hop"]["single"]["n"] == 2 and report["by_hop"]["single"]["accuracy"] == 0.5
    assert report["by_hop"]["cross_page"]["accuracy"] == 0.0
    assert report["by_hop"]["cross_doc"]["accuracy"] == 1.0
    assert report["by_domain"]["fin"]["accuracy"] == 0.5 and report["by_category"]["report"]["accuracy"] == 1.0
    assert report["calibration"] is None
    lo, hi = report["accuracy_ci"]
    assert 0 <= lo < 0.5 < hi <= 1
    json.dumps(report, allow_nan=False)  # strict JSON: no NaN anywhere


def test_per_item_output_and_empty_effort():
    options = ReportOptions(include_items=True, n_resamples=10)
    report = evaluate_predictions(parse_results_text(RESULTS, "r"), GOLD, options)
    assert [it["id"] for it in report["items"]] == ["s1", "p1", "d1", "s2"]
    assert report["items"][3]["source"] == "missing"
    no_effort = parse_results_text(json.dumps({"id": "s1", "answer": ["alpha"]}), "r")
    r2 = evaluate_predictions(no_effort, GOLD, ReportOptions(n_resamples=10))
    assert r2["kuiper"] is None and r2["kuiper_ci"] is None and r2["mean_steps"] is None
    json.dumps(r2, allow_nan=False)


def test_compare_and_text_rendering():
    a = score_predictions(parse_results_text(RESULTS, "a"), GOLD)
    b = score_predictions(parse_results_text(RESULTS.replace('"zzz"', '"beta"'), "b"), GOLD)
    out = compare_runs({"A": a, "B": b})
    # A: [1, 0, 1, 0], B: [1, 1, 1, 0]: po = 3/4, pe = 1/2 * 3/4 + 1/2 * 1/4 = 1/2 -> kappa 1/2
    assert out["kappa"]["A"]["B"] == pytest.approx(0.5)
    report = evaluate_predictions(parse_results_text(RESULTS, "a"), GOLD, ReportOptions(n_resamples=10))
    text = format_report(report, "title")
    assert "accuracy" in text and "Kuiper" in text and "navigation 1" in text
    assert "S1 = A" in format_kappa(out)


def test_metrics_declaration_keys_exist_in_report():
    report = evaluate_predictions(parse_results_text(RESULTS, "r"), GOLD, ReportOptions(n_resamples=10))
    assert {m.key for m in METRICS} <= set(report)
    assert [m.key for m in METRICS if not m.higher_is_better] == ["kuiper", "kuiper_normalized", "wasted_effort_ratio"]


def test_unknown_mode_rejected():
    with pytest.raises(ValueError, match="unknown mode"):
        evaluate_predictions([], GOLD, ReportOptions(mode="exact"))  # type: ignore[arg-type]
