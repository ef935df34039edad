"""Draw the paper's figures (``madqa figures``) from the numbers of :mod:`.paper_data` and :mod:`.paper_dynamics`.

One drawer per figure id, each reading only ``Figure.data`` (what ``figures.json`` holds), so the PNG shows exactly
the published numbers. Human runs are marked everywhere: ``(human)`` in the label, dashed lines, hatched bars, star
markers. matplotlib's object API (``Figure``), as in :mod:`.figures`: no global pyplot state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure as MplFigure

from .figures import _uri
from .paper_data import TABLE_COLUMNS, Figure, PaperRuns

SIZE = (6.4, 3.8)
WIDE = (10.0, 3.8)
CLASS_COLORS = {"retrieval": "#e76f51", "navigation": "#f4a261", "comprehension": "#2a9d8f", "no_answer": "#8d99ae"}


def _pct(value: Any) -> float:
    return 0.0 if value is None else 100 * float(value)


def _style(runs: PaperRuns, name: str) -> dict[str, Any]:
    return {"label": runs.label(name), "linestyle": "--" if runs.human.get(name) else "-"}


def _bar_style(runs: PaperRuns, name: str) -> dict[str, Any]:
    return {"label": runs.label(name), "hatch": "//" if runs.human.get(name) else None, "edgecolor": "black"}


def _cell(row: Mapping[str, Any], key: str, kind: str) -> str:
    value = row.get(key)
    if key == "kuiper" and row.get("kuiper_na"):
        return "n/a (fixed effort)"
    if kind == "text" and value is not None:
        return f"{value} ≈" if row.get("tied") else str(value)  # ≈: shares its tie group with another run
    if value is None:
        return "–"
    if kind == "pct_se":
        se = row.get(f"{key}_se")
        return f"{100 * value:.1f}" + ("" if se is None else f" ± {100 * se:.1f}")
    return f"{100 * value:.1f}" if kind == "pct" else f"{value:.2f}"


def table_cells(data: Mapping[str, Any], runs: PaperRuns) -> tuple[list[str], list[list[str]]]:
    """Table 3's header and rows as shown (PNG and HTML)."""
    head = ["System", *[label for _, label, _ in TABLE_COLUMNS]]
    rows = [[runs.label(r["name"]), *[_cell(r, k, kind) for k, _, kind in TABLE_COLUMNS]] for r in data["rows"]]
    return head, rows


def draw_table3(fig: Figure, runs: PaperRuns) -> MplFigure:
    head, rows = table_cells(fig.data, runs)
    out = MplFigure(figsize=(10.0, 0.6 + 0.35 * (len(rows) + 1)))
    ax = out.subplots()
    ax.axis("off")
    table = ax.table(cellText=rows, colLabels=head, loc="center", cellLoc="right", colLoc="right")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    order = fig.data.get("kuiper_order", "block")
    ax.set_title(f"accuracy ± SE (%), Page/Doc F1 (%), Kuiper ({order} order), mean steps", fontsize=9)
    return out


