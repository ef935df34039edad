"""Aggregates: budget curve, wasted effort, error shares, breakdowns, Cohen's κ."""

from __future__ import annotations

import doctest

import pytest

from madqa.metric import aggregate
from madqa.metric.aggregate import (
    breakdown,
    budget_curve,
    cohen_kappa,
    error_breakdown,
    kappa_matrix,
    wasted_effort_ratio,
)
from madqa.metric.schema import DEFAULT_CALIBRATION, Citation, ItemScore, Reference


def item(correct, steps, error=None, score=None, pf1=0.0, df1=0.0):
    sc = (1.0 if correct else 0.0) if score is None else score
    return ItemScore("x", sc if correct is not None else None, correct, 0.0, pf1, df1, steps, error, "anls")


def test_budget_curve_hand_values():
    items = [item(True, 1), item(True, 3), item(False, 2, "retrieval"), item(True, None), item(True, 0)]
    # N=1: steps<=1 and correct: items 0 and 4 -> 2/5; N=2: 2/5; N=3: 3/5 (unknown effort never counts)
    assert budget_curve(items) == [
        {"budget": 1, "accuracy": 0.4},
        {"budget": 2, "accuracy": 0.4},
        {"budget": 3, "accuracy": 0.6},
    ]
    assert [p["budget"] for p in budget_curve(items, max_budget=5)] == [1, 2, 3, 4, 5]
    assert budget_curve(items, max_budget=5)[-1]["accuracy"] == 0.6
    # unscored items are left out of the denominator
    assert budget_curve([item(True, 1), item(None, 1)]) == [{"budget": 1, "accuracy": 1.0}]
    assert budget_curve([]) == []


def dense_reference(items, top):
    """Accuracy at every budget 1..top, straight from the definition."""
    scored = [it for it in items if it.correct is not None]
    return {
        n: sum(1 for it in scored if it.correct and it.steps is not None and it.steps <= n) / len(scored)
        for n in range(1, top + 1)
    }


def test_budget_curve_size_is_bounded_and_values_exact():
    # issue #10: steps 1000000 stored a 37 MB curve (one point per budget); 10**10 raised MemoryError
    items = [
        item(True, 0),
        item(True, 7),
        item(False, 150, "retrieval"),
        item(True, 150),
        item(True, 4000),
        item(False, None),
        item(True, None),
        item(None, 3),
    ]
    curve = budget_curve(items)
    assert [p["budget"] for p in curve] == [1, 7, 150, 4000]  # 1, distinct efforts of scored items, T
    ref = dense_reference(items, 4000)
    assert all(p["accuracy"] == ref[p["budget"]] for p in curve)
    # an unlisted budget has the value of the listed budget before it
    listed = [p["budget"] for p in curve]
    for n in range(1, 4001):
        before = max(b for b in listed if b <= n)
        assert ref[n] == next(p["accuracy"] for p in curve if p["budget"] == before), n
    huge = budget_curve([item(True, 5), item(False, 10**5)], max_budget=10**10)
    assert huge == [
        {"budget": 1, "accuracy": 0.0},
        {"budget": 5, "accuracy": 0.5},
        {"budget": 10**5, "accuracy": 0.5},
        {"budget": 10**10, "accuracy": 0.5},
    ]
    assert len(budget_curve([item(True, s) for s in range(0, 10**5, 7)])) <= 10**5 // 7 + 2
    # up to DENSE_BUDGET_POINTS budgets, every budget is listed
    assert [p["budget"] for p in budget_curve([item(True, 100)])] == list(range(1, 101))
    assert [p["budget"] for p in budget_curve([item(True, 101)])] == [1, 101]


def test_wasted_effort_ratio():
    items = [item(True, 2), item(True, 4), item(False, 9, "retrieval"), item(False, 3, "navigation")]
    items.append(item(False, None))
    assert wasted_effort_ratio(items) == pytest.approx((12 / 2) / (6 / 2))
    assert wasted_effort_ratio([item(True, 2)]) is None
    assert wasted_effort_ratio([item(True, 0), item(False, 3)]) is None


def test_error_breakdown_counts_and_shares():
    items = [
        item(False, 1, "retrieval"),
        item(False, 1, "retrieval"),
        item(False, 1, "comprehension"),
        item(False, 1, "no_answer"),
        item(True, 1),
    ]
    out = error_breakdown(items)
    assert out["n_incorrect"] == 4
    assert out["counts"] == {"retrieval": 2, "navigation": 0, "comprehension": 1, "no_answer": 1}
    assert out["shares"] == {"retrieval": 0.5, "navigation": 0.0, "comprehension": 0.25, "no_answer": 0.25}
    assert error_breakdown([item(True, 1)])["shares"]["retrieval"] is None


def test_cohen_kappa_hand_values():
    # po = 3/4, pa = 1/2, pb = 1/4, pe = 1/8 + 3/8 = 1/2 -> kappa = (3/4 - 1/2) / (1/2) = 1/2
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == pytest.approx(1.0)
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == pytest.approx(-1.0)
    # 10 items: a = 6 correct, b = 5 correct, agree on 7 -> po = .7, pe = .6*.5 + .4*.5 = .5, kappa = .4
    a = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    b = [1, 1, 1, 1, 0, 0, 1, 0, 0, 0]
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa([1, 1], [1, 1]) is None  # chance agreement 1: undefined
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 0])


def test_kappa_matrix_skips_unscored_pairs():
    m = kappa_matrix({"A": [True, True, False, False, None], "B": [True, False, False, False, True]})
    assert m["A"]["B"] == pytest.approx(0.5) and m["B"]["A"] == pytest.approx(0.5)
    assert m["A"]["A"] == pytest.approx(1.0)


def test_breakdown_groups_and_order():
    refs = [
        Reference(f"q{i}", "Q", (("a",),), (Citation("d", 1),), hop, dom)
        for i, (hop, dom) in enumerate([("single", "fin"), ("cross_doc", "law"), ("single", "fin")])
    ]
    items = [item(True, 1, pf1=1.0, df1=1.0), item(False, 1, "retrieval"), item(False, 2, "navigation", df1=1.0)]
    by_hop = breakdown(
        items, refs, lambda r: r.hop_type, "anls", DEFAULT_CALIBRATION, order=("single", "cross_page", "cross_doc")
    )
    assert list(by_hop) == ["single", "cross_page", "cross_doc"]
    assert by_hop["single"]["n"] == 2 and by_hop["single"]["accuracy"] == 0.5 and by_hop["single"]["doc_f1"] == 1.0
    assert by_hop["cross_page"]["n"] == 0 and by_hop["cross_page"]["accuracy"] is None
    by_domain = breakdown(items, refs, lambda r: r.domain, "anls", DEFAULT_CALIBRATION)
    assert list(by_domain) == ["fin", "law"]


def test_doctests():
    assert doctest.testmod(aggregate).failed == 0
