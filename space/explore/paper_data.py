"""The numbers behind the paper's tables and figures, from scored runs (``madqa figures``; drawing: ``paper_figures``).

Every number comes from a pure function of the metric, called here on the runs as ``madqa compare`` scored them:
Table 3 and the budget curves and κ from the comparison (``cli/compare_cmd.score_files``), cost from
:mod:`madqa.metric.cost`, the H.3 failure classes from :func:`madqa.metric.aggregate.error_breakdown`, the cascade
from :func:`madqa.space.disclosure.cascade_shares`, the difficulty spectrum from :mod:`madqa.metric.difficulty`;
the search dynamics, drift, response time and evidence distance are in :mod:`.paper_dynamics`.

Each figure is one :class:`Figure` entry: ``status`` ``ok`` (drawn) or ``skipped`` with its ``reason`` (never
drawn empty); a run that cannot take part in a drawn figure is named in ``skipped_systems`` with why.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from madqa.metric.accuracy import binomial_se
from madqa.metric.aggregate import error_breakdown
from madqa.metric.cost import PriceTable, run_cost, unpriced_reason
from madqa.metric.difficulty import anomalous_items, difficulty_spectrum, human_only_failures, item_p_values
from madqa.metric.kuiper import NOT_APPLICABLE, not_applicable
from madqa.metric.schema import ERROR_TYPES, ItemScore, Reference
from madqa.space.disclosure import cascade_shares

#: Table 3's columns: (key, label, kind); ``pct`` values are shares shown as percentages.
TABLE_COLUMNS = (
    ("rank", "Rank", "text"),
    ("accuracy", "Accuracy", "pct_se"),
    ("x_page", "X-Page", "pct_se"),
    ("x_doc", "X-Doc", "pct_se"),
    ("page_f1", "Page F1", "pct"),
    ("doc_f1", "Doc F1", "pct"),
    ("kuiper", "Kuiper ↓", "num"),
    ("mean_steps", "Mean steps", "num"),
)

#: How Table 3's Kuiper column was read, by ``--kuiper-order`` (shown under the table and in ``figures.json``).
KUIPER_ORDER_NOTES = {
    "block": "Kuiper: raw K with tied efforts read as blocks (--kuiper-order block, the default: D read only where "
    "the effort changes, independent of line order); the paper's F.3 reads D at every k "
    "(--kuiper-order file), which gives a K at least as large",
    "file": "Kuiper: raw K with D read at every k, tied efforts in file order (--kuiper-order file: the paper's F.3 "
    "reading; reordering tied lines can change K)",
}


@dataclass
class PaperRuns:
    """The scored runs the figures are drawn from.

    Attributes:
        references: the gold items, in order.
        names: run names, in the order given.
        human: name → whether the run is a human one (``system_type: "human"``).
        items: name → per-item scores, in gold order.
        records: name → gold id → the raw results line (ids without a line have none).
        reports: name → the metric's report.
        comparison: ``madqa compare``'s JSON result (systems, κ, pairs, budget table).
    """

    references: list[Reference]
    names: list[str]
    human: dict[str, bool]
    items: dict[str, tuple[ItemScore, ...]]
    records: dict[str, dict[str, dict[str, Any]]]
    reports: dict[str, dict[str, Any]]
    comparison: dict[str, Any]

    def label(self, name: str) -> str:
        """A run's display name, ``(human)`` added for human runs."""
        return f"{name} (human)" if self.human.get(name) else name

    @property
    def models(self) -> list[str]:
        """The runs that are not human ones."""
        return [n for n in self.names if not self.human.get(n)]


@dataclass
class Figure:
    """One figure (or table) of the set: its numbers and whether it is drawn.

    Attributes:
        id: file stem (``<id>.png``) and JSON key.
        title: what it shows.
        paper: where the paper has it.
        status: ``ok`` or ``skipped``.
        reason: why it is skipped (``None`` when drawn).
        data: every number it is drawn from.
        skipped_systems: run → why it is not in the figure.
        file: the PNG's name once written.
    """

    id: str
    title: str
    paper: str
    status: str = "ok"
    reason: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    skipped_systems: dict[str, str] = field(default_factory=dict)
    file: str | None = None

    def skip(self, reason: str) -> Figure:
        """Mark the figure skipped (its data is kept: the numbers that show why)."""
        self.status, self.reason = "skipped", reason
        return self