def draw_cost(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    for p in fig.data["points"]:
        ax.scatter(p["usd_per_question"], _pct(p["accuracy"]), marker="*" if p["human"] else "o", s=60)
        ax.annotate(
            runs.label(p["name"]),
            (p["usd_per_question"], _pct(p["accuracy"])),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ax.set_xlabel("inference cost per question (USD)")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"Accuracy vs cost (prices: {fig.data['prices']})", fontsize=9)
    return out


def draw_failures(fig: Figure, runs: PaperRuns) -> MplFigure:
    out = MplFigure(figsize=WIDE)
    left, right = out.subplots(1, 2)
    rows = fig.data["rows"]
    names = [runs.label(r["name"]) for r in rows]
    bottom = [0.0] * len(rows)
    for cls in fig.data["classes"]:
        values = [_pct(r["share_of_items"][cls]) for r in rows]
        left.bar(names, values, bottom=bottom, label=cls, color=CLASS_COLORS.get(cls))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    left.set_ylabel("% of all gold items")
    left.set_title("Failures by class (Fig. 8)", fontsize=9)
    left.tick_params(axis="x", labelrotation=30, labelsize=7)
    left.legend(fontsize=7)
    for r in rows:
        x, y = _pct(r["share_of_items"]["retrieval"]), _pct(r["share_of_items"]["comprehension"])
        right.scatter(x, y, marker="*" if r["human"] else "o", s=60)
        right.annotate(runs.label(r["name"]), (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
    right.set_xlabel("retrieval failures (% of items)")
    right.set_ylabel("comprehension failures (% of items)")
    right.set_title("Retrieval vs comprehension (Fig. 17)", fontsize=9)
    return out


def draw_domains(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    rows = fig.data["rows"]
    names = [f"{r['domain']} (n={r['n_questions']})" for r in rows]
    bottom = [0.0] * len(rows)
    for cls in fig.data["classes"]:
        values = [_pct(r["share_of_items"][cls]) for r in rows]
        ax.bar(names, values, bottom=bottom, label=cls, color=CLASS_COLORS.get(cls))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.plot(names, [_pct(r["accuracy"]) for r in rows], "kD", label="accuracy")
    ax.set_ylim(0, 100)
    ax.set_ylabel("% of pooled (system, question) pairs")
    ax.set_title("By domain, pooled over " + ", ".join(fig.data["pooled_systems"]), fontsize=8)
    ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    ax.legend(fontsize=7)
    return out


def _grouped_bars(
    ax: Any,
    groups: Sequence[str],
    series: Sequence[tuple[Sequence[float], Mapping[str, Any]]],
    ylabel: str,
    top: float,
    **tick_style: Any,
) -> None:
    """One bar per series (its values, its bar style) in each group, side by side in 0.8 of a group's width; each
    group's name under its middle; the y axis from 0 to ``top`` and a legend of the series."""
    width = 0.8 / max(1, len(series))
    for i, (values, style) in enumerate(series):
        ax.bar([j + i * width for j in range(len(groups))], values, width, **style)
    ax.set_xticks([j + width * (len(series) - 1) / 2 for j in range(len(groups))], groups, **tick_style)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, top)
    ax.legend(fontsize=7)


def draw_cascade(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    stages = (("total", "all items"), ("found_doc", "doc cited"), ("found_page", "page cited"), ("correct", "correct"))
    series = [([100.0, *[_pct(r[k]) for k, _ in stages[1:]]], _bar_style(runs, r["name"])) for r in fig.data["rows"]]
    _grouped_bars(ax, [s for _, s in stages], series, "% of gold items", 105)
    return out


def draw_budget(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    for name, curve in fig.data["curves"].items():
        if name in fig.skipped_systems:
            continue
        ax.plot(
            [p["budget"] for p in curve],
            [_pct(p["accuracy"]) for p in curve],
            drawstyle="steps-post",
            marker="o",
            markersize=3,
            **_style(runs, name),
        )
    ax.set_xlabel("step budget N (searches or model calls)")
    ax.set_ylabel("accuracy within budget (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7)
    return out


def draw_kappa(fig: Figure, runs: PaperRuns) -> MplFigure:
    names = fig.data["names"]
    matrix = [[fig.data["kappa"][a][b] for b in names] for a in names]
    ax = (out := MplFigure(figsize=(1.6 + 0.8 * len(names), 1.2 + 0.7 * len(names)))).subplots()
    image = ax.imshow(
        [[float("nan") if v is None else v for v in row] for row in matrix], vmin=-1, vmax=1, cmap="Blues"
    )
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            ax.text(j, i, "–" if v is None else f"{v:.2f}", ha="center", va="center", fontsize=8)
    labels = [runs.label(n) for n in names]
    ax.set_xticks(range(len(names)), labels, rotation=30, fontsize=7)
    ax.set_yticks(range(len(names)), labels, fontsize=7)
    out.colorbar(image, ax=ax)
    return out


def draw_difficulty(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    p = [it["p"] for it in fig.data["p_values"]]
    ax.hist(p, bins=[i / 10 for i in range(11)], color="#457b9d", edgecolor="black")
    for edge in (0.1, 0.9):
        ax.axvline(edge, color="grey", linestyle=":")
    s, anomalous = fig.data["spectrum"], fig.data["anomalous"]
    n_anom = len(anomalous["items"]) if anomalous else 0
    ax.set_title(
        f"{len(s['easy'])} easy (p > 0.9) · {len(s['discriminating'])} discriminating · {len(s['hard'])} "
        f"hard (p < 0.1) · {n_anom} anomalous",
        fontsize=8,
    )
    ax.set_xlabel(f"p-value: share of {len(fig.data['systems'])} model runs correct")
    ax.set_ylabel("items")
    return out


def draw_retrieval(fig: Figure, runs: PaperRuns) -> MplFigure:
    out = MplFigure(figsize=WIDE)
    axes = out.subplots(1, 2)
    for ax, key, title in zip(axes, ("doc_found", "page_found"), ("gold document", "gold page"), strict=True):
        for name, curve in fig.data.items():
            pts = curve["points"]
            ax.plot(
                [q["iteration"] for q in pts],
                [_pct(q[key]) for q in pts],
                marker="o",
                markersize=3,
                **_style(runs, name),
            )
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("search iteration")
        ax.set_ylabel(f"% of items with the {title} found so far")
        ax.set_ylim(0, 100)
        ax.legend(fontsize=7)
    return out


def draw_recovery(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    names = [n for n, v in fig.data.items() if v["document"]["n_failed_first"]]
    for name in names:
        doc = fig.data[name]["document"]
        ax.bar(runs.label(name), _pct(doc["recovery_rate"]), **_bar_style(runs, name))
        ax.annotate(
            f"{doc['n_recovered']}/{doc['n_failed_first']}",
            (runs.label(name), _pct(doc["recovery_rate"])),
            ha="center",
            fontsize=7,
            xytext=(0, 3),
            textcoords="offset points",
        )
    ax.set_ylabel("% found the gold document later")
    ax.set_ylim(0, 105)
    ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    return out


def draw_single_multi(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    names = list(fig.data)
    series = [
        ([_pct(fig.data[n][key]) for n in names], {"label": label})
        for key, label in (("single", "one query"), ("multi", "two or more"))
    ]
    _grouped_bars(ax, [runs.label(n) for n in names], series, "accuracy (%)", 100, rotation=30, fontsize=7)
    return out


def draw_drift(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    summaries = fig.data["summaries"]
    names = sorted(summaries, key=lambda n: summaries[n]["median"])
    values = [[v["drift"] for v in fig.data["items"][n].values() if v["drift"] is not None] for n in names]
    ax.boxplot(values, tick_labels=[runs.label(n) for n in names])
    ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    ax.set_ylabel("mean drift per step (1 - cosine)")
    return out


def draw_drift_accuracy(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    for name, p in fig.data["points"].items():
        ax.scatter(p["median_drift"], _pct(p["accuracy"]), marker="*" if p["human"] else "o", s=60)
        ax.annotate(
            runs.label(name),
            (p["median_drift"], _pct(p["accuracy"])),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    r = fig.data["median"]["pearson"]
    ax.set_title(f"Pearson r = {'–' if r is None else f'{r:.2f}'} over {fig.data['median']['n']} systems", fontsize=9)
    ax.set_xlabel("median drift per step")
    ax.set_ylabel("accuracy (%)")
    return out


def _bin_label(b: Mapping[str, Any], unit: str = "") -> str:
    lo, hi = b["low"], b["high"]
    return f"< {hi:g}{unit}" if lo is None else f">= {lo:g}{unit}" if hi is None else f"{lo:g}–{hi:g}{unit}"


def draw_time(fig: Figure, runs: PaperRuns) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    for name, value in fig.data.items():
        bins = value["bins"]["bins"]
        ax.plot(
            [_bin_label(b, " s") for b in bins],
            [None if b["accuracy"] is None else _pct(b["accuracy"]) for b in bins],
            marker="o",
            **_style(runs, name),
        )
    ax.set_xlabel("response time (elapsed_s)")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7)
    return out


def _r(c: Mapping[str, Any] | None) -> str:
    return "–" if not c or c.get("pearson") is None else f"{c['pearson']:.2f}"


def draw_distance(fig: Figure, runs: PaperRuns) -> MplFigure:
    out = MplFigure(figsize=WIDE)
    left, right = out.subplots(1, 2)
    for k, key in enumerate(("same_document", "cross_document")):
        bins = fig.data[key]["by_semantic"]["bins"]
        xs = [i + 0.4 * k for i in range(len(bins))]
        left.bar(xs, [_pct(b["accuracy"]) for b in bins], 0.4, label=key.replace("_", " "))
        for x, b in zip(xs, bins, strict=True):
            left.annotate(
                f"n={b['n']}",
                (x, _pct(b["accuracy"])),
                ha="center",
                fontsize=6,
                xytext=(0, 2),
                textcoords="offset points",
            )
    left.set_xticks([i + 0.2 for i in range(len(bins))], [_bin_label(b) for b in bins], fontsize=7)
    left.set_xlabel("semantic distance of the evidence pages (1 - cosine)")
    left.set_ylabel("accuracy (% of model runs)")
    left.set_ylim(0, 105)
    left.legend(fontsize=7)
    questions = [q for q in fig.data["questions"].values() if q and q["accuracy"] is not None]
    for same, marker, label in ((True, "o", "same document"), (False, "x", "cross document")):
        kept = [q for q in questions if q["same_document"] is same]
        right.scatter([q["semantic"] for q in kept], [_pct(q["accuracy"]) for q in kept], marker=marker, label=label)
    sd, cd = fig.data["same_document"], fig.data["cross_document"]
    right.set_title(
        f"same-doc r: semantic {_r(sd['semantic_r'])}, page gap {_r(sd['physical_r'])} · cross-doc r: "
        f"semantic {_r(cd['semantic_r'])}",
        fontsize=8,
    )
    right.set_xlabel("semantic distance of the evidence pages")
    right.set_ylabel("accuracy (% of model runs)")
    right.legend(fontsize=7)
    return out


DRAWERS: dict[str, Callable[[Figure, PaperRuns], MplFigure]] = {
    "table3": draw_table3,
    "accuracy_vs_cost": draw_cost,
    "failures_by_system": draw_failures,
    "failures_by_domain": draw_domains,
    "cascade": draw_cascade,
    "budget_curves": draw_budget,
    "kappa": draw_kappa,
    "difficulty": draw_difficulty,
    "retrieval_by_iteration": draw_retrieval,
    "recovery": draw_recovery,
    "single_vs_multi_query": draw_single_multi,
    "drift": draw_drift,
    "drift_vs_accuracy": draw_drift_accuracy,
    "response_time": draw_time,
    "evidence_distance": draw_distance,
}


def png_uri(fig: Figure, runs: PaperRuns) -> str:
    """The drawn figure as a PNG ``data:`` URI (only for ``status == "ok"``)."""
    drawn = DRAWERS[fig.id](fig, runs)
    drawn.suptitle(f"{fig.paper}: {fig.title}", fontsize=10)
    return _uri(drawn)
