"""`madqa figures` on the searches and times of the constructed runs: retrieval by iteration and recovery,
query drift, response time and evidence distance; every number equals a hand-computed value (the computation is
in the comments). The runs (four dev questions each, three systems A, B and H) are described in
``helpers/paper_runs.py``.
"""

from __future__ import annotations

import math
from typing import Any

import helpers.paper_runs as paper_runs
import pytest
from helpers.paper_runs import CD, CP, S1, S2, N

#: Drawing every figure at print quality (the ``made`` fixture, then again per test) takes a minute or more.
pytestmark = pytest.mark.slow

pytest.importorskip("matplotlib")

made = paper_runs.made_fixture


def test_retrieval_and_recovery(made: dict[str, Any]) -> None:
    curves = made["figs"]["retrieval_by_iteration"]["data"]

    def pts(name: str) -> list[tuple]:
        return [
            (q["iteration"], q["n_queried"], q["doc_hit"], q["page_hit"], q["doc_found"], q["page_found"])
            for q in curves[name]["points"]
        ]

    # A: first doc hit S1 2, CP 1, S2 never, CD 1; first page hit S1 2, CP 1, others never (4 usable items)
    assert pts("A") == [(1, 4, 0.5, 0.25, 0.5, 0.25), (2, 2, 0.5, 0.5, 0.75, 0.5)]
    # B: S1 1/1, CP doc at 2 and page at 3, S2 1/1, CD no query (still usable: 4 items, 3 queried at iteration 1)
    assert pts("B") == [
        (1, 3, pytest.approx(2 / 3), pytest.approx(2 / 3), 0.5, 0.5),
        (2, 1, 1.0, 0.0, 0.75, 0.5),
        (3, 1, 1.0, 1.0, 0.75, 0.75),
    ]
    # H: S1, CP, CD at 1; S2 at 2 (document and page alike)
    assert pts("H") == [(1, 4, 0.75, 0.75, 0.75, 0.75), (2, 2, 1.0, 1.0, 1.0, 1.0)]
    for name in "ABH":  # the 34 questions without a line have no history
        assert curves[name]["n"] == 4 and curves[name]["excluded"] == {"no_history": 34, "no_pages": 0, "no_gold": 0}
    rec = made["figs"]["recovery"]["data"]

    def r(name: str, level: str) -> tuple:
        x = rec[name][level]
        return (
            x["n_usable"],
            x["n_zero_queries"],
            x["n_failed_first"],
            x["n_recovered"],
            x["recovery_rate"],
            x["n_correct"],
            x["n_unscored"],
            x["correct_rate"],
        )

    # A document: S1 (found at 2) and S2 (never) missed first; S1 recovered and correct
    assert r("A", "document") == (4, 0, 2, 1, 0.5, 1, 0, 0.5)
    # A page: S1, S2, CD missed first; S1 recovered and correct
    assert r("A", "page") == (4, 0, 3, 1, pytest.approx(1 / 3), 1, 0, pytest.approx(1 / 3))
    # B: CD has no query; CP missed first, found later (doc at 2, page at 3), answered wrong
    assert r("B", "document") == (3, 1, 1, 1, 1.0, 0, 0, 0.0) and r("B", "page") == (3, 1, 1, 1, 1.0, 0, 0, 0.0)
    # H: S2 missed first, found at 2, correct
    assert r("H", "document") == (4, 0, 1, 1, 1.0, 1, 0, 1.0) and r("H", "page") == r("H", "document")
    sm = made["figs"]["single_vs_multi_query"]["data"]

    def q(name: str) -> tuple:
        x = sm[name]
        return (
            x["n_single"],
            x["single"],
            x["n_multi"],
            x["multi"],
            x["n_zero"],
            x["zero"],
            x["gap"],
            x["n_no_history"],
            x["n_unscored"],
        )

    # A: one query CP ✓ CD ✗, several S1 ✓ S2 ✗; B: one S1 ✓ S2 ✓, several CP ✗, none CD ✗; H: one S1 ✗ CD ✗,
    # several CP ✓ S2 ✓
    assert q("A") == (2, 0.5, 2, 0.5, 0, None, 0.0, 34, 0)
    assert q("B") == (2, 1.0, 1, 0.0, 1, 0.0, 1.0, 34, 0)
    assert q("H") == (2, 0.0, 2, 1.0, 0, None, -1.0, 34, 0)


