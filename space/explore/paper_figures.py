"""Draw the paper's figures (``madqa figures``) from the numbers of :mod:`.paper_data` and :mod:`.paper_dynamics`.

One drawer per figure id, each reading only ``Figure.data`` (what ``figures.json`` holds), so the files show exactly
the published numbers, in the one style of :mod:`.paper_style` (print sizes, one colour per run in every figure,
legends above the data, whole-number ticks where the axis counts steps). Human runs are marked everywhere:
``(human)`` in the label, dashed lines, hatched bars, star markers. Titles and figure numbers are the page's, not
drawn. n is shown wherever a value comes from few items. matplotlib's object API (``Figure``), as in
:mod:`.figures`: no global pyplot state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure as MplFigure
from matplotlib.patches import Patch

from .paper_data import TABLE_COLUMNS, Figure
from .paper_style import (
    CLASS_COLORS,
    COLUMN,
    FORMATS,
    SIZE,
    SMALL,
    TEXT,
    WIDE,
    Runs,
    correlation_text,
    integer_ticks,
    legend_above,
    note_below,
    render,
    style,
    wrapped,
)


def _pct(value: Any) -> float:
    return 0.0 if value is None else 100 * float(value)


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


def table_cells(data: Mapping[str, Any], runs: Any) -> tuple[list[str], list[list[str]]]:
    """Table 3's header and rows as shown (image and HTML); ``runs`` gives each run's ``label``."""
    head = ["System", *[label for _, label, _ in TABLE_COLUMNS]]
    rows = [[runs.label(r["name"]), *[_cell(r, k, kind) for k, _, kind in TABLE_COLUMNS]] for r in data["rows"]]
    return head, rows


def _accuracy_axes(ax: Any, xlabel: str, ylabel: str = "accuracy (%)") -> None:
    """The axes of an accuracy plot: the labels, accuracy on 0-100 %, the runs' legend above."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 100)
    legend_above(ax)


def _count_labels(ax: Any, xs: Sequence[float], ys: Sequence[float | None], ns: Sequence[Any]) -> None:
    """``n=…`` over each bar, upright so neighbours do not collide (at the baseline for an empty bar: n=0)."""
    for x, y, n in zip(xs, ys, ns, strict=True):
        ax.annotate(
            f"n={n}", (x, _pct(y)), ha="center", va="bottom", rotation=90, xytext=(0, 2), textcoords="offset points"
        )


def draw_table3(fig: Figure, runs: Runs) -> MplFigure:
    head, rows = table_cells(fig.data, runs)
    out = MplFigure(figsize=(TEXT, 0.2 + 0.22 * (len(rows) + 1)))
    ax = out.subplots()
    ax.axis("off")
    table = ax.table(cellText=rows, colLabels=head, loc="center", cellLoc="right", colLoc="right", edges="horizontal")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.auto_set_column_width(list(range(len(head))))
    for (row, col), cell in table.get_celld().items():
        cell.set_height(1 / (len(rows) + 1))
        if col == 0:  # names left-aligned, numbers right: Cell has no public setter for its text position
            cell._loc = "left"
        if row == 0:
            cell.set_text_props(weight="bold")
    return out


def draw_cost(fig: Figure, runs: Runs) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    for p in fig.data["points"]:
        ax.scatter(p["usd_per_question"], _pct(p["accuracy"]), label=runs.label(p["name"]), **runs.point(p["name"]))
    by_name = {p["name"]: p for p in fig.data["points"]}
    front = [by_name[name] for name in fig.data.get("frontier", [])]
    if len(front) > 1:  # the frontier as a staircase: what the best run at each budget reaches
        xs, ys = [p["usd_per_question"] for p in front], [_pct(p["accuracy"]) for p in front]
        ax.step(xs, ys, where="post", color="0.4", lw=0.8, ls="--", zorder=0, label="Pareto frontier")
    ax.set_xlim(left=0)
    _accuracy_axes(ax, "inference cost per question (USD)")
    return out


def _stacked_classes(ax: Any, names: Sequence[str], rows: Sequence[Mapping[str, Any]], classes: Sequence[str]) -> None:
    """One bar per row: each error class's share of the row's items, stacked in ``classes`` order."""
    bottom = [0.0] * len(rows)
    for cls in classes:
        values = [_pct(r["share_of_items"][cls]) for r in rows]
        label = cls.replace("_", " ")
        ax.bar(names, values, bottom=bottom, label=label, color=CLASS_COLORS.get(cls), edgecolor="white", lw=0.4)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]


