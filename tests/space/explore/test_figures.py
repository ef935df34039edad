"""`madqa figures` on constructed runs over the built sample's dev split (38 questions): every number in
figures.json equals a hand-computed value (the computation is in the comments); the HTML page has no external
reference; a figure whose input is missing is skipped with its reason; prices are overridable and a run priced
only in part is named with why.

The runs answer four dev questions each (the other 34 are missing: incorrect, ``no_answer``, no history):
``S1`` q0006 (single, Financial, riverton 2019 p5), ``CP`` q0028 (cross_page, Financial, riverton 2022 p3+p6),
``S2`` q0034 (single, Commercial, blue heron menu p1), ``CD`` q0072 (cross_doc, Government, three inspection
reports p2). A query ``text @DEG`` embeds (with :class:`FakeEmbedder`) as the unit vector at angle DEG.

What each run does (queries: what they returned, and their angle):

* A (``openai:gpt-4.1``): S1 ✓ cites gold, queries miss @0 then hit @90; CP ✓ cites both pages, hits p3 @0; S2 ✗
  cites gold (comprehension), queries miss @0, miss @60; CD ✗ cites nothing (retrieval), query returns a gold
  document's page 1 @0.
* B (``local``): S1 ✓ cites gold, hit @0; CP ✗ cites p1 (navigation), queries miss @0, p1 @0, p6 @90; S2 ✓ cites
  gold, hit @0; CD ✗ empty answer (no_answer), no query.
* H (human): S1 ✗ cites gold (comprehension), hit @0; CP ✓ cites both, queries p6 @0, p3 @60; S2 ✓ cites gold,
  miss @0, hit @90; CD ✗ cites one of three gold pages (comprehension), hits it @0.
"""

from __future__ import annotations

import json
import math
import re
from html import escape
from typing import Any

import helpers.paper_runs as paper_runs
import pytest
from helpers.paper_runs import CD, CP, EMBEDDER, S1, S2, N
from helpers.paper_runs import draw_figures as _figures

from madqa.cli import main

pytestmark = pytest.mark.browser

pytest.importorskip("matplotlib")

made = paper_runs.made_fixture


