"""The explorer's summary figures (issue 44, item 19 and the print-ready figures): each run's budget curve goes on
to the largest budget of all runs, flat after its own last step (as ``madqa figures`` and the paper draw it), and
the figures are drawn at 200 dpi. Hand-written results lines on the built sample's dev split: run ``short`` takes
1–2 steps per question, run ``long`` 1–6."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest


def _lines(gold: list[dict[str, Any]], steps_of: Any) -> str:
    """One line per gold question: every third answered with its gold answer, the effort ``steps_of(i)``."""
    rows = []
    for i, g in enumerate(gold):
        answer = list(g["answer_variants"][0]) if i % 3 == 0 else ["zzz-wrong"]
        rows.append(
            {"id": g["id"], "question": g["question"], "answer": answer, "citations": [], "steps": steps_of(i)}
        )
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture(scope="module")
def ws(layout) -> Any:
    from madqa.loading_script.load import load_gold
    from madqa.space.explore.runs import load_gold_references, open_workspace

    gold = load_gold("dev")
    sources = [("short.jsonl", _lines(gold, lambda i: 1 + i % 2)), ("long.jsonl", _lines(gold, lambda i: 1 + i % 6))]
    return open_workspace(sources, load_gold_references("dev"), split="dev", resamples=50)


def test_every_budget_curve_reaches_the_common_maximum_flat_after_its_last_step(ws) -> None:
    from madqa.space.explore.figures import budget_series

    series = budget_series(ws.runs)
    short, long = series["short"], series["long"]
    assert long == ([1, 2, 3, 4, 5, 6], [100 * p["accuracy"] for p in ws.run("long").report["budget_curve"]], 6)
    measured = [100 * p["accuracy"] for p in ws.run("short").report["budget_curve"]]
    assert [p["budget"] for p in ws.run("short").report["budget_curve"]] == [1, 2]  # the run's own curve stops at 2
    assert short == ([1, 2, 6], [*measured, measured[-1]], 2)  # drawn on to 6, flat at its accuracy
    assert short[1][-1] == pytest.approx(100 * ws.run("short").report["accuracy"])  # every item is within 2 steps


def test_summary_figures_are_print_ready_and_fill_their_container(ws) -> None:
    from PIL import Image

    from madqa.space.explore.figures import DPI, FIG_SIZE, budget_figure
    from madqa.space.explore.html import summary_html

    uri = budget_figure(ws.runs)
    image = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert DPI >= 200 and image.size == (round(FIG_SIZE[0] * DPI), round(FIG_SIZE[1] * DPI)), image.size
    html = summary_html(ws)
    assert html.count("class='summary-figure'") == 3 + len(ws.runs)
    assert "alt='accuracy vs step budget'" in html and "width:100%" in html


def test_a_run_name_with_dollars_is_drawn_as_written(layout) -> None:
    # an uploaded file named "$\\undefinedcmd$.jsonl" made matplotlib parse math and raise in the explorer
    from madqa.loading_script.load import load_gold
    from madqa.space.explore.html import summary_html
    from madqa.space.explore.runs import load_gold_references, open_workspace

    lines = _lines(load_gold("dev"), lambda i: 1 + i % 3)
    ws = open_workspace([("$\\undefinedcmd$.jsonl", lines)], load_gold_references("dev"), split="dev", resamples=20)
    assert summary_html(ws).count("class='summary-figure'") == 4