def draw_failures(fig: Figure, runs: Runs) -> MplFigure:
    out = MplFigure(figsize=WIDE)
    left, right = out.subplots(1, 2)
    rows = fig.data["rows"]
    names = [runs.label(r["name"]) for r in rows]
    _stacked_classes(left, names, rows, fig.data["classes"])
    left.set_ylabel(f"failures (% of {rows[0]['n'] if rows else 0} gold items)")
    left.tick_params(axis="x", labelrotation=30)
    legend_above(left, ncol=2)
    for r in rows:
        x, y = _pct(r["share_of_items"]["retrieval"]), _pct(r["share_of_items"]["comprehension"])
        right.scatter(x, y, label=runs.label(r["name"]), **runs.point(r["name"]))
    right.set_xlabel("retrieval failures (% of items)")
    right.set_ylabel("comprehension failures (%)")
    right.set_xlim(left=0)
    right.set_ylim(bottom=0)
    legend_above(right)
    return out


def draw_domains(fig: Figure, runs: Runs) -> MplFigure:
    ax = (out := MplFigure(figsize=WIDE)).subplots()
    rows = fig.data["rows"]
    names = [f"{r['domain']}\n(n={r['n_questions']})" for r in rows]
    _stacked_classes(ax, names, rows, fig.data["classes"])
    ax.plot(names, [_pct(r["accuracy"]) for r in rows], "kD", markersize=4, label="accuracy")
    ax.set_ylim(0, 100)
    ax.set_ylabel("% of pooled (system, question)")
    legend_above(ax, ncol=5)
    return out


def _grouped_bars(
    ax: Any,
    groups: Sequence[str],
    series: Sequence[tuple[Sequence[float], Mapping[str, Any]]],
    ylabel: str,
    top: float,
    **tick_style: Any,
) -> list[list[float]]:
    """One bar per series (its values, its bar style) in each group, side by side in 0.8 of a group's width; each
    group's name under its middle; the y axis from 0 to ``top``; a legend of the series above. The bars' x."""
    width = 0.8 / max(1, len(series))
    xs = []
    for i, (values, bar_style) in enumerate(series):
        xs.append([j + i * width for j in range(len(groups))])
        _tag(ax.bar(xs[-1], values, width, **bar_style))
    ax.set_xticks([j + width * (len(series) - 1) / 2 for j in range(len(groups))], groups, **tick_style)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, top)
    legend_above(ax)
    return xs


def _tag(bars: Any) -> None:
    """Unique SVG ids for the bars of one call (they share the run's id as a prefix)."""
    for k, patch in enumerate(bars.patches):
        if patch.get_gid():
            patch.set_gid(f"{patch.get_gid()}-{k}")


def draw_cascade(fig: Figure, runs: Runs) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    stages = (("total", "all items"), ("found_doc", "doc cited"), ("found_page", "page cited"), ("correct", "correct"))
    series = [([100.0, *[_pct(r[k]) for k, _ in stages[1:]]], runs.bar(r["name"])) for r in fig.data["rows"]]
    _grouped_bars(ax, [s for _, s in stages], series, "% of gold items", 100)
    return out


def draw_budget(fig: Figure, runs: Runs) -> MplFigure:
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
            **runs.line(name),
        )
    integer_ticks(ax.xaxis)
    _accuracy_axes(ax, "step budget N (searches or model calls)", "accuracy within budget (%)")
    return out


def draw_kappa(fig: Figure, runs: Runs) -> MplFigure:
    names = fig.data["names"]
    matrix = [[fig.data["kappa"][a][b] for b in names] for a in names]
    side = min(TEXT, 1.4 + 0.55 * len(names))
    ax = (out := MplFigure(figsize=(max(COLUMN, side), max(2.0, side - 0.6)))).subplots()
    image = ax.imshow(
        [[float("nan") if v is None else v for v in row] for row in matrix], vmin=-1, vmax=1, cmap="Blues"
    )
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            colour = "white" if v is not None and v > 0.6 else "black"
            ax.text(j, i, "–" if v is None else f"{v:.2f}", ha="center", va="center", color=colour)
    labels = [runs.label(n) for n in names]
    ax.set_xticks(range(len(names)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(names)), labels)
    out.colorbar(image, ax=ax, label="Cohen's κ")
    return out


