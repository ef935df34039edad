"""What the page of ``madqa figures`` says beside the images: each run's coverage and each figure's denominator.

A run that answers 3 of 38 questions is scored over all 38 (a question without a line is incorrect), while the
figures built from search histories, times or costs can only use its 3 lines: the page warns about such a run and
states, under every figure, what its values are shares of.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .paper_data import Figure, PaperRuns


def coverage(runs: PaperRuns) -> dict[str, dict[str, Any]]:
    """Per run: gold questions with a line (``answered``), of ``n_gold``, and a warning when some have none."""
    n_gold = len(runs.references)
    out = {}
    for name in runs.names:
        answered = len(runs.records[name])
        warning = None
        if answered < n_gold:
            warning = (
                f"{runs.label(name)} covers {answered} of {n_gold} questions: the {n_gold - answered} without a line "
                f"count as incorrect in accuracy, Table 3, the failure classes, the cascade and the budget curves; "
                f"the figures drawn from search histories, response times and costs use its {answered} line(s)"
            )
        out[name] = {"answered": answered, "n_gold": n_gold, "warning": warning}
    return out


def _table3(fig: Figure, runs: PaperRuns, n: int) -> str:
    rows = fig.data["rows"]
    x_page = next((r["x_page_n"] for r in rows if r.get("x_page_n") is not None), 0)
    x_doc = next((r["x_doc_n"] for r in rows if r.get("x_doc_n") is not None), 0)
    return (
        f"Values in %, except Kuiper and mean steps. Accuracy, Page F1 and Doc F1 over all {n} questions per run "
        f"(a question without a line counts as incorrect); X-Page over the {x_page} cross-page and X-Doc over the "
        f"{x_doc} cross-document questions."
    )


def _difficulty(fig: Figure, runs: PaperRuns, n: int) -> str:
    return (
        f"{len(fig.data['p_values'])} items; p of an item: the share of the {len(fig.data['systems'])} model runs "
        "that answered it correctly."
    )


def _distance(fig: Figure, runs: PaperRuns, n: int) -> str:
    return (
        f"The split's {fig.data['n_multi_hop']} multi-hop questions (n per bin over each bar); accuracy of a "
        f"question: the share of the {len(fig.data['systems'])} model runs that answered it correctly."
    )


def _domains(fig: Figure, runs: PaperRuns, n: int) -> str:
    pooled = ", ".join(fig.data["pooled_systems"])
    return f"(run, question) pairs pooled over {pooled}; each domain's question count is under its bar."


_FIXED: dict[str, str] = {
    "accuracy_vs_cost": "Accuracy over all {n} questions; cost: USD per question over the run's priced lines.",
    "failures_by_system": "Shares of all {n} gold questions of each run (a question without a line is a failure).",
    "cascade": "Shares of all {n} gold questions of each run.",
    "budget_curves": "Accuracy within the budget over all {n} gold questions of each run.",
    "kappa": "Agreement of per-question correctness over all {n} gold questions.",
    "retrieval_by_iteration": "Per run, its questions with a search history that records the pages each query "
    "returned (n in the legend).",
    "recovery": "Per run, its questions whose first query missed the gold document (found later / missed over each "
    "bar).",
    "single_vs_multi_query": "Per run, its scored questions with a search history, by number of queries (n over each "
    "bar; n=0: no such question).",
    "drift": "Per run, its trajectories with two or more queries (n under each run).",
    "drift_vs_accuracy": "One point per run with drift; accuracy over all {n} questions.",
    "response_time": "Per run, its questions with a response time (n in the legend).",
}
_COMPUTED: dict[str, Callable[[Figure, PaperRuns, int], str]] = {
    "table3": _table3,
    "difficulty": _difficulty,
    "evidence_distance": _distance,
    "failures_by_domain": _domains,
}


def denominator(fig: Figure, runs: PaperRuns) -> str | None:
    """What the drawn figure's values are shares of (``None`` for a skipped figure)."""
    if fig.status != "ok":
        return None
    n = len(runs.references)
    if fig.id in _COMPUTED:
        return _COMPUTED[fig.id](fig, runs, n)
    return _FIXED[fig.id].format(n=n) if fig.id in _FIXED else None


def warnings(cover: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The coverage warnings, one per run that misses questions."""
    return [c["warning"] for c in cover.values() if c.get("warning")]
