"""Metric edge cases (issue 12 item 6): blank question next to an id, ``document`` falling back to ``file``, the
documented differences from the public harness, and the accuracy standard error (``accuracy_se``) on the board."""

from __future__ import annotations

import contextlib
import io
import json
import math
from types import SimpleNamespace

import pytest

from madqa.metric.accuracy import lee_ci_simplified, rogan_gladen_se, summarize_accuracy
from madqa.metric.inputs import InputError, parse_references, parse_results_text
from madqa.metric.judge import Judge, shortcut
from madqa.metric.report import ReportOptions, evaluate_predictions
from madqa.metric.schema import DEFAULT_CALIBRATION, Calibration
from madqa.space.disclosure import public_report
from madqa.space.leaderboard import SE_COLUMN, board_columns, row_of

GOLD = parse_references(
    [
        {
            "id": f"q{i}",
            "question": f"Gold question {i}?",
            "answer_variants": [[f"ans{i}"]],
            "evidence": [{"document": f"d{i}.pdf", "page": 1}],
        }
        for i in range(4)
    ],
    "gold",
)


def results(*lines: dict) -> str:
    return "\n".join(json.dumps(x) for x in lines)


def run(*lines: dict, judge=None, **options) -> dict:
    return evaluate_predictions(
        parse_results_text(results(*lines), "r.jsonl"), GOLD, ReportOptions(n_resamples=50, **options), judge=judge
    )


# --- input edge cases ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_blank_question_next_to_an_id_is_ignored_and_the_id_matches(blank: str) -> None:
    text = results({"id": "q0", "question": blank, "answer": ["ans0"], "citations": [{"document": "d0", "page": 1}]})
    [pred] = parse_results_text(text, "r.jsonl")
    assert pred.id == "q0" and pred.question is None
    report = run({"id": "q0", "question": blank, "answer": ["ans0"]})
    assert report["n_predicted"] == 1 and report["matched_by_question"] == 0 and report["accuracy"] == 0.25


def test_blank_question_without_an_id_is_still_an_error_naming_line_and_field() -> None:
    with pytest.raises(InputError, match=r"r\.jsonl line 2: field 'question' must be a non-empty string"):
        parse_results_text(results({"id": "q0", "answer": []}, {"question": "  ", "answer": []}), "r.jsonl")


def test_a_question_of_the_wrong_type_next_to_an_id_is_still_an_error() -> None:
    with pytest.raises(InputError, match=r"line 1: field 'question' must be a non-empty string, got 5"):
        parse_results_text(results({"id": "q0", "question": 5, "answer": []}), "r.jsonl")


@pytest.mark.parametrize("document", [None, "", "  "])
def test_null_or_blank_document_falls_back_to_file(document: str | None) -> None:
    line = {"id": "q0", "answer": ["ans0"], "citations": [{"document": document, "file": "d0.pdf", "page": 1}]}
    [pred] = parse_results_text(results(line), "r.jsonl")
    assert pred.citations[0].document == "d0.pdf"
    report = run(line)
    assert report["page_f1"] == 0.25 and report["doc_f1"] == 0.25


def test_a_named_document_wins_over_file() -> None:
    line = {"id": "q0", "answer": [], "citations": [{"document": "a.pdf", "file": "b.pdf", "page": 1}]}
    assert parse_results_text(results(line), "r.jsonl")[0].citations[0].document == "a.pdf"


@pytest.mark.parametrize("file", [None, "", " "])
def test_blank_document_and_blank_file_is_an_error(file: str | None) -> None:
    line = {"id": "q0", "answer": [], "citations": [{"document": "", "file": file, "page": 1}]}
    with pytest.raises(InputError, match=r"line 1: citations\[0\] needs a non-empty 'document' \(or 'file'\)"):
        parse_results_text(results(line), "r.jsonl")


# --- documented differences from the public harness ---------------------------------------------------------------


def test_judge_sees_the_gold_question_not_the_results_line_question() -> None:
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return '{"reasoning": "r", "verdict": "incorrect"}'

    judge = Judge(complete, "fake", workers=1)
    run({"id": "q1", "question": "Injected question?", "answer": ["something else"]}, mode="judge", judge=judge)
    assert len(prompts) == 1 and "Gold question 1?" in prompts[0] and "Injected" not in prompts[0]