def draw_difficulty(fig: Figure, runs: Runs) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    p = [it["p"] for it in fig.data["p_values"]]
    ax.hist(p, bins=[i / 10 for i in range(11)], color="#8c8c8c", edgecolor="black", linewidth=0.5)
    for edge in (0.1, 0.9):
        ax.axvline(edge, color="black", linestyle=":", linewidth=0.8)
    s, anomalous = fig.data["spectrum"], fig.data["anomalous"]
    n_anom = len(anomalous["items"]) if anomalous else 0
    bands = (
        f"{len(s['hard'])} hard (p < 0.1) · {len(s['discriminating'])} discriminating · {len(s['easy'])} easy "
        f"(p > 0.9) · {n_anom} anomalous, of {len(p)} items"
    )
    ax.set_title(wrapped(ax, bands), fontsize=SMALL)
    integer_ticks(ax.yaxis)
    ax.set_xlabel(f"p-value: share of {len(fig.data['systems'])} model runs correct")
    ax.set_ylabel("items")
    return out


def draw_retrieval(fig: Figure, runs: Runs) -> MplFigure:
    out = MplFigure(figsize=WIDE)
    axes = out.subplots(1, 2)
    for ax, key, title in zip(axes, ("doc_found", "page_found"), ("gold document", "gold page"), strict=True):
        for name, curve in fig.data.items():
            pts = curve["points"]
            style_ = {**runs.line(name), "label": f"{runs.label(name)} (n={curve['n']})"}
            ax.plot([q["iteration"] for q in pts], [_pct(q[key]) for q in pts], marker="o", markersize=3, **style_)
        integer_ticks(ax.xaxis)
        ax.set_xlabel("search iteration")
        ax.set_ylabel(f"{title} found so far (%)")
        ax.set_ylim(0, 100)
    legend_above(axes[0], ncol=min(3, len(fig.data)))
    return out


def draw_recovery(fig: Figure, runs: Runs) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    names = [n for n, v in fig.data.items() if v["document"]["n_failed_first"]]
    for name in names:
        doc = fig.data[name]["document"]
        _tag(ax.bar(runs.label(name), _pct(doc["recovery_rate"]), **runs.bar(name)))
        ax.annotate(
            f"{doc['n_recovered']}/{doc['n_failed_first']}",
            (runs.label(name), _pct(doc["recovery_rate"])),
            ha="center",
            xytext=(0, 2),
            textcoords="offset points",
        )
    ax.set_ylabel("found the gold document later (%)")
    ax.set_ylim(0, 105)
    ax.tick_params(axis="x", labelrotation=30)
    return out


def draw_single_multi(fig: Figure, runs: Runs) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    names = list(fig.data)
    width = 0.38
    for j, name in enumerate(names):
        value = fig.data[name]
        for k, (key, alpha) in enumerate((("single", 1.0), ("multi", 0.4))):
            bar_style = {**runs.bar(name), "alpha": alpha, "label": None}
            _tag(ax.bar(j + k * width, _pct(value[key]), width, **bar_style))
            _count_labels(ax, [j + k * width], [value[key]], [value[f"n_{key}"]])
    ax.set_xticks([j + width / 2 for j in range(len(names))], [runs.label(n) for n in names], rotation=30)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 110)
    ax.set_yticks(range(0, 101, 20))
    proxies = [
        Patch(facecolor="#666666", edgecolor="black", label="one query"),
        Patch(facecolor="#666666", alpha=0.4, edgecolor="black", label="two or more queries"),
    ]
    ax.legend(handles=proxies, loc="lower left", bbox_to_anchor=(0.0, 1.02), ncol=2, borderaxespad=0.0)
    return out


def draw_drift(fig: Figure, runs: Runs) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    summaries = fig.data["summaries"]
    names = sorted(summaries, key=lambda n: summaries[n]["median"])
    values = [[v["drift"] for v in fig.data["items"][n].values() if v["drift"] is not None] for n in names]
    labels = [f"{runs.label(n)}\n(n={len(v)})" for n, v in zip(names, values, strict=True)]
    boxes = ax.boxplot(values, tick_labels=labels, patch_artist=True, medianprops={"color": "black"})
    for name, box in zip(names, boxes["boxes"], strict=True):
        box.set(facecolor=runs.colors[name], edgecolor="black", linewidth=0.6, gid=runs.gid(name))
        if runs.human.get(name):
            box.set_hatch("///")
    ax.set_ylabel("mean drift per step (1 − cosine)")
    return out


