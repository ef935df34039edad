"""The question table: one row per gold question with each run's outcome, filters, and agreement between runs.

Outcome of an item in a run: ``correct``/``incorrect`` (binary, the metric's ``correct``), ``unscored`` (judge
failure) or ``missing`` (no line; scored incorrect, error class ``no_answer``). Agreement of runs A and B on an
item: ``both``, ``only_a``, ``only_b``, ``neither`` (solved by …), or ``unscored`` when either is unscored (such
items are also left out of Cohen's κ, as in :func:`madqa.metric.aggregate.kappa_matrix`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from madqa.metric.aggregate import cohen_kappa, kappa_matrix
from madqa.metric.schema import ERROR_TYPES, HOP_TYPES, ItemScore

from .runs import RunData, Workspace

OUTCOMES = ("correct", "incorrect", "unscored", "missing")
AGREEMENTS = ("both", "only_a", "only_b", "neither", "unscored")
AGREEMENT_LABELS = {
    "both": "solved by both",
    "only_a": "only A",
    "only_b": "only B",
    "neither": "neither",
    "unscored": "unscored in one",
}
#: Longest question text shown in a table cell.
QUESTION_CELL_CHARS = 80
#: The question table's font (gradio's monospace at 14 px): one character's width and a cell's padding, in px.
CHAR_PX, CELL_PAD_PX = 8.4, 18
#: The narrowest id and outcome columns (two runs' ✓/✗ fit a phone's first screen), and the widest any column
#: grows to hold its longest word: a longer token (a long run name) wraps inside it.
MIN_ID_PX, MIN_OUTCOME_PX, MAX_COLUMN_PX = 64, 92, 200


def outcome(item: ItemScore) -> str:
    """``correct``, ``incorrect``, ``unscored`` or ``missing`` (missing items are also incorrect)."""
    if item.missing:
        return "missing"
    if item.correct is None:
        return "unscored"
    return "correct" if item.correct else "incorrect"


def agreement_class(a: ItemScore, b: ItemScore) -> str:
    """How runs A and B fared on one item (see the module docstring)."""
    if a.correct is None or b.correct is None:
        return "unscored"
    return {(True, True): "both", (True, False): "only_a", (False, True): "only_b"}.get(
        (a.correct, b.correct), "neither"
    )


def agreement(a: RunData, b: RunData) -> dict[str, Any]:
    """Counts of each agreement class, and Cohen's κ on the items scored in both runs."""
    counts = Counter(agreement_class(a.items[i], b.items[i]) for i in a.items)
    pairs = [
        (a.items[i].correct, b.items[i].correct)
        for i in a.items
        if a.items[i].correct is not None and b.items[i].correct is not None
    ]
    kappa = cohen_kappa([bool(x) for x, _ in pairs], [bool(y) for _, y in pairs])
    return {
        "a": a.name,
        "b": b.name,
        "counts": {k: counts.get(k, 0) for k in AGREEMENTS},
        "kappa": kappa,
        "n": len(a.items),
    }


def kappas(ws: Workspace) -> dict[str, dict[str, float | None]]:
    """Pairwise Cohen's κ between all runs (:func:`madqa.metric.aggregate.kappa_matrix`)."""
    return kappa_matrix({r.name: [it.correct for it in r.scored.items] for r in ws.runs})


@dataclass(frozen=True)
class Filters:
    """What the table shows. Empty strings and ``None`` mean "any".

    Attributes:
        run: the run whose outcome, error class and effort are filtered (default: the first).
        other: run B of the agreement filter (default: the second run, if any).
        outcome: one of :data:`OUTCOMES` (``incorrect`` includes ``missing``).
        hop: hop type; ``domain``, ``category``: as in the gold.
        error: H.3 error class of the run's item (``retrieval``, ``navigation``, ``comprehension``, ``no_answer``).
        agreement: one of :data:`AGREEMENTS` between ``run`` (A) and ``other`` (B).
        min_steps, max_steps: effort range of the run's item (unknown effort is outside every range).
        text: case-insensitive substring of the question text or id.
    """

    run: str | None = None
    other: str | None = None
    outcome: str = ""
    hop: str = ""
    domain: str = ""
    category: str = ""
    error: str = ""
    agreement: str = ""
    min_steps: float | None = None
    max_steps: float | None = None
    text: str = ""


