"""`madqa figures` on what it is given: prices are overridable and a run priced only in part is named with why;
a figure whose input is missing is skipped with its reason; a mistake in the input is one line and exit
status 2. The runs (four dev questions each, three systems A, B and H) are described in ``helpers/paper_runs.py``.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

import helpers.paper_runs as paper_runs
import pytest
from helpers.paper_runs import EMBEDDER
from helpers.paper_runs import draw_figures as _figures

from madqa.cli import main

#: Drawing every figure at print quality (the ``made`` fixture, then again per test) takes a minute or more.
pytestmark = pytest.mark.slow

pytest.importorskip("matplotlib")

made = paper_runs.made_fixture


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
