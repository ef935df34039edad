"""The summary's figures as PNG ``data:`` URIs (one drawing code for the app and the static export).

Every figure draws numbers the metric computed: the Kuiper cumulative-difference curve (``kuiper_curve`` of the
report), the accuracy-vs-step-budget curve (``budget_curve``), the H.3 error cascade (share of gold items whose
document was cited → whose page was cited → answered correctly, :func:`madqa.space.disclosure.cascade_shares`,
and the error counts by class, ``errors``), and the effort histogram of correct and incorrect items.

Figures are built with matplotlib's object API (``Figure``), not ``pyplot``: no global figure state, so handlers
running in parallel threads cannot draw into each other's figures.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from madqa.metric.schema import ERROR_TYPES
from madqa.space.disclosure import cascade_shares
from madqa.space.plots import mpl_text

from .runs import RunData

CASCADE = (("found_doc", "cited gold doc"), ("found_page", "cited gold page"), ("correct", "correct"))
FIG_SIZE = (5.2, 3.2)
#: Print-ready: a figure is shown at its container's full width (up to ~1,200 px on a laptop) and copied into papers;
#: at 90 dpi it was 468 px wide and blurred when enlarged. PNG, not SVG: a Kuiper step curve over thousands of items
#: is a path of thousands of points, far larger as SVG than as a 200-dpi PNG.
DPI = 200


def _uri(fig: Any) -> str:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=DPI)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def cascade_values(run: RunData) -> dict[str, float]:
    """Whole-set cascade shares of a run (see the module docstring)."""
    return cascade_shares([vars(it) for it in run.scored.items])


def _kuiper_label(report: Mapping[str, Any]) -> str:
    from madqa.metric.kuiper import NOT_APPLICABLE, not_applicable

    return NOT_APPLICABLE if not_applicable(report) else _num(report.get("kuiper"), 3)


def kuiper_figure(runs: Sequence[RunData]) -> str:
    """Cumulative difference ``D_k`` against the items accumulated in effort order, one line per run."""
    ax = (fig := Figure(figsize=FIG_SIZE)).subplots()
    for run in runs:
        curve = run.report.get("kuiper_curve") or {}
        n = max(1, int(run.report.get("kuiper_n") or 1))
        ax.step(
            [k / n for k in curve.get("k", [0])],
            curve.get("d", [0.0]),
            where="post",
            label=f"{mpl_text(run.name)} (K={_kuiper_label(run.report)})",
        )
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("share of items, by increasing effort")
    ax.set_ylabel("cumulative difference D")
    ax.set_title("Kuiper: effort calibration")
    ax.legend(fontsize=7)
    return _uri(fig)


def budget_series(runs: Sequence[RunData]) -> dict[str, tuple[list[int], list[float], int]]:
    """Each run's budget curve as ``(budgets, accuracy %, points measured)``, extended to the largest budget of all.

    A run's curve (the report's ``budget_curve``) ends at its own largest effort; past it no item of the run
    finishes, so its accuracy stays flat up to the common maximum (what ``madqa figures`` draws from ``madqa
    compare``'s common ``max_budget``, and the paper's budget curve does). Without it, a run whose questions all took
    3 steps stopped at N = 3 beside one drawn to N = 10, as though it had no value there.
    """
    curves = {run.name: run.report.get("budget_curve") or [] for run in runs}
    top = max((int(c[-1]["budget"]) for c in curves.values() if c), default=0)
    out = {}
    for name, curve in curves.items():
        budgets, accuracy = [int(p["budget"]) for p in curve], [100 * float(p["accuracy"]) for p in curve]
        measured = len(budgets)
        if budgets and budgets[-1] < top:
            budgets, accuracy = [*budgets, top], [*accuracy, accuracy[-1]]
        out[name] = (budgets, accuracy, measured)
    return out


def budget_figure(runs: Sequence[RunData]) -> str:
    """Accuracy under a step budget (the report's ``budget_curve``), one line per run, all to the same budget."""
    ax = (fig := Figure(figsize=FIG_SIZE)).subplots()
    series = budget_series(runs)
    for name, (budgets, accuracy, measured) in series.items():
        ax.plot(
            budgets,
            accuracy,
            drawstyle="steps-post",
            marker="o",
            markersize=3,
            markevery=list(range(measured)),
            label=mpl_text(name),
        )  # markers on the budgets measured (a one-budget curve is a single point), none on the flat extension
    top = max((b[-1] for b, _, _ in series.values() if b), default=1)
    if top <= 12:  # every budget labelled (a one-step run got ticks at 0.96, 0.98, …)
        ax.set_xticks(range(1, top + 1))
    else:
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("step budget N")
    ax.set_ylabel("accuracy within budget (%)")
    ax.set_title("Accuracy vs step budget")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7)
    return _uri(fig)


def cascade_figure(runs: Sequence[RunData]) -> str:
    """The H.3 cascade (shares of all gold items) and the error counts by class, grouped by run."""
    fig = Figure(figsize=(FIG_SIZE[0] * 1.6, FIG_SIZE[1]))
    left, right = fig.subplots(1, 2)
    width = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        shares = cascade_values(run)
        left.bar(
            [j + i * width for j in range(len(CASCADE))],
            [100 * shares[k] for k, _ in CASCADE],
            width,
            label=mpl_text(run.name),
        )
        counts = (run.report.get("errors") or {}).get("counts") or {}
        right.bar(
            [j + i * width for j in range(len(ERROR_TYPES))],
            [counts.get(e, 0) for e in ERROR_TYPES],
            width,
            label=mpl_text(run.name),
        )
    offset = width * (len(runs) - 1) / 2
    left.set_xticks([j + offset for j in range(len(CASCADE))], [label for _, label in CASCADE], fontsize=8)
    left.set_ylabel("% of gold items")
    left.set_ylim(0, 100)
    left.set_title("Error cascade")
    right.set_xticks([j + offset for j in range(len(ERROR_TYPES))], list(ERROR_TYPES), fontsize=8)
    right.set_ylabel("incorrect items")
    right.set_title("Failures by class (H.3)")
    right.legend(fontsize=7)
    return _uri(fig)


def effort_figure(run: RunData) -> str:
    """Histogram of effort (steps) for the run's correct and incorrect items (known effort only)."""
    ax = (fig := Figure(figsize=FIG_SIZE)).subplots()
    right = [it.steps for it in run.scored.items if it.correct is True and it.steps is not None]
    wrong = [it.steps for it in run.scored.items if it.correct is False and it.steps is not None]
    top = max([*right, *wrong, 1])
    bins = [b - 0.5 for b in range(0, top + 2)] if top <= 60 else 30
    ax.hist([right, wrong], bins=bins, label=["correct", "incorrect"], color=["#2a9d8f", "#e76f51"])
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("steps")
    ax.set_ylabel("items")
    ax.set_title(f"Effort: {mpl_text(run.name)}")
    ax.legend(fontsize=7)
    return _uri(fig)


def _num(value: Any, digits: int) -> str:
    return "–" if value is None else f"{float(value):.{digits}f}"