def facets(ws: Workspace) -> dict[str, list[str]]:
    """Choices of each categorical filter."""
    return {
        "outcome": list(OUTCOMES),
        "hop": [h for h in HOP_TYPES if any(r.hop_type == h for r in ws.references)],
        "domain": sorted({r.domain for r in ws.references}),
        "category": sorted({r.document_category for r in ws.references}),
        "error": list(ERROR_TYPES),
        "agreement": list(AGREEMENTS) if len(ws.runs) > 1 else [],
    }


def _other(ws: Workspace, filters: Filters, run: RunData) -> RunData | None:
    if len(ws.runs) < 2:
        return None
    other = ws.run(filters.other) if filters.other else None
    if other is None or other is run or other.name != filters.other:
        other = next(r for r in ws.runs if r is not run)
    return other


def _keep(ws: Workspace, qid: str, f: Filters, run: RunData, other: RunData | None, text: str) -> bool:
    ref, item = ws.refs[qid], run.items[qid]
    if f.hop and ref.hop_type != f.hop or f.domain and ref.domain != f.domain:
        return False
    if f.category and ref.document_category != f.category:
        return False
    if f.outcome:
        got = outcome(item)
        if got != f.outcome and not (f.outcome == "incorrect" and got == "missing"):
            return False
    if f.error and item.error != f.error:
        return False
    if f.min_steps is not None and (item.steps is None or item.steps < f.min_steps):
        return False
    if f.max_steps is not None and (item.steps is None or item.steps > f.max_steps):
        return False
    if f.agreement and (other is None or agreement_class(item, other.items[qid]) != f.agreement):
        return False
    return not text or text in ref.question.casefold() or text in qid.casefold()


def filter_ids(ws: Workspace, filters: Filters) -> list[str]:
    """Gold ids (in gold order) of the questions that pass ``filters``."""
    run = ws.run(filters.run)
    other = _other(ws, filters, run)
    text = filters.text.strip().casefold()
    return [r.id for r in ws.references if _keep(ws, r.id, filters, run, other, text)]


def _cell(item: ItemScore) -> str:
    mark = {"correct": "✓", "incorrect": "✗", "unscored": "?", "missing": "–"}[outcome(item)]
    tail = f" {item.error}" if item.error else ""
    steps = "" if item.steps is None else f" · {item.steps} st"
    return f"{mark}{steps}{tail}"


def table_rows(ws: Workspace, ids: Sequence[str]) -> tuple[list[str], list[list[Any]]]:
    """Column headers and one row per id: id, one outcome cell per run, hop, domain, category, question.

    The outcomes come right after the id and the question text last (cut to :data:`QUESTION_CELL_CHARS`): what a
    reader scans for is which runs got a question right, and a long question first pushed the ✓/✗ columns off the
    first screen of a phone and of a laptop.
    """
    headers = ["id", *ws.names, "hop", "domain", "category", "question"]
    rows = []
    for qid in ids:
        ref = ws.refs[qid]
        question = ref.question
        if len(question) > QUESTION_CELL_CHARS:
            question = question[:QUESTION_CELL_CHARS] + "…"
        rows.append(
            [qid, *[_cell(r.items[qid]) for r in ws.runs], ref.hop_type, ref.domain, ref.document_category, question]
        )
    return headers, rows


def column_widths(headers: Sequence[str], rows: Sequence[Sequence[Any]], runs: int) -> list[str]:
    """CSS widths of every column but the question (which takes the rest): each holds its longest word.

    Gradio gives a column without a width what its header needs and wraps its cells anywhere, so a hop type or a
    domain broke mid-word ("cross_pag/e"); a column as wide as its longest word wraps only between words.

    >>> column_widths(["id", "a", "hop", "question"], [["q0001", "✓ · 1 st", "cross_page", "Who?"]], runs=1)
    ['64px', '92px', '102px']
    """
    widths = []
    for i, head in enumerate(headers[:-1]):
        words = [w for value in (head, *(row[i] for row in rows)) for w in str(value).split()]
        need = math.ceil(max((len(w) for w in words), default=1) * CHAR_PX) + CELL_PAD_PX
        floor = MIN_ID_PX if i == 0 else MIN_OUTCOME_PX if i <= runs else 0
        widths.append(f"{max(floor, min(MAX_COLUMN_PX, need))}px")
    return widths


def question_choices(ws: Workspace, ids: Sequence[str], limit: int = 5000) -> list[tuple[str, str]]:
    """``(label, id)`` pairs for a question picker (at most ``limit``)."""
    out = []
    for qid in ids[:limit]:
        text = ws.refs[qid].question
        out.append((f"{qid}: {text[:80]}{'…' if len(text) > 80 else ''}", qid))
    return out