def test_shortcut_order_and_the_2000_character_rule() -> None:
    assert shortcut(["  "], 1.0) == ("incorrect", "empty")  # empty first, even with ANLS* 1
    assert shortcut(["x" * 3000], 1.0) == ("correct", "exact")  # exact beats the length rule
    assert shortcut(["x" * 1000, "y" * 1001], 0.0) == ("incorrect", "too_long")  # summed over strings
    assert shortcut(["x" * 1000, "y" * 1000], 0.0) is None  # exactly 2,000 goes to the judge


def test_simplified_ci_is_centred_on_the_unclipped_estimate_when_p_exceeds_q1() -> None:
    low, high = lee_ci_simplified(0.99, 100, 1.0, 0.98)
    theta = 0.99 / 0.98
    half = 1.959963984540054 * math.sqrt(0.99 * 0.01 / 100) / 0.98
    assert high == 1.0 and low == pytest.approx(theta - half) and round(low, 4) == 0.9903
    assert summarize_accuracy([1.0] * 99 + [0.0], "judge", Calibration(1.0, 0.98, 48, 152)).accuracy == 1.0


def test_an_empty_search_history_falls_back_to_iterations_as_the_public_harness_does() -> None:
    """The harness (eval/evaluate.py evaluate_single) reads ``len(search_history) if search_history else
    iterations``: a line whose effort is only in ``iterations`` keeps it (issue 48)."""
    [pred] = parse_results_text(results({"id": "q0", "answer": [], "search_history": [], "iterations": 7}), "r")
    assert pred.steps == 7
    [pred] = parse_results_text(results({"id": "q0", "answer": [], "search_history": [], "steps": 7}), "r")
    assert pred.steps == 0  # no iterations: an empty list is no search, as in the harness
    [pred] = parse_results_text(results({"id": "q0", "answer": [], "search_history": ["a"], "iterations": 7}), "r")
    assert pred.steps == 1


def test_zero_step_items_count_in_the_wasted_effort_ratio() -> None:
    report = run(
        {"id": "q0", "answer": ["ans0"], "steps": 0},
        {"id": "q1", "answer": ["ans1"], "steps": 4},
        {"id": "q2", "answer": ["wrong"], "steps": 0},
        {"id": "q3", "answer": ["wrong"], "steps": 6},
    )
    assert report["wasted_effort_ratio"] == pytest.approx(3.0 / 2.0)  # wrong mean 3 / right mean 2


def test_kuiper_is_zero_not_nan_when_all_items_agree_and_wasted_effort_is_null() -> None:
    report = run(*({"id": f"q{i}", "answer": [f"ans{i}"], "steps": i + 1} for i in range(4)))
    assert report["kuiper"] == 0.0 and report["kuiper_normalized"] == 0.0 and report["kuiper_ci"] == [0.0, 0.0]
    assert report["wasted_effort_ratio"] is None  # no incorrect items: undefined, not 0.0
    json.dumps(report, allow_nan=False)


def test_wasted_effort_is_null_when_correct_items_took_no_steps() -> None:
    report = run({"id": "q0", "answer": ["ans0"], "steps": 0}, {"id": "q1", "answer": ["no"], "steps": 3})
    assert report["wasted_effort_ratio"] is None


# --- accuracy_se ----------------------------------------------------------------------------------------------------


def test_anls_se_is_binomial_over_all_gold_items_including_missing_ones() -> None:
    report = run({"id": "q0", "answer": ["ans0"]}, {"id": "q1", "answer": ["no"]})  # q2, q3 missing
    assert report["n"] == 4 and report["accuracy"] == 0.25
    assert report["accuracy_se"] == pytest.approx(math.sqrt(0.25 * 0.75 / 4))


def test_anls_se_matches_the_papers_plus_minus_scale() -> None:
    se = summarize_accuracy([1.0] * 275 + [0.0] * 75, "anls", DEFAULT_CALIBRATION).se
    assert se is not None and round(100 * se, 1) == 2.2  # Table 3 prints e.g. 78.6 ± 2.2 at n of about 350


