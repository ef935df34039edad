"""Repeated runs (:mod:`madqa.metric.repeats`): spread, pass@k, pass^k and consistency against hand-computed values,
and how a file of repeated runs is cut into repeats."""

from __future__ import annotations

import doctest
import json
import math

import pytest

from madqa.metric import repeats
from madqa.metric.inputs import InputError, parse_results_text
from madqa.metric.repeats import pass_at_k, pass_hat_k, split_repeats, summarize_repeats

T, F = True, False

#: Three repeats of four items; per item the repeats right: 3, 2, 0, 1.
RUNS = {0: [T, T, F, F], 1: [T, F, F, F], 2: [T, T, F, T]}


def test_spread_pass_k_and_consistency_by_hand() -> None:
    s = summarize_repeats(RUNS)
    assert s.accuracy == (0.5, 0.25, 0.75)
    assert s.mean == 0.5 and s.low == 0.25 and s.high == 0.75
    assert s.sd == pytest.approx(0.25)  # sqrt((0 + 0.25^2 + 0.25^2) / (3 - 1))
    assert s.k == 3 and s.n_items == 4 and s.unscored == 0
    assert s.pass_at_k == 0.75  # items 1, 2 and 4 are right in some repeat
    assert s.pass_hat_k == 0.25  # only item 1 is right in all three
    assert s.consistency == 0.5  # item 1 (always right) and item 3 (always wrong)


def test_the_curve_below_k_by_hand() -> None:
    curve = {p["k"]: p for p in summarize_repeats(RUNS).curve}
    # k = 1: the mean accuracy, both ways: (3 + 2 + 0 + 1) / (3 * 4).
    assert curve[1]["pass_at_k"] == pytest.approx(0.5) and curve[1]["pass_hat_k"] == pytest.approx(0.5)
    # k = 2 of 3: pass@2 per item 1, 1, 0, 1 - C(2,2)/C(3,2) = 2/3; pass^2 per item 1, C(2,2)/3 = 1/3, 0, 0.
    assert curve[2]["pass_at_k"] == pytest.approx((1 + 1 + 0 + 2 / 3) / 4)
    assert curve[2]["pass_hat_k"] == pytest.approx((1 + 1 / 3) / 4)
    assert curve[3]["pass_at_k"] == 0.75 and curve[3]["pass_hat_k"] == 0.25


def test_pass_k_of_one_item_and_bad_counts() -> None:
    assert pass_at_k(2, 5, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(5, 2))  # 1 - 3/10
    assert pass_hat_k(2, 5, 2) == pytest.approx(1 / 10)
    assert pass_at_k(0, 4, 4) == 0.0 and pass_hat_k(4, 4, 4) == 1.0
    for bad in ((4, 3, 1), (1, 3, 0), (1, 3, 4), (-1, 3, 1)):
        with pytest.raises(ValueError, match="correct <= n"):
            pass_at_k(*bad)


def test_one_repeat_has_no_sd_and_unscored_items_are_left_out() -> None:
    one = summarize_repeats({4: [T, F]})
    assert one.sd is None and one.repeats == (4,) and one.pass_hat_k == one.pass_at_k == 0.5
    assert one.consistency == 1.0  # with one repeat every item agrees with itself
    s = summarize_repeats({0: [T, None, F], 1: [T, T, T]}, {0: 0.9, 1: 0.8})
    assert s.accuracy == (0.9, 0.8)  # the reported (e.g. judge-corrected) accuracies are taken as given
    assert s.n_items == 2 and s.unscored == 1 and s.pass_hat_k == 0.5 and s.consistency == 0.5
    with pytest.raises(ValueError, match="different item lists"):
        summarize_repeats({0: [T], 1: [T, F]})
    with pytest.raises(ValueError, match="no repeats"):
        summarize_repeats({})


def _line(rid: str, repeat: object = None, answer: str = "x") -> str:
    record: dict[str, object] = {"id": rid, "answer": [answer], "citations": []}
    if repeat is not None:
        record["repeat"] = repeat
    return json.dumps(record)


def test_a_file_is_cut_per_repeat_keeping_line_numbers() -> None:
    text = "\n".join([_line("a", 0), _line("a", 1), _line("b", 0, "y"), _line("b", 1)]) + "\n"
    parts = split_repeats(text, "r.jsonl")
    assert parts is not None and sorted(parts) == [0, 1]
    zero = parse_results_text(parts[0], "r.jsonl")
    assert [(p.id, p.line, p.answer) for p in zero] == [("a", 1, ("x",)), ("b", 3, ("y",))]
    assert [(p.id, p.line) for p in parse_results_text(parts[1], "r.jsonl")] == [("a", 2), ("b", 4)]


def test_ordinary_files_are_not_cut_and_duplicates_stay_refused() -> None:
    plain = _line("a") + "\n" + _line("a") + "\n"
    assert split_repeats(plain, "r.jsonl") is None
    assert split_repeats("not json\n" + _line("a", 0), "r.jsonl") is None  # left to the parser, which names it
    from madqa.metric.matching import match_predictions
    from madqa.metric.schema import Reference

    refs = [Reference(id="a", question="q", answer_variants=(("x",),), evidence=(), hop_type="single")]
    with pytest.raises(InputError, match="predicted more than once"):
        match_predictions(parse_results_text(plain, "r.jsonl"), refs)
    twice_in_a_repeat = split_repeats(_line("a", 0) + "\n" + _line("a", 0) + "\n", "r.jsonl")
    with pytest.raises(InputError, match="predicted more than once"):
        match_predictions(parse_results_text(twice_in_a_repeat[0], "r.jsonl"), refs)


def test_mixed_and_bad_repeats_are_refused_naming_the_line() -> None:
    with pytest.raises(InputError, match=r"r.jsonl line 2: the line has no 'repeat'"):
        split_repeats(_line("a", 0) + "\n" + _line("b") + "\n", "r.jsonl")
    for bad in (-1, "0", 1.5, True):
        with pytest.raises(InputError, match=r"r.jsonl line 1: 'repeat' must be a non-negative integer"):
            split_repeats(_line("a", bad) + "\n", "r.jsonl")


def test_the_docstring_examples() -> None:
    result = doctest.testmod(repeats)
    assert result.attempted > 0 and result.failed == 0