def test_drift(made: dict[str, Any]) -> None:
    d = made["figs"]["drift"]["data"]
    # mean of 1 - cos over consecutive queries: A S1 0->90: 1, S2 0->60: 1/2; B CP 0, 0, 90: (0 + 1)/2;
    # H CP 0->60: 1/2, S2 0->90: 1; one query or none: no drift
    drifts = {
        n: {q: v["drift"] for q, v in items.items() if v["drift"] is not None} for n, items in d["items"].items()
    }
    assert drifts == {
        "A": {S1: pytest.approx(1.0), S2: pytest.approx(0.5)},
        "B": {CP: pytest.approx(0.5)},
        "H": {CP: pytest.approx(0.5), S2: pytest.approx(1.0)},
    }
    assert d["items"]["B"][CD] == {"drift": None, "correct": False, "queries": 0}
    assert d["items"]["A"][S1] == {"drift": pytest.approx(1.0), "correct": True, "queries": 2}
    assert d["items"]["H"]["q0012"] == {"drift": None, "correct": False, "queries": 0}  # no line: no history
    s = d["summaries"]
    # A and H: values 0.5 and 1: mean = median 0.75, quartiles (linear) 0.625 and 0.875; B: 0.5 alone
    for name in "AH":
        assert (s[name]["n"], s[name]["n_excluded"]) == (2, 36)
        assert [s[name][k] for k in ("mean", "median", "q1", "q3", "iqr")] == pytest.approx(
            [0.75, 0.75, 0.625, 0.875, 0.25]
        )
    assert (s["B"]["n"], s["B"]["n_excluded"], s["B"]["median"], s["B"]["iqr"]) == (1, 37, pytest.approx(0.5), 0.0)
    c = made["figs"]["drift_vs_accuracy"]["data"]
    acc = pytest.approx(2 / N)
    assert {n: (p["median_drift"], p["accuracy"], p["human"]) for n, p in c["points"].items()} == {
        "A": (pytest.approx(0.75), acc, False),
        "B": (pytest.approx(0.5), acc, False),
        "H": (pytest.approx(0.75), acc, True),
    }
    # every run has accuracy 2/38: a constant variable has no correlation
    assert c["median"] == {
        "n": 3,
        "n_excluded": 0,
        "pearson": None,
        "pearson_p": None,
        "spearman": None,
        "spearman_p": None,
    }


def test_response_time(made: dict[str, Any]) -> None:
    t = made["figs"]["response_time"]["data"]

    def bins(name: str) -> list[tuple]:
        return [(b["low"], b["high"], b["n"], b["accuracy"]) for b in t[name]["bins"]["bins"]]

    # A: 30 ✓, 90 ✓, 150 ✗, 700 ✗ in the bins <60, 60-120, 120-240, 240-600, >=600 s
    assert bins("A") == [
        (None, 60, 1, 1.0),
        (60, 120, 1, 1.0),
        (120, 240, 1, 0.0),
        (240, 600, 0, None),
        (600, None, 1, 0.0),
    ]
    # B: 20 ✓, 100 ✗, 40 ✓, 5 ✗
    assert bins("B") == [
        (None, 60, 3, pytest.approx(2 / 3)),
        (60, 120, 1, 0.0),
        (120, 240, 0, None),
        (240, 600, 0, None),
        (600, None, 0, None),
    ]
    # H: 50 ✗, 200 ✓, 70 ✓, 400 ✗
    assert bins("H") == [
        (None, 60, 1, 0.0),
        (60, 120, 1, 1.0),
        (120, 240, 1, 1.0),
        (240, 600, 1, 0.0),
        (600, None, 0, None),
    ]
    assert (t["H"]["human"], t["A"]["bins"]["n"], t["A"]["bins"]["n_excluded"], t["A"]["bins"]["accuracy"]) == (
        True,
        4,
        34,
        0.5,
    )
    sec = t["A"]["seconds"]
    # [30, 90, 150, 700]: mean 242.5, median 120, q1 = 30 + 0.75 * 60 = 75, q3 = 150 + 0.25 * 550 = 287.5
    assert [sec[k] for k in ("n", "n_excluded", "mean", "median", "q1", "q3", "iqr")] == [
        4,
        34,
        242.5,
        120.0,
        75.0,
        287.5,
        212.5,
    ]
    r = t["A"]["r"]
    # Pearson: dx = (-212.5, -152.5, -92.5, 457.5), dy = (.5, .5, -.5, -.5): sum dx dy = -365, sum dx^2 = 286275,
    # sum dy^2 = 1 -> r = -365 / sqrt(286275); p (t with 2 df): t = r sqrt(2) / sqrt(1 - r^2),
    # p = 1 - |t| / sqrt(t^2 + 2)
    pearson = -365 / math.sqrt(286275)
    tt = pearson * math.sqrt(2) / math.sqrt(1 - pearson**2)
    assert (r["n"], r["pearson"], r["pearson_p"]) == (
        4,
        pytest.approx(pearson),
        pytest.approx(1 - abs(tt) / math.sqrt(tt**2 + 2)),
    )
    # Spearman: ranks (1, 2, 3, 4) and (3.5, 3.5, 1.5, 1.5): rho = -4 / sqrt(5 * 4), p as above
    rho = -4 / math.sqrt(20)
    ts = rho * math.sqrt(2) / math.sqrt(1 - rho**2)
    assert (r["spearman"], r["spearman_p"]) == pytest.approx((rho, 1 - abs(ts) / math.sqrt(ts**2 + 2)))
    # B [5, 20, 40, 100]: mean 41.25, median 30, q1 5 + 0.75 * 15, q3 40 + 0.25 * 60; H [50, 70, 200, 400]: mean 180,
    # median 135, q1 50 + 0.75 * 20, q3 200 + 0.25 * 200
    assert [t["B"]["seconds"][k] for k in ("mean", "median", "q1", "q3")] == [41.25, 30.0, 16.25, 55.0]
    assert [t["H"]["seconds"][k] for k in ("mean", "median", "q1", "q3")] == [180.0, 135.0, 65.0, 250.0]