def draw_drift_accuracy(fig: Figure, runs: Runs) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    for name, p in fig.data["points"].items():
        ax.scatter(p["median_drift"], _pct(p["accuracy"]), label=runs.label(name), **runs.point(name))
    _accuracy_axes(ax, "median drift per step")
    note_below(ax, "median drift vs accuracy: " + correlation_text(fig.data["median"], "systems"))
    return out


def _bin_label(b: Mapping[str, Any], unit: str = "") -> str:
    lo, hi = b["low"], b["high"]
    return f"< {hi:g}{unit}" if lo is None else f"≥ {lo:g}{unit}" if hi is None else f"{lo:g}–{hi:g}{unit}"


def draw_time(fig: Figure, runs: Runs) -> MplFigure:
    ax = (out := MplFigure(figsize=SIZE)).subplots()
    labels: list[str] = []
    for name, value in fig.data.items():
        bins = value["bins"]["bins"]
        labels = [_bin_label(b, " s") for b in bins]
        ys = [None if b["accuracy"] is None else _pct(b["accuracy"]) for b in bins]
        style_ = {**runs.line(name), "label": f"{runs.label(name)} (n={value['bins']['n']})"}
        ax.plot(range(len(bins)), [float("nan") if y is None else y for y in ys], marker="o", markersize=3, **style_)
    ax.set_xticks(range(len(labels)), labels)
    _accuracy_axes(ax, "response time (elapsed_s)")
    return out


def draw_distance(fig: Figure, runs: Runs) -> MplFigure:
    out = MplFigure(figsize=WIDE)
    left, right = out.subplots(1, 2)
    kinds = (("same_document", "#4d4d4d", "o"), ("cross_document", "#bababa", "s"))
    bins: list[Mapping[str, Any]] = []
    for k, (key, colour, _) in enumerate(kinds):
        bins = fig.data[key]["by_semantic"]["bins"]
        xs = [i + 0.4 * k for i in range(len(bins))]
        label = key.replace("_", " ")
        left.bar(xs, [_pct(b["accuracy"]) for b in bins], 0.4, label=label, color=colour, edgecolor="black", lw=0.5)
        _count_labels(left, xs, [b["accuracy"] for b in bins], [b["n"] for b in bins])
    left.set_xticks([i + 0.2 for i in range(len(bins))], [_bin_label(b) for b in bins])
    left.set_xlabel("semantic distance of the evidence pages (1 − cosine)")
    left.set_ylabel("accuracy (% of model runs)")
    left.set_ylim(0, 110)
    left.set_yticks(range(0, 101, 20))
    legend_above(left)
    questions = [q for q in fig.data["questions"].values() if q and q["accuracy"] is not None]
    for (key, colour, marker), same in zip(kinds, (True, False), strict=True):
        kept = [q for q in questions if q["same_document"] is same]
        label = f"{key.replace('_', ' ')} (n={len(kept)})"
        right.scatter(
            [q["semantic"] for q in kept],
            [_pct(q["accuracy"]) for q in kept],
            marker=marker,
            label=label,
            color=colour,
            edgecolor="black",
            linewidth=0.4,
        )
    sd, cd = fig.data["same_document"], fig.data["cross_document"]
    stats = (
        f"same doc: semantic {correlation_text(sd['semantic_r'], 'questions')}",
        f"same doc: page gap {correlation_text(sd['physical_r'], 'questions')}",
        f"cross doc: semantic {correlation_text(cd['semantic_r'], 'questions')}",
    )
    note_below(right, "\n".join(stats))
    right.set_xlabel("semantic distance of the evidence pages")
    right.set_ylabel("accuracy (% of model runs)")
    right.set_ylim(0, 100)
    legend_above(right)
    return out


DRAWERS: dict[str, Callable[[Figure, Runs], MplFigure]] = {
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


def draw(fig: Figure, runs: Runs) -> dict[str, bytes]:
    """A drawn figure (``status == "ok"``) in every format of :data:`~.paper_style.FORMATS`, by format."""
    with style():
        drawn = DRAWERS[fig.id](fig, runs)
    return {fmt: render(drawn, fmt) for fmt in FORMATS}
