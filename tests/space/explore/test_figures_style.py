"""`madqa figures` as a paper author takes it away: every drawn figure as PNG (300 dpi), PDF and SVG, one colour
per run in every figure (read back from the SVGs, where each run's artists carry the id ``run<i>-…``), no title or
figure number inside an image, fonts of 7 pt or more at a column's width, whole-number ticks on a step-budget axis,
n beside few-point statistics and empty bars, a figure with nothing to show listed as skipped with its reason, and
a warning for a run that misses questions.

The runs are those of ``test_figures.py`` (``helpers.paper_runs``: three runs A, B, H answering 4 of the dev
split's 38 questions each, drawn with the fake embedder).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import helpers.paper_runs as paper_runs
import pytest

from madqa.cli import main

pytestmark = pytest.mark.browser

pytest.importorskip("matplotlib")

made = paper_runs.made_fixture

SVG = "{http://www.w3.org/2000/svg}"
#: Figures drawn two panels wide (the text width); every other one fits one column.
WIDE_FIGURES = {"table3", "failures_by_system", "failures_by_domain", "retrieval_by_iteration", "evidence_distance"}
NEUTRAL = {"#000000", "#ffffff"}


def _svg(out: Path, figure: str) -> ET.Element:
    return ET.parse(out / f"{figure}.svg").getroot()


def _run_colours(root: ET.Element) -> dict[int, set[str]]:
    """Run index → the colours (black and white aside) of the SVG elements with id ``run<i>-…``, a hatch
    pattern's background included."""
    patterns = {
        p.get("id"): {r.get("fill") for r in p.iter(f"{SVG}rect")} for p in root.iter(f"{SVG}pattern") if p.get("id")
    }
    found: dict[int, set[str]] = {}
    for element in root.iter():
        m = re.match(r"run(\d+)-", element.get("id") or "")
        if not m:
            continue
        colours = found.setdefault(int(m.group(1)), set())
        for sub in element.iter():
            style = sub.get("style") or ""
            colours |= {c.lower() for c in re.findall(r"(?:fill|stroke):\s*(#[0-9a-fA-F]{6})", style)}
            for ref in re.findall(r"fill:\s*url\(#([^)]+)\)", style):
                colours |= {c.lower() for c in patterns.get(ref, set()) if c}
    return {i: c - NEUTRAL for i, c in found.items()}


def _texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def test_one_colour_per_run_in_every_figure(made: dict[str, Any]) -> None:
    doc, out = made["doc"], made["out"]
    names = [r["name"] for r in doc["runs"]]
    colours = doc["colors"]
    assert list(colours) == names == ["A", "B", "H"] and len(set(colours.values())) == 3
    seen: dict[str, set[str]] = {}
    for figure in doc["figures"]:
        for index, found in _run_colours(_svg(out, figure)).items():
            assert found == {colours[names[index]].lower()}, (figure, names[index], found)
            seen.setdefault(figure, set()).add(names[index])
    # every run in each figure that draws runs (the case: drift_vs_accuracy coloured apart from the rest)
    for figure in ("accuracy_vs_cost", "cascade", "budget_curves", "drift", "drift_vs_accuracy", "response_time"):
        expected = (
            {p["name"] for p in doc["figures"][figure]["data"]["points"]} if figure == "accuracy_vs_cost" else {*names}
        )
        assert seen.get(figure) == expected, figure


def test_every_drawn_figure_is_png_at_300_dpi_pdf_and_svg(made: dict[str, Any]) -> None:
    from PIL import Image

    out = made["out"]
    for figure, fig in made["figs"].items():
        assert fig["files"] == [f"{figure}.png", f"{figure}.pdf", f"{figure}.svg"] and fig["file"] == f"{figure}.png"
        with Image.open(out / f"{figure}.png") as png:
            assert png.format == "PNG" and [round(d) for d in png.info["dpi"]] == [300, 300]
            width_in = png.size[0] / 300
        svg_width_in = float(_svg(out, figure).get("width").removesuffix("pt")) / 72
        # the same drawing, cropped the same way: "tight" crops to the text's extent, which Agg (PNG) and the SVG
        # writer (text kept as text) measure a little differently on a table of text (table3: 5.82 vs 5.88 in)
        assert width_in == pytest.approx(svg_width_in, rel=0.02), figure
        pdf = (out / f"{figure}.pdf").read_bytes()
        # embedded TrueType fonts, never Type 3 (which camera-ready checks refuse)
        assert pdf.startswith(b"%PDF-") and b"/FontFile2" in pdf and b"/Type3" not in pdf
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<a href='budget_curves.pdf'>PDF</a>" in page and "<a href='budget_curves.svg'>SVG</a>" in page


