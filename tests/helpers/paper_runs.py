"""The runs of the `madqa figures` tests (``test_figures*.py``), over the built sample's dev split (38 questions), and
the ``made`` fixture that draws them once per test session (per xdist worker).

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
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from madqa.cli import main

#: ``--embedder`` for :class:`FakeEmbedder`.
EMBEDDER = "py:helpers.paper_runs:FakeEmbedder"

S1, CP, S2, CD = "q0006", "q0028", "q0034", "q0072"
R19, R22, MENU = (
    "riverton_water_annual_report_2019.pdf",
    "riverton_water_annual_report_2022.pdf",
    "blue_heron_bistro_dinner_menu.pdf",
)
INSP = "harlan_county_inspection_blue_heron_bistro.pdf"
N = 38
#: The page whose text embeds apart from every other page (at 90 degrees): CP's p6, also CD-like q0148's p2.
SPECIAL_PAGE = ("riverton_water_annual_report_2022", 6)


class FakeEmbedder:
    """Queries ``… @DEG`` → the unit vector at DEG degrees; page texts → (1, 0), except SPECIAL_PAGE's → (0, 1)."""

    name = "fake"
    special: set[str] | None = None

    def embed(self, texts: list[str]) -> np.ndarray:
        if FakeEmbedder.special is None:
            from madqa.loading_script.load import load_pages
            from madqa.metric.scoring import doc_key

            FakeEmbedder.special = {
                r["text"] for r in load_pages(None) if (doc_key(r["document"]), r["page"]) == SPECIAL_PAGE
            }
        rows = []
        for text in texts:
            m = re.search(r"@(\d+)$", text)
            if m:
                a = math.radians(int(m.group(1)))
                rows.append([math.cos(a), math.sin(a)])
            else:
                rows.append([0.0, 1.0] if text in FakeEmbedder.special else [1.0, 0.0])
        return np.asarray(rows)


def search(deg: int, *pages: tuple[str, int]) -> dict[str, Any]:
    return {"query": f"query @{deg}", "results": [{"document": d, "page": p} for d, p in pages], "count": len(pages)}


MISS = ("unrelated.pdf", 1)


def line(
    qid: str, answer: list[str], cites: list[tuple[str, int]], history: list[dict], elapsed: float, **extra: Any
) -> dict[str, Any]:
    return {
        "id": qid,
        "question": "?",
        "answer": answer,
        "citations": [{"document": d, "page": p} for d, p in cites],
        "search_history": history,
        "elapsed_s": elapsed,
        **extra,
    }


def agent(model: str, tokens: tuple[int, int]) -> dict[str, Any]:
    return {"model": model, "agent": "bm25", "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]}}


HUMAN = {"system_type": "human", "model": "human:me"}


def runs(gold: dict[str, dict]) -> dict[str, list[dict]]:
    ok = {q: list(gold[q]["answer_variants"][0]) for q in (S1, CP, S2)}
    wrong = ["zzzz"]
    insp = [(e["document"], e["page"]) for e in gold[CD]["evidence"]]
    gpt = "openai:gpt-4.1"
    a = [
        line(S1, ok[S1], [(R19, 5)], [search(0, MISS), search(90, (R19, 5))], 30, **agent(gpt, (1000, 100))),
        line(CP, ok[CP], [(R22, 3), (R22, 6)], [search(0, (R22, 3))], 90, **agent(gpt, (2000, 200))),
        line(S2, wrong, [(MENU, 1)], [search(0, MISS), search(60, MISS)], 150, **agent(gpt, (1000, 100))),
        line(CD, wrong, [], [search(0, (INSP, 1))], 700, **agent(gpt, (4000, 400))),
    ]
    b = [
        line(S1, ok[S1], [(R19, 5)], [search(0, (R19, 5))], 20, **agent("local", (500, 50))),
        line(
            CP,
            wrong,
            [(R22, 1)],
            [search(0, MISS), search(0, (R22, 1)), search(90, (R22, 6))],
            100,
            **agent("local", (1500, 150)),
        ),
        line(S2, ok[S2], [(MENU, 1)], [search(0, (MENU, 1))], 40, **agent("local", (500, 50))),
        line(CD, [], [], [], 5, **agent("local", (100, 10))),
    ]
    h = [
        line(S1, wrong, [(R19, 5)], [search(0, (R19, 5))], 50, **HUMAN),
        line(CP, ok[CP], [(R22, 3), (R22, 6)], [search(0, (R22, 6)), search(60, (R22, 3))], 200, **HUMAN),
        line(S2, ok[S2], [(MENU, 1)], [search(0, MISS), search(90, (MENU, 1))], 70, **HUMAN),
        line(CD, wrong, [insp[0]], [search(0, insp[0])], 400, **HUMAN),
    ]
    return {"A": a, "B": b, "H": h}


def draw_figures(runs: list[Path], out: Path, *flags: str) -> dict[str, Any]:
    """``madqa figures RUNS --split dev --output-dir OUT FLAGS``, which must succeed; the figures.json it wrote."""
    assert main(["figures", *(str(r) for r in runs), "--split", "dev", "--output-dir", str(out), *flags]) == 0
    return json.loads((out / "figures.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session", name="made")
def made_fixture(layout, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The three runs written, and `madqa figures` run once on them with the fake embedder."""
    from madqa.loading_script.load import load_gold

    gold = {r["id"]: r for r in load_gold("dev")}
    assert len(gold) == N and [gold[q]["hop_type"] for q in (S1, CP, S2, CD)] == [
        "single",
        "cross_page",
        "single",
        "cross_doc",
    ]
    folder = tmp_path_factory.mktemp("figures")
    paths = {}
    for name, rows in runs(gold).items():
        paths[name] = folder / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = folder / "out"
    doc = draw_figures([paths[n] for n in "ABH"], out, "--resamples", "50", "--embedder", EMBEDDER)
    return {"paths": paths, "folder": folder, "out": out, "doc": doc, "figs": doc["figures"], "gold": gold}