def _theta(p: float, q0: float, q1: float) -> float:
    return (p + q0 - 1.0) / (q0 + q1 - 1.0)


@pytest.mark.parametrize("p,q0,q1", [(0.7, 1.0, 0.98), (0.55, 0.9, 0.85), (0.99, 1.0, 0.98), (0.3, 0.8, 0.95)])
def test_judge_se_is_the_delta_method_se_of_the_corrected_estimate(p: float, q0: float, q1: float) -> None:
    n, m0, m1, h = 200, 48, 152, 1e-6
    grads = [
        (_theta(p + h, q0, q1) - _theta(p - h, q0, q1)) / (2 * h),
        (_theta(p, q0 + h, q1) - _theta(p, q0 - h, q1)) / (2 * h),
        (_theta(p, q0, q1 + h) - _theta(p, q0, q1 - h)) / (2 * h),
    ]
    variances = [p * (1 - p) / n, q0 * (1 - q0) / m0, q1 * (1 - q1) / m1]
    expected = math.sqrt(sum(g * g * v for g, v in zip(grads, variances, strict=True)))
    assert rogan_gladen_se(p, n, q0, q1, m0, m1) == pytest.approx(expected, rel=1e-6)


def test_judge_se_with_an_exact_judge_is_the_binomial_se() -> None:
    assert rogan_gladen_se(0.3, 50, 1.0, 1.0, 10, 10) == pytest.approx(math.sqrt(0.3 * 0.7 / 50))


def test_judge_report_se_uses_scored_items_only_and_keeps_the_other_fields() -> None:
    replies = iter(['{"reasoning": "r", "verdict": "correct"}', "no verdict here"])

    def complete(prompt: str) -> str:
        return next(replies) if "Gold question 1?" in prompt else "no verdict here"

    judge = Judge(complete, "gemini-2.5-flash", workers=1, retries=0)  # the paper's judge: the paper's calibration
    lines = [{"id": "q0", "answer": ["ans0"]}, {"id": "q1", "answer": ["close"]}, {"id": "q2", "answer": ["x"]}]
    report = run(*lines, mode="judge", judge=judge)
    assert report["unscored"] == 1 and report["n_scored"] == 3  # q2 unscored; q3 missing counts as scored 0
    p, c = 2 / 3, DEFAULT_CALIBRATION
    assert report["accuracy_raw"] == pytest.approx(p)
    assert report["accuracy_se"] == pytest.approx(rogan_gladen_se(p, 3, c.q0, c.q1, c.m0, c.m1))
    plain = summarize_accuracy([1.0, 1.0, 0.0], "judge", c)
    assert report["accuracy_ci"] == pytest.approx(list(plain.ci)) and report["accuracy"] == plain.accuracy


def test_se_is_null_without_scored_items() -> None:
    assert summarize_accuracy([], "anls", DEFAULT_CALIBRATION).se is None


def test_se_is_disclosed_for_test_submissions_and_shown_on_the_board() -> None:
    report = run({"id": "q0", "answer": ["ans0"]}, {"id": "q1", "answer": ["ans1"]})
    public = public_report(report)
    assert public["accuracy_se"] == report["accuracy_se"] == pytest.approx(0.25)
    cols = board_columns()
    assert cols.index(SE_COLUMN) == cols.index("Accuracy") + 1
    assert cols.index("Accuracy CI") == cols.index(SE_COLUMN) + 1
    form = {"system": "s", "submitter": "u", "agent": "a", "model": "m"}
    sub = SimpleNamespace(
        id=1,
        created="2026-01-01T00:00",
        origin="self",
        form=form,
        mode="anls",
        report=public,
        system_type="agent",
        cost=None,
    )
    row = row_of(sub)  # type: ignore[arg-type]
    assert row["Accuracy"] == 50.0 and row[SE_COLUMN] == 25.0 and row["Type"] == "agent"


# --- issue 22: lines scored leniently reach madqa evaluate, the evaluate module and the Space alike ---------------