def test_no_title_or_figure_number_in_an_image_and_fonts_readable(made: dict[str, Any]) -> None:
    out = made["out"]
    page = (out / "index.html").read_text(encoding="utf-8")
    for figure, fig in made["figs"].items():
        root = _svg(out, figure)
        texts = _texts(root)
        assert texts, figure  # text kept as text (svg.fonttype none), so this check can read it
        numbers = [t for t in texts if re.search(r"\b(Figs?\.|Table \d|H\.\d)|§", t)]
        assert numbers == [] and fig["title"] not in texts, (figure, numbers)
        assert f"{fig['paper']}: {fig['title']}".replace("'", "&#x27;") in page  # the page carries it
        sizes = [float(s) for s in re.findall(r"font-size:\s*([\d.]+)px", (out / f"{figure}.svg").read_text())]
        assert sizes and min(sizes) >= 7, (figure, min(sizes))
        # drawn at print size: one column (3.4 in) or the text width (7 in) of a two-column paper
        width_in = float(root.get("width").removesuffix("pt")) / 72
        assert width_in <= (7.0 if figure in WIDE_FIGURES else 3.4) + 0.05, (figure, width_in)


def test_few_point_statistics_and_empty_bars_show_n(made: dict[str, Any]) -> None:
    out, figs = made["out"], made["figs"]
    # Fig. 26: three systems, A and H both at median drift 0.75 and every accuracy 2/38: r is undefined, and says why
    drift_texts = " ".join(_texts(_svg(out, "drift_vs_accuracy")))
    assert figs["drift_vs_accuracy"]["data"]["median"]["n"] == 3
    assert "r not computed (a constant value over 3 systems)" in drift_texts and "r = –" not in drift_texts
    # H.1: same-document r over 3 questions, shown with its n
    distance = _svg(out, "evidence_distance")
    text = " ".join(_texts(distance))
    r = figs["evidence_distance"]["data"]["same_document"]["semantic_r"]
    assert r["n"] == 3 and f"r = {r['pearson']:.2f} (n = 3 questions)" in text
    # every bin's bar says its n, an empty one "n=0"
    bins = [
        b
        for key in ("same_document", "cross_document")
        for b in figs["evidence_distance"]["data"][key]["by_semantic"]["bins"]
    ]
    labels = [t for t in _texts(distance) if t.startswith("n=")]
    assert sorted(labels) == sorted(f"n={b['n']}" for b in bins) and "n=0" in labels
    # H.6: each run's two bars carry their n (B's two-or-more-queries bar: n=1 at 0 %)
    single_multi = [t for t in _texts(_svg(out, "single_vs_multi_query")) if t.startswith("n=")]
    expected = [
        f"n={v[f'n_{k}']}" for v in figs["single_vs_multi_query"]["data"].values() for k in ("single", "multi")
    ]
    assert sorted(single_multi) == sorted(expected)