def test_every_figure_is_drawn_and_the_page_is_self_contained(made: dict[str, Any]) -> None:
    figs, out = made["figs"], made["out"]
    assert [k for k, f in figs.items() if f["status"] != "ok"] == []
    assert list(figs) == [
        "table3",
        "accuracy_vs_cost",
        "failures_by_system",
        "failures_by_domain",
        "cascade",
        "budget_curves",
        "kappa",
        "difficulty",
        "retrieval_by_iteration",
        "recovery",
        "single_vs_multi_query",
        "drift",
        "drift_vs_accuracy",
        "response_time",
        "evidence_distance",
    ]
    for key, fig in figs.items():
        assert fig["file"] == f"{key}.png" and (out / fig["file"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*['"]?\s*(https?:)?//""", page, re.I)
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert page.count("src='data:image/png;base64,") == len(figs) and "H (human)" in page
    meta = made["doc"]
    assert (meta["split"], meta["n_gold"], meta["embedder"]) == ("dev", N, "fake")
    assert [(r["name"], r["human"]) for r in meta["runs"]] == [("A", False), ("B", False), ("H", True)]


def test_table3(made: dict[str, Any]) -> None:
    rows = {r["name"]: r for r in made["figs"]["table3"]["data"]["rows"]}
    a, b, h = rows["A"], rows["B"], rows["H"]
    # accuracy: 2 of 38 correct each (A: S1 CP, B: S1 S2, H: CP S2); SE = sqrt(p (1 - p) / 38) (anls mode: binomial)
    for r in (a, b, h):
        assert r["n"] == N and r["accuracy"] == pytest.approx(2 / N)
        assert r["accuracy_se"] == pytest.approx(math.sqrt(2 / N * (1 - 2 / N) / N))
    # 95% CI (anls mode: Agresti-Coull): n~ = 38 + z^2, p~ = (2 + z^2/2) / n~, p~ ± z sqrt(p~ (1 - p~) / n~)
    z = 1.959963984540054
    nt = N + z * z
    pt = (2 + z * z / 2) / nt
    half = z * math.sqrt(pt * (1 - pt) / nt)
    assert a["accuracy_ci"] == pytest.approx([max(0.0, pt - half), pt + half])
    # X-Page: the dev split has 3 cross_page questions (q0028, q0097, q0162); A and H solve CP, B none
    assert (a["x_page"], b["x_page"], h["x_page"]) == (pytest.approx(1 / 3), 0.0, pytest.approx(1 / 3))
    assert a["x_page_n"] == 3 and a["x_page_se"] == pytest.approx(math.sqrt(1 / 3 * 2 / 3 / 3))
    # X-Doc: 4 cross_doc questions (q0072, q0098, q0129, q0148), none solved: 0 ± 0
    assert (a["x_doc"], a["x_doc_n"], a["x_doc_se"], h["x_doc"]) == (0.0, 4, 0.0, 0.0)
    # Page F1 per item: A 1, 1, 1, 0; B 1, 0 (p1 is not gold), 1, 0; H 1, 1, 1, and CD: precision 1, recall 1/3 -> 0.5
    assert (a["page_f1"], b["page_f1"], h["page_f1"]) == pytest.approx((3 / N, 2 / N, 3.5 / N))
    # Doc F1: B's p1 is in the gold document (1); H's CD cites 1 of 3 gold documents (0.5)
    assert (a["doc_f1"], b["doc_f1"], h["doc_f1"]) == pytest.approx((3 / N, 3 / N, 3.5 / N))
    # mean steps over the answered items: A (2+1+2+1)/4, B (1+3+1+0)/4, H (1+2+2+1)/4
    assert (a["mean_steps"], b["mean_steps"], h["mean_steps"]) == (1.5, 1.25, 1.5)
    # Kuiper (block order, D_0 = 0): A efforts/outcomes (2,1) (1,1) (2,0) (1,0), mean 1/2: after effort 1
    # D = 1/2 - 1/2 = 0, after effort 2 D = 0 -> K = 0. B (1,1) (3,0) (1,1) (0,0): effort 0 -> -1/2, effort 1 -> +1/2,
    # effort 3 -> 0 -> K = 1/2 - (-1/2) = 1. H (1,0) (2,1) (2,1) (1,0): effort 1 -> -1, effort 2 -> 0 -> K = 1.
    assert (a["kuiper"], b["kuiper"], h["kuiper"]) == (0.0, 1.0, 1.0)
    # the Kuiper CI is a bootstrap (not computable by hand): the one `madqa compare` reports with the same seed
    for r in rows.values():
        lo, hi = r["kuiper_ci"]
        assert lo <= r["kuiper"] <= hi
    assert (a["human"], h["human"]) == (False, True)
    # Rank interval: every pair has 1 item right only in one run and 1 only in the other (McNemar p = 1): nothing
    # is significant, so each could rank 1-3, all in one tie group (marked ≈ on the page)
    assert [(r["rank"], r["tie_group"], r["tied"], r["kuiper_na"]) for r in (a, b, h)] == [("1–3", 1, True, False)] * 3
    page = (made["out"] / "index.html").read_text(encoding="utf-8")
    assert "1–3 ≈" in page and "Holm-corrected at 5% across pairs" in page


def test_table3_cells_say_na_for_a_fixed_effort_run() -> None:
    from madqa.space.explore.paper_figures import _cell

    flat = {"rank": "2", "tied": False, "kuiper": None, "kuiper_na": True}
    assert (_cell(flat, "kuiper", "num"), _cell(flat, "rank", "text")) == ("n/a (fixed effort)", "2")
    assert _cell({"kuiper": None}, "kuiper", "num") == "–" and _cell({"kuiper": 1.0}, "kuiper", "num") == "1.00"


def test_kuiper_order_is_the_one_asked_for_and_is_stated(made: dict[str, Any], tmp_path) -> None:
    # the default run (block order) says so in figures.json, under the table and on the page
    assert made["doc"]["kuiper_order"] == made["figs"]["table3"]["data"]["kuiper_order"] == "block"
    page = (made["out"] / "index.html").read_text(encoding="utf-8")
    assert "kuiper order block" in page and "tied efforts read as blocks (--kuiper-order block" in page
    out = tmp_path / "file"
    paths = made["paths"]
    runs = [paths[n] for n in "ABH"]
    doc = _figures(runs, out, "--kuiper-order", "file", "--embedder", "none", "--resamples", "20")
    table = doc["figures"]["table3"]["data"]
    assert doc["kuiper_order"] == table["kuiper_order"] == "file"
    rows = {r["name"]: r for r in table["rows"]}
    # D read at every k (paper F.3), ties in file order, mean 1/2. A's lines: S1 (2,1), CP (1,1), S2 (2,0), CD (1,0)
    # -> effort 1: CP +1/2, CD 0; effort 2: S1 +1/2, S2 0 -> K = 1/2 - 0 (blocks: 0). B: CD (0,0) -1/2, S1 0,
    # S2 +1/2, CP (3,0) 0 -> K = 1. H: S1 (1,0) -1/2, CD -1, CP (2,1) -1/2, S2 0 -> K = 0 - (-1) = 1.
    assert (rows["A"]["kuiper"], rows["B"]["kuiper"], rows["H"]["kuiper"]) == (0.5, 1.0, 1.0)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "kuiper order file" in page and "D read at every k, tied efforts in file order" in page
    assert "kuiper order block" not in page


def test_accuracy_vs_cost(made: dict[str, Any]) -> None:
    fig = made["figs"]["accuracy_vs_cost"]
    # A at the shipped gpt-4.1 price ($2 in, $8 out per million): 1000/100 -> $0.0028, 2000/200 -> $0.0056,
    # 1000/100 -> $0.0028, 4000/400 -> $0.0112; total $0.0224, per question $0.0056. B is local: $0.
    points = {p["name"]: p for p in fig["data"]["points"]}
    assert points["A"]["usd_total"] == pytest.approx(0.0224) and points["A"]["usd_per_question"] == pytest.approx(
        0.0056
    )
    assert (points["A"]["input_tokens"], points["A"]["output_tokens"]) == (8000, 800)
    assert (points["B"]["usd_total"], points["B"]["input_tokens"], points["B"]["output_tokens"]) == (0.0, 2600, 260)
    assert points["A"]["accuracy"] == pytest.approx(2 / N)
    assert fig["skipped_systems"] == {"H": "human run: no model tokens"}
    # the Pareto frontier: B costs nothing, so it is on it; A (dearer) only if it is more accurate
    assert fig["data"]["frontier"] == (["B", "A"] if points["A"]["accuracy"] > points["B"]["accuracy"] else ["B"])
    assert fig["data"]["cost"]["H"]["n_human"] == 4 and fig["data"]["prices"] == "built-in prices.yaml"
    assert fig["data"]["prices_as_of"] == "2025-09-29"  # the shipped table's date, printed with every cost
    # the four lines of gold ids each run has, all priced for A and B
    cost_a = fig["data"]["cost"]["A"]
    assert {
        k: cost_a[k]
        for k in ("n_lines", "n_priced", "n_human", "n_no_tokens", "n_unknown_model", "unknown_models", "complete")
    } == {
        "n_lines": 4,
        "n_priced": 4,
        "n_human": 0,
        "n_no_tokens": 0,
        "n_unknown_model": 0,
        "unknown_models": {},
        "complete": True,
    }


def test_failure_classes(made: dict[str, Any]) -> None:
    rows = {r["name"]: r for r in made["figs"]["failures_by_system"]["data"]["rows"]}
    # A: S2 comprehension, CD retrieval, 34 missing; B: CP navigation, CD (empty) + 34 missing = 35 no_answer;
    # H: S1 and CD comprehension, 34 missing
    assert rows["A"]["counts"] == {"retrieval": 1, "navigation": 0, "comprehension": 1, "no_answer": 34}
    assert rows["B"]["counts"] == {"retrieval": 0, "navigation": 1, "comprehension": 0, "no_answer": 35}
    assert rows["H"]["counts"] == {"retrieval": 0, "navigation": 0, "comprehension": 2, "no_answer": 34}
    assert [rows[n]["n_incorrect"] for n in "ABH"] == [36, 36, 36]
    assert rows["A"]["share_of_items"]["retrieval"] == pytest.approx(1 / N)
    assert rows["A"]["share_of_errors"]["no_answer"] == pytest.approx(34 / 36)
    assert rows["H"]["share_of_items"]["comprehension"] == pytest.approx(2 / N)
    dom = {r["domain"]: r for r in made["figs"]["failures_by_domain"]["data"]["rows"]}
    assert made["figs"]["failures_by_domain"]["data"]["pooled_systems"] == ["A", "B"]
    # dev domains: Financial 9, Commercial 6, Government 15, Education 3, Legal 3, Personal 2 (= 38)
    assert {d: r["n_questions"] for d, r in dom.items()} == {
        "Commercial": 6,
        "Education": 3,
        "Financial": 9,
        "Government": 15,
        "Legal": 3,
        "Personal": 2,
    }
    # Financial, pooled over A and B (18 pairs): correct A S1, A CP, B S1; B CP navigation; 7 + 7 missing
    fin = dom["Financial"]
    assert (fin["n_pooled"], fin["accuracy"]) == (18, pytest.approx(3 / 18))
    assert fin["counts"] == {"retrieval": 0, "navigation": 1, "comprehension": 0, "no_answer": 14}
    assert fin["per_system_counts"]["H"] == {"retrieval": 0, "navigation": 0, "comprehension": 1, "no_answer": 7}
    # Commercial (12 pairs): B S2 correct, A S2 comprehension, 5 + 5 missing; Government (30): A CD retrieval, B CD
    # no_answer, 14 + 14 missing
    assert (dom["Commercial"]["accuracy"], dom["Commercial"]["counts"]["comprehension"]) == (pytest.approx(1 / 12), 1)
    assert dom["Commercial"]["counts"]["no_answer"] == 10
    assert dom["Government"]["counts"] == {"retrieval": 1, "navigation": 0, "comprehension": 0, "no_answer": 29}
    assert dom["Government"]["accuracy"] == 0.0 and dom["Personal"]["n_pooled"] == 4
    assert dom["Government"]["share_of_items"]["no_answer"] == pytest.approx(29 / 30)
    cascade = {r["name"]: r for r in made["figs"]["cascade"]["data"]["rows"]}
    # items with Doc F1 > 0 / Page F1 > 0 / correct: A 3/3/2, B 3/2/2, H 4/4/2 (of 38)
    assert [cascade[n]["found_doc"] * N for n in "ABH"] == pytest.approx([3, 3, 4])
    assert [cascade[n]["found_page"] * N for n in "ABH"] == pytest.approx([3, 2, 4])
    assert [cascade[n]["correct"] * N for n in "ABH"] == pytest.approx([2, 2, 2])


def test_budget_curves_and_kappa(made: dict[str, Any]) -> None:
    fig = made["figs"]["budget_curves"]
    # largest effort 3 (B's CP); correct within N steps, of 38: A solves at 2 (S1) and 1 (CP); B at 1, 1; H at 2, 2
    assert fig["data"]["max_budget"] == 3
    curves = {n: [p["accuracy"] * N for p in c] for n, c in fig["data"]["curves"].items()}
    assert curves == {"A": pytest.approx([1, 2, 2]), "B": pytest.approx([2, 2, 2]), "H": pytest.approx([0, 2, 2])}
    assert [row["budget"] for row in fig["data"]["table"]] == [1, 2, 3]
    assert fig["data"]["table"][0]["H"] == 0.0 and fig["skipped_systems"] == {}
    k = made["figs"]["kappa"]["data"]
    # every pair disagrees on 2 of 38 items with 2 correct each: po = 36/38, pe = (2/38)^2 + (36/38)^2 = 1300/1444,
    # kappa = (1368 - 1300) / (1444 - 1300) = 68/144
    for x in "ABH":
        for y in "ABH":
            assert k["kappa"][x][y] == pytest.approx(1.0 if x == y else 68 / 144)
    # solved by both / only a / only b: A-B S1 / CP / S2; A-H CP / S1 / S2; B-H S2 / S1 / CP; 35 neither
    assert [(p["a"], p["b"], p["both"], p["only_a"], p["only_b"], p["neither"], p["skipped"]) for p in k["pairs"]] == [
        ("A", "B", 1, 1, 1, 35, 0),
        ("A", "H", 1, 1, 1, 35, 0),
        ("B", "H", 1, 1, 1, 35, 0),
    ]


def test_difficulty(made: dict[str, Any]) -> None:
    d = made["figs"]["difficulty"]["data"]
    assert d["systems"] == ["A", "B"] and d["unobserved_ids"] == []  # humans are not in the p-values
    p = {it["id"]: (it["n_systems"], it["n_correct"], it["p"]) for it in d["p_values"]}
    # S1 solved by A and B: 1; CP by A only and S2 by B only: 1/2; every other item: 0
    assert p == {q: (2, 2, 1.0) if q == S1 else (2, 1, 0.5) if q in (CP, S2) else (2, 0, 0.0) for q in made["gold"]}
    s = d["spectrum"]
    assert (s["easy"], sorted(s["discriminating"]), len(s["hard"]), s["n"]) == ([S1], [CP, S2], 35, N)
    assert (s["easy_share"], s["hard_share"], s["discriminating_share"]) == pytest.approx((1 / N, 35 / N, 2 / N))
    # weak/strong: A and B tie at 2/38, so by name A is weak, B strong; CP (A right, B wrong) is the anomaly
    a = d["anomalous"]
    assert (a["weak"], a["strong"], a["middle"]) == (["A"], ["B"], None)
    assert a["items"] == [{"id": CP, "p_weak": 1.0, "p_strong": 0.0}]
    assert (a["n_judged"], a["n_unjudged"], a["share"]) == (N, 0, pytest.approx(1 / N))
    # H fails S1 (model p = 1 >= 0.7), CD and the 34 missing (p = 0)
    assert d["human_only_failures"] == {"H": {"ids": [S1], "n_human_failures": 36, "n_no_model_p": 0, "min_p": 0.7}}


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
    assert [(b["n"], b["accuracy"]) for b in same["by_semantic"]["bins"]] == [
        (2, 0.0),
        (0, None),
        (0, None),
        (0, None),
        (1, 0.5),
    ]
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
    assert [(b["n"], b["accuracy"]) for b in cross["by_semantic"]["bins"]] == [
        (3, 0.0),
        (0, None),
        (0, None),
        (0, None),
        (1, 0.0),
    ]
    assert cross["semantic_r"]["pearson"] is None and cross["physical_r"] is None and cross["n_no_distance"] == 0


def test_prices_override_and_unknown_model(made: dict[str, Any], tmp_path) -> None:
    prices = tmp_path / "p.yaml"
    prices.write_text("gpt-4.1: {input: 1, output: 10}\n", encoding="utf-8")
    out = tmp_path / "out"
    paths = made["paths"]
    doc = _figures([paths["A"], paths["B"]], out, "--prices", str(prices), "--embedder", "none", "--resamples", "20")
    fig = doc["figures"]["accuracy_vs_cost"]
    # A at $1 in / $10 out: 1000/100 -> $0.002, 2000/200 -> $0.004, $0.002, 4000/400 -> $0.008: $0.016, $0.004 each
    assert [(p["name"], p["usd_total"], p["usd_per_question"]) for p in fig["data"]["points"]] == [
        ("A", pytest.approx(0.016), pytest.approx(0.004))
    ]
    # B's model is not in this table: counted and named, never free
    assert fig["skipped_systems"] == {"B": "0 of 4 lines priced: no price for model local (4 line(s))"}
    assert fig["data"]["cost"]["B"]["unknown_models"] == {"local": 4} and fig["data"]["cost"]["B"]["total_usd"] is None
    assert doc["prices"] == str(prices)
    assert doc["prices_as_of"] is None  # the file states no date: none is made up
    for key in ("drift", "drift_vs_accuracy", "evidence_distance"):
        assert doc["figures"][key]["status"] == "skipped" and doc["figures"][key]["reason"] == (
            "no embedder: --embedder none"
        )
        assert not (out / f"{key}.png").exists()
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Not drawn: no embedder: --embedder none" in page and "no price for model local" in page


def test_missing_inputs_are_skipped_with_reasons(made: dict[str, Any], tmp_path) -> None:
    # one run whose lines have only answers: no search_history, steps, tokens, model or times
    bare = tmp_path / "bare.jsonl"
    rows = [json.loads(x) for x in made["paths"]["A"].read_text(encoding="utf-8").splitlines()]
    bare.write_text(
        "".join(json.dumps({k: r[k] for k in ("id", "question", "answer", "citations")}) + "\n" for r in rows),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    figs = _figures([bare], out, "--resamples", "20", "--embedder", EMBEDDER)["figures"]
    reasons = {k: f["reason"] for k, f in figs.items() if f["status"] == "skipped"}
    assert reasons == {
        "accuracy_vs_cost": "no run is fully priced: bare: 0 of 4 lines priced: 4 line(s) without a model id or "
        "token counts",
        "budget_curves": "no run records its effort",
        "kappa": "κ needs two or more runs",
        "difficulty": "the spectrum needs two or more model runs (humans are not counted); given 1",
        "retrieval_by_iteration": "no run has a search_history with the pages each query returned",
        "recovery": "no run has a search_history with the pages each query returned",
        "single_vs_multi_query": "no run has a search_history",
        "drift": "no run has a trajectory with two or more queries",
        "drift_vs_accuracy": "no run has a trajectory with two or more queries",
        "response_time": "no run records response times",
    }
    assert figs["drift"]["skipped_systems"] == {"bare": "no search_history"}
    assert sorted(p.name for p in out.glob("*.png")) == sorted(f"{k}.png" for k in figs if k not in reasons)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert all(f"Not drawn: {escape(r)}" in page for r in reasons.values())


def test_mistakes_are_one_line_and_exit_2(made: dict[str, Any], tmp_path, caplog) -> None:
    bad_prices = tmp_path / "p.yaml"
    bad_prices.write_text("local: {input: 0, output: 0}\ngpt-4.1: {input: 2, output: free}\n", encoding="utf-8")
    a = str(made["paths"]["A"])
    assert (
        main(["figures", a, "--split", "dev", "--output-dir", str(tmp_path / "o"), "--prices", str(bad_prices)]) == 2
    )
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [
        f"{bad_prices} line 2: model 'gpt-4.1': field 'output': must be a number >= 0 (USD per million "
        "tokens), got 'free'"
    ]
    caplog.clear()
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "q0006", "question": "?", "answer": ["x"]}\n{"id": "q0028", "answer": 5}\n')
    assert main(["figures", str(broken), "--split", "dev", "--output-dir", str(tmp_path / "o")]) == 2
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and errors[0].startswith(f"{broken} line 2") and "answer" in errors[0]
    assert not (tmp_path / "o").exists()


def test_page_opens_offline_in_a_browser(made: dict[str, Any]) -> None:
    from helpers.browser_support import ARGS, CHROMIUM, require_browser

    sync_api = require_browser()
    requests: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_context(offline=True).new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.goto((made["out"] / "index.html").as_uri(), timeout=30_000)
            images = page.locator("section img")
            loaded = [
                images.nth(i).evaluate("img => img.complete && img.naturalWidth > 0") for i in range(images.count())
            ]
            cells = page.locator("#table3 tr").count()
        finally:
            browser.close()
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    assert len(loaded) == len(made["figs"]) and all(loaded) and cells == 4  # header + A, B, H