LENIENT = [
    {"id": "q0", "answer": ["ans0"], "citatons": [{"document": "d0", "page": 1}]},  # misspelt: Page F1 0, warned
    {"id": "q1", "error": "provider exploded"},  # the public harness's failed line: no 'answer'
    {"id": "q2", "answer": ["ans2"], "citations": [{"document": "d2", "page": 1}, {"document": "d2", "page": 10**25}]},
]


def test_lenient_lines_give_the_same_counts_and_warnings_in_all_three_paths(tmp_path, caplog) -> None:
    from madqa.cli import main
    from madqa.metric.madqa import Madqa
    from madqa.space.submission import Accepted, evaluate_results, format_accepted

    gold_path, results_path = tmp_path / "gold.jsonl", tmp_path / "r.jsonl"
    gold_rows = [
        {
            "id": r.id,
            "question": r.question,
            "answer_variants": [list(v) for v in r.answer_variants],
            "evidence": [vars(c) for c in r.evidence],
        }
        for r in GOLD
    ]
    gold_path.write_text("\n".join(json.dumps(g) for g in gold_rows), encoding="utf-8")
    results_path.write_text(results(*LENIENT), encoding="utf-8")
    expected = {"lines_without_answer": 1, "citations_above_max_page": 1, "unknown_fields": {"citatons": "citations"}}

    out = io.StringIO()
    with caplog.at_level("WARNING"), contextlib.redirect_stdout(out):
        assert main(["evaluate", str(results_path), "--gold", str(gold_path), "--json", "--resamples", "10"]) == 0
    cli = json.loads(out.getvalue())
    assert cli["n_predicted"] == 3 and cli["input_notes"] == expected
    assert cli["warnings"] == [
        f"{results_path} line 1: unknown field 'citatons' (did you mean 'citations'?); it is ignored",
        f"{results_path}: 1 line(s) have no 'answer' field; scored as no answer",
        f"{results_path}: 1 citation(s) to pages above 100,000 scored as wrong citations",
    ]
    assert all(w in caplog.text for w in cli["warnings"])  # logged as WARNINGs too

    caplog.clear()
    with caplog.at_level("WARNING"):
        module = Madqa(keep_in_memory=True, cache_dir=str(tmp_path / "m")).compute(
            predictions=LENIENT + [None], references=gold_rows, n_resamples=10
        )
    assert module["n_predicted"] == 3 and module["input_notes"] == expected  # the 10**25 page survives datasets
    assert [w.split(": ", 1)[1] for w in module["warnings"]] == [w.split(": ", 1)[1] for w in cli["warnings"]]
    assert module["warnings"][0].startswith("predictions[0]: ") and all(w in caplog.text for w in module["warnings"])
    assert module["page_f1"] == cli["page_f1"] == pytest.approx((0 + 0 + 2 / 3 + 0) / 4)

    space = evaluate_results(results(*LENIENT), GOLD, {r.id for r in GOLD}, {})
    assert space.report["n_predicted"] == 3 and len(space.warnings) == 3
    assert space.warnings[0].startswith("results.jsonl line 1: unknown field 'citatons'")
    shown = format_accepted(Accepted(1, 1, 1, space.report, warnings=space.warnings))
    assert "**Warnings** (scored anyway):" in shown and r"unknown field 'citatons' \(did you mean" in shown
    assert not any(word in shown for word in ("ans1", "ans3", "Gold question"))  # nothing of the labels


def test_space_warnings_quote_field_names_as_literal_markdown() -> None:
    from madqa.space.submission import Accepted, evaluate_results, format_accepted

    space = evaluate_results(results({"id": "q0", "answer": [], "Answer_": ["x"]}), GOLD, {r.id for r in GOLD}, {})
    assert space.warnings == ("results.jsonl line 1: unknown field 'Answer_' (did you mean 'answer'?); it is ignored",)
    shown = format_accepted(Accepted(1, 1, 1, space.report, warnings=space.warnings))
    assert r"unknown field 'Answer\_' \(did you mean 'answer'?\)" in shown  # a name is text, not Markdown