def test_budget_axis_up_to_2_has_whole_number_ticks() -> None:
    from madqa.space.explore.paper_data import Figure
    from madqa.space.explore.paper_figures import DRAWERS
    from madqa.space.explore.paper_style import Runs, style

    curve = [{"budget": n, "accuracy": a} for n, a in ((0, 0.0), (1, 0.25), (2, 0.5))]
    fig = Figure("budget_curves", "Accuracy vs step budget", "Fig. 9", data={"curves": {"A": curve, "B": curve}})
    with style():
        drawn = DRAWERS["budget_curves"](fig, Runs(["A", "B"], {"A": False, "B": False}))
    drawn.canvas.draw()
    ax = drawn.axes[0]
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    labels = [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
    assert ticks == [0, 1, 2] and labels == ["0", "1", "2"]


def test_a_run_name_with_dollars_is_drawn_as_written(made: dict[str, Any], tmp_path) -> None:
    # "$\\undefinedcmd$" was parsed as matplotlib math and raised: a traceback, no figure written
    name = "$\\undefinedcmd$"
    out = tmp_path / "out"
    paths = [str(made["paths"][n]) for n in "AB"]
    doc = paper_runs.draw_figures(paths, out, "--names", name, "cost $5", "--embedder", "none", "--resamples", "20")
    drawn = [f for f, v in doc["figures"].items() if v["status"] == "ok"]
    assert drawn and all((out / f"{f}.png").is_file() for f in drawn)
    assert any(name in text for f in drawn for text in _texts(_svg(out, f)))


def test_nothing_to_show_is_skipped_with_its_reason(made: dict[str, Any], tmp_path, capsys) -> None:
    # B alone: its model is the local one, $0 a question: a cost axis with one point at 0 shows nothing
    out = tmp_path / "out"
    capsys.readouterr()
    args = ["figures", str(made["paths"]["B"]), "--split", "dev", "--output-dir", str(out)]
    assert main([*args, "--embedder", "none", "--resamples", "20", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    reason = "every priced run costs $0 per question (B): nothing to plot against cost"
    assert {"figure": "accuracy_vs_cost", "reason": reason} in summary["skipped"]
    assert "accuracy_vs_cost" not in summary["drawn"]
    doc = json.loads((out / "figures.json").read_text(encoding="utf-8"))
    fig = doc["figures"]["accuracy_vs_cost"]
    assert (fig["status"], fig["reason"], fig["files"], fig["denominator"]) == ("skipped", reason, [], None)
    assert sorted(p.name for p in out.iterdir() if p.stem == "accuracy_vs_cost") == []
    page = (out / "index.html").read_text(encoding="utf-8")
    drawn = len(summary["drawn"])
    assert f"Not drawn: {reason}" in page and f"{drawn} of {len(doc['figures'])} figures drawn" in page


def test_a_run_missing_questions_is_warned_about_and_figures_state_denominators(made: dict[str, Any]) -> None:
    doc, out = made["doc"], made["out"]
    page = (out / "index.html").read_text(encoding="utf-8")
    for name, label in (("A", "A"), ("B", "B"), ("H", "H (human)")):
        cover = doc["coverage"][name]
        assert (cover["answered"], cover["n_gold"]) == (4, 38)
        assert cover["warning"].startswith(
            f"{label} covers 4 of 38 questions: the 34 without a line count as incorrect"
        )
        assert f"<p class='coverage'>Coverage: {cover['warning']}" in page.replace("&#x27;", "'")
    notes = {k: f["denominator"] for k, f in doc["figures"].items()}
    assert all(notes.values()), notes
    assert "over all 38 questions per run" in notes["table3"] and "the 3 cross-page" in notes["table3"]
    assert notes["evidence_distance"].startswith("The split's 7 multi-hop questions")


@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_page_fits_the_screen_and_is_photographed(made: dict[str, Any], width: int, height: int, tmp_path) -> None:
    from helpers.browser_support import browser_page, require_browser, save_screens

    require_browser()
    with browser_page({"width": width, "height": height}) as page:
        page.goto((made["out"] / "index.html").as_uri(), timeout=30_000)
        # the page never scrolls sideways (Table 3 scrolls in its own box on a phone) and no figure is wider than it
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        widths = page.locator("section img").evaluate_all("imgs => imgs.map(i => i.getBoundingClientRect().width)")
        assert widths and max(widths) <= width
        assert page.locator("p.coverage").count() == 3
        save_screens(page, f"figures-{width}", tmp_path)
        page.locator("#fig-budget_curves").scroll_into_view_if_needed()
        save_screens(page, f"figures-{width}-figure", tmp_path)