def counts_by_semantic_bin(part: dict[str, Any]) -> list[tuple[int, float | None]]:
    """(questions, accuracy) in each semantic-distance bin of one part (same document / cross document)."""
    return [(b["n"], b["accuracy"]) for b in part["by_semantic"]["bins"]]


def test_evidence_distance(made: dict[str, Any]) -> None:
    d = made["figs"]["evidence_distance"]["data"]
    assert (d["systems"], d["n_multi_hop"], d["n_pages_without_text"]) == (["A", "B"], 7, 0)
    # page vectors (1, 0), SPECIAL_PAGE (riverton 2022 p6) (0, 1): CP (p3, p6) distance 1, page gap 3; q0097
    # (permit 0147 p1, p2) 0, gap 1; q0162 (handbook p93, p96) 0, gap 3; cross-document q0148 (lesson p2, riverton
    # 2022 p6) 1; q0072, q0098, q0129 0. Accuracy: share of A, B correct: CP 1/2, all others 0.
    q = {k: (v["same_document"], v["semantic"], v["physical"], v["accuracy"]) for k, v in d["questions"].items()}
    assert q == {
        CP: (True, 1.0, 3.0, 0.5),
        "q0097": (True, 0.0, 1.0, 0.0),
        "q0162": (True, 0.0, 3.0, 0.0),
        "q0072": (False, 0.0, None, 0.0),
        "q0098": (False, 0.0, None, 0.0),
        "q0129": (False, 0.0, None, 0.0),
        "q0148": (False, 1.0, None, 0.0),
    }
    same = d["same_document"]
    # bins <0.15: q0097, q0162 (0, 0); >= 0.6: CP (1/2); semantic (1, 0, 0) vs accuracy (1/2, 0, 0): r = rho = 1
    assert counts_by_semantic_bin(same) == [(2, 0.0), (0, None), (0, None), (0, None), (1, 0.5)]
    assert (same["by_semantic"]["n"], same["by_semantic"]["accuracy"]) == (3, pytest.approx(1 / 6))
    assert (same["semantic_r"]["pearson"], same["semantic_r"]["spearman"]) == pytest.approx((1.0, 1.0))
    # a perfect correlation: both p-values 0
    assert (same["semantic_r"]["pearson_p"], same["semantic_r"]["spearman_p"]) == pytest.approx((0, 0), abs=1e-6)
    # the paper's bins (Tables 14-15): < 0.15, 0.15-0.30, 0.30-0.45, 0.45-0.60, >= 0.60
    assert [(b["low"], b["high"]) for b in same["by_semantic"]["bins"]] == [
        (None, 0.15),
        (0.15, 0.3),
        (0.3, 0.45),
        (0.45, 0.6),
        (0.6, None),
    ]
    # page gap (3, 1, 3) vs (1/2, 0, 0): dx = (2/3, -4/3, 2/3), dy = (1/3, -1/6, -1/6): cov 1/3, sxx 24/9, syy 1/6
    # -> r = (1/3) / sqrt(24/54) = 1/2; p (t with 1 df, Cauchy): t = 1/sqrt(3) -> p = 1 - 2 atan(t) / pi = 2/3.
    # Spearman ranks (2.5, 1, 2.5) vs (3, 1.5, 1.5): rho = 0.75 / 1.5 = 1/2, p = 2/3
    phys = same["physical_r"]
    assert [phys[k] for k in ("n", "pearson", "pearson_p", "spearman", "spearman_p")] == pytest.approx(
        [3, 0.5, 2 / 3, 0.5, 2 / 3]
    )
    cross = d["cross_document"]
    # 3 at distance 0 and q0148 at 1, all at accuracy 0: the constant outcome has no correlation
    assert counts_by_semantic_bin(cross) == [(3, 0.0), (0, None), (0, None), (0, None), (1, 0.0)]
    assert cross["semantic_r"]["pearson"] is None and cross["physical_r"] is None and cross["n_no_distance"] == 0