def plain(value: Any) -> Any:
    """``value`` as strict JSON data: dataclasses as dicts, tuples as lists, non-finite floats as ``None``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def table3(runs: PaperRuns) -> Figure:
    """Table 3: rank interval, accuracy ± SE, X-Page and X-Doc accuracy ± SE, Page F1, Doc F1, Kuiper (n/a where
    the run's steps do not vary), mean steps per run."""
    rows = []
    ranks = runs.comparison.get("ranks") or {}
    for name in runs.names:
        rep = runs.reports[name]
        hop = rep.get("by_hop") or {}
        xp, xd = hop.get("cross_page") or {}, hop.get("cross_doc") or {}
        rows.append(
            {
                "name": name,
                "human": runs.human[name],
                "n": rep["n"],
                "accuracy": rep["accuracy"],
                "accuracy_se": rep["accuracy_se"],
                "accuracy_ci": rep["accuracy_ci"],
                "x_page": xp.get("accuracy"),
                "x_page_n": xp.get("n"),
                "x_page_se": _se(xp.get("accuracy"), xp.get("n")),
                "x_doc": xd.get("accuracy"),
                "x_doc_n": xd.get("n"),
                "x_doc_se": _se(xd.get("accuracy"), xd.get("n")),
                "page_f1": rep["page_f1"],
                "doc_f1": rep["doc_f1"],
                "kuiper": rep["kuiper"],
                "kuiper_ci": rep["kuiper_ci"],
                "kuiper_na": not_applicable(rep),
                "rank": ranks.get(name, {}).get("text"),
                "tie_group": ranks.get(name, {}).get("tie_group"),
                "tied": sum(1 for r in ranks.values() if r["tie_group"] == ranks.get(name, {}).get("tie_group")) > 1,
                "mean_steps": rep["mean_steps"],
            }
        )
    orders = {runs.reports[name]["kuiper_order"] for name in runs.names}
    order = orders.pop() if len(orders) == 1 else "mixed"  # one --kuiper-order scores every run
    note = (
        "Rank: the ranks a run could hold given the significant paired differences in accuracy (McNemar exact, "
        "Holm-corrected at 5% across pairs; madqa compare's matrix). "
        "SE: the report's accuracy_se; X-Page/X-Doc SE: the binomial SE sqrt(p(1-p)/n) over the subset's items. "
        + KUIPER_ORDER_NOTES.get(order, f"Kuiper order: {order}")
        + f"; {NOT_APPLICABLE}: the run's steps do not vary (the paper leaves Kuiper out for fixed budgets)"
    )
    return Figure("table3", "Main results", "Table 3", data={"rows": rows, "kuiper_order": order, "note": note})


def _se(p: float | None, n: int | None) -> float | None:
    return None if p is None or not n else binomial_se(p, n)


def accuracy_vs_cost(runs: PaperRuns, prices: PriceTable | None, prices_reason: str | None = None) -> Figure:
    """Fig. 7: accuracy against inference cost (USD per question), runs whose every line is priced."""
    fig = Figure("accuracy_vs_cost", "Accuracy vs inference cost", "Fig. 7")
    if prices is None:
        return fig.skip(prices_reason or "no price table")
    points = []
    for name in runs.names:
        cost = run_cost(list(runs.records[name].values()), prices)
        fig.data.setdefault("cost", {})[name] = plain(cost.summary())
        reason = unpriced_reason(cost)
        if reason is not None:
            fig.skipped_systems[name] = reason
            continue
        points.append(
            {
                "name": name,
                "human": runs.human[name],
                "accuracy": runs.reports[name]["accuracy"],
                "usd_per_question": cost.per_question_usd,
                "usd_total": cost.total_usd,
                "input_tokens": cost.input_tokens,
                "output_tokens": cost.output_tokens,
            }
        )
    fig.data.update(points=points, prices=prices.source, prices_as_of=prices.as_of)
    if not points:
        return fig.skip("no run is fully priced: " + "; ".join(f"{k}: {v}" for k, v in fig.skipped_systems.items()))
    if all(p["usd_per_question"] == 0 for p in points):  # one vertical line of points: no cost axis to read
        names = ", ".join(p["name"] for p in points)
        return fig.skip(f"every priced run costs $0 per question ({names}): nothing to plot against cost")
    from madqa.metric.pareto import pareto_front

    fig.data["frontier"] = pareto_front({p["name"]: (p["usd_per_question"], p["accuracy"] or 0.0) for p in points})
    return fig


def failures_by_system(runs: PaperRuns) -> Figure:
    """Figs. 8 and 17: the H.3 failure classes of each run, as shares of all its gold items and of its errors."""
    rows = []
    for name in runs.names:
        items = runs.items[name]
        errors = error_breakdown(items)
        n, counts = len(items), errors["counts"]
        rows.append(
            {
                "name": name,
                "human": runs.human[name],
                "n": n,
                "n_incorrect": errors["n_incorrect"],
                "counts": counts,
                "share_of_errors": errors["shares"],
                "share_of_items": {e: (counts[e] / n if n else None) for e in ERROR_TYPES},
            }
        )
    return Figure(
        "failures_by_system",
        "Failure classes per system (H.3)",
        "Figs. 8, 17",
        data={"classes": list(ERROR_TYPES), "rows": rows},
    )


def failures_by_domain(runs: PaperRuns) -> Figure:
    """Fig. 19: accuracy and H.3 failure classes by document domain, pooled over the model runs (humans apart)."""
    pooled = runs.models or runs.names
    domains = sorted({r.domain for r in runs.references})
    rows = []
    for domain in domains:
        idx = [i for i, r in enumerate(runs.references) if r.domain == domain]
        items = [runs.items[name][i] for name in pooled for i in idx]
        scored = [it for it in items if it.correct is not None]
        errors = error_breakdown(items)
        per_system = {name: error_breakdown([runs.items[name][i] for i in idx])["counts"] for name in runs.names}
        rows.append(
            {
                "domain": domain,
                "n_questions": len(idx),
                "n_pooled": len(items),
                "accuracy": (sum(bool(it.correct) for it in scored) / len(scored)) if scored else None,
                "counts": errors["counts"],
                "share_of_items": {e: errors["counts"][e] / len(items) if items else None for e in ERROR_TYPES},
                "per_system_counts": per_system,
            }
        )
    note = "accuracy: share of pooled (system, question) pairs correct (binary, ANLS* >= 0.5)"
    data = {"pooled_systems": pooled, "classes": list(ERROR_TYPES), "rows": rows, "note": note}
    fig = Figure("failures_by_domain", "Failure classes per domain (H.3)", "Fig. 19", data=data)
    return fig if len(domains) > 1 or domains != ["unknown"] else fig.skip("the gold items name no domain")


def cascade(runs: PaperRuns) -> Figure:
    """Fig. 20: shares of all gold items whose document was cited → whose page was cited → answered correctly."""
    rows = [
        {"name": n, "human": runs.human[n], **cascade_shares([vars(it) for it in runs.items[n]])} for n in runs.names
    ]
    return Figure("cascade", "Failure cascade", "Fig. 20", data={"rows": rows})


def budget_curves(runs: PaperRuns) -> Figure:
    """Fig. 9: accuracy within a step budget N, per run (``madqa compare``'s curves)."""
    systems = runs.comparison["systems"]
    fig = Figure(
        "budget_curves",
        "Accuracy vs step budget",
        "Fig. 9",
        data={
            "max_budget": runs.comparison["max_budget"],
            "table": runs.comparison["budget_table"],
            "curves": {s["name"]: s["budget_curve"] for s in systems},
        },
    )
    for s in systems:
        if all(it.steps is None for it in runs.items[s["name"]]):
            fig.skipped_systems[s["name"]] = "no effort recorded (no search_history or steps)"
    if len(fig.skipped_systems) == len(systems):
        return fig.skip("no run records its effort")
    return fig


def kappa(runs: PaperRuns) -> Figure:
    """Fig. 21: Cohen's κ between the runs' per-item correctness, and the solved-only-by counts of every pair."""
    data = {"names": runs.names, "kappa": runs.comparison["kappa"], "pairs": runs.comparison["pairs"]}
    fig = Figure("kappa", "Pairwise agreement (Cohen's κ)", "Fig. 21", data=data)
    return fig if len(runs.names) >= 2 else fig.skip("κ needs two or more runs")


def difficulty(runs: PaperRuns) -> Figure:
    """Fig. 22: item p-values over the model runs, the paper's bands, anomalous items and human-only failures."""
    fig = Figure("difficulty", "Item difficulty spectrum", "Fig. 22 (H.4)")
    models = runs.models
    outcomes = {n: {it.id: it.correct for it in runs.items[n]} for n in models}
    if len(models) < 2:
        return fig.skip(f"the spectrum needs two or more model runs (humans are not counted); given {len(models)}")
    pv = item_p_values(outcomes)
    accuracy = {n: runs.reports[n]["accuracy"] for n in models}
    fig.data = {
        "systems": models,
        "p_values": plain(pv.items),
        "unobserved_ids": list(pv.unobserved_ids),
        "spectrum": plain(difficulty_spectrum(pv)),
        "anomalous": plain(anomalous_items(outcomes, accuracy=accuracy)),
        "human_only_failures": {
            n: plain(human_only_failures(pv, {it.id: it.correct for it in runs.items[n]}))
            for n in runs.names
            if runs.human[n]
        },
    }
    return fig


def build_static(runs: PaperRuns, prices: PriceTable | None, prices_reason: str | None = None) -> list[Figure]:
    """The figures that need nothing beyond the runs and the price table."""
    return [
        table3(runs),
        accuracy_vs_cost(runs, prices, prices_reason),
        failures_by_system(runs),
        failures_by_domain(runs),
        cascade(runs),
        budget_curves(runs),
        kappa(runs),
        difficulty(runs),
    ]


def gold_records(lines: Sequence[Mapping[str, Any]], references: Sequence[Reference]) -> dict[str, dict[str, Any]]:
    """The raw lines of a run by gold id (lines of other ids left out; a repeated id is refused by the parser)."""
    ids = {r.id for r in references}
    return {str(ln["id"]): dict(ln) for ln in lines if str(ln.get("id")) in ids}
