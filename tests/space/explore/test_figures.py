"""`madqa figures` on constructed runs over the built sample's dev split (38 questions): every figure is drawn,
Table 3, the Kuiper order, accuracy against cost, the failure classes, the budget curves and kappa, and the
difficulty spectrum, each number equal to a hand-computed value (the computation is in the comments); the HTML page
has no external reference and opens offline in a browser. The figures over the runs' searches and times are in
``test_figures_searches.py``, what the command does with prices and missing or bad input in
``test_figures_inputs.py``. The runs (four dev questions each, three systems A, B and H) are described in
``helpers/paper_runs.py``.
"""

from __future__ import annotations

import math
import re
from typing import Any

import helpers.paper_runs as paper_runs
import pytest
from helpers.paper_runs import CP, S1, S2, N
from helpers.paper_runs import draw_figures as _figures

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
