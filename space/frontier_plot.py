"""The board's frontier plot: accuracy against cost per question and against mean steps, every row of the board, the
Pareto frontier drawn and its members named (issue 43, item 2).

Drawn from the board's own columns (:func:`.leaderboard.board_frame`: Accuracy, ``USD per question``, Mean steps, as
shown), so it shows nothing the table does not. A row without a cost (n/a: model not priced, human run, no token
counts, not recorded) or without mean steps is left out of that panel and named under the figure with its reason:
never drawn at 0. The frontier (:func:`madqa.metric.pareto.pareto_front`) is a statement about the point estimates,
not a test: neighbours on it may be statistically tied (the Rank column says which).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from madqa.metric.pareto import pareto_front

from .board_view import system_label
from .display import missing
from .leaderboard import COST_COLUMN, COST_NOTE

#: The two panels: key, the board column on the x axis, the axis label.
PANELS: tuple[tuple[str, str, str], ...] = (
    ("cost", COST_COLUMN, "inference cost per question (USD)"),
    ("steps", "Mean steps", "mean steps per question"),
)


def frontier_data(board: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per panel: ``points`` (label, x, accuracy in %, on the frontier or not), ``frontier`` (labels, by x) and
    ``left_out`` (label → why it is not drawn)."""
    out: dict[str, dict[str, Any]] = {}
    for key, column, _ in PANELS:
        points: dict[str, tuple[float, float]] = {}
        left_out: dict[str, str] = {}
        for _, row in board.iterrows():
            label = system_label(int(row["#"]), str(row["System"]))
            x, acc = row.get(column), row.get("Accuracy")
            if missing(acc):
                left_out[label] = "no accuracy"
            elif missing(x):
                note = str(row.get(COST_NOTE) or "") if key == "cost" else ""
                left_out[label] = note or "not reported"
            else:
                points[label] = (float(x), float(acc))
        front = pareto_front(points)
        out[key] = {
            "points": [
                {"label": name, "x": x, "accuracy": acc, "frontier": name in front}
                for name, (x, acc) in points.items()
            ],
            "frontier": front,
            "left_out": left_out,
        }
    return out


def frontier_note(data: Mapping[str, Mapping[str, Any]]) -> str:
    """The figure's text (under it, and its text alternative): each panel's frontier by name and what is left out."""
    parts = []
    for key, _, _ in PANELS:
        panel = data[key]
        what = "cost" if key == "cost" else "mean steps"
        front = ", ".join(panel["frontier"]) or "none (no row has both numbers)"
        text = f"**Pareto frontier, accuracy vs {what}**: {front}"
        if panel["left_out"]:
            gone = "; ".join(f"{name}: {why}" for name, why in panel["left_out"].items())
            text += f" · not drawn: {gone}"
        parts.append(text)
    parts.append(
        "On the frontier: no other row is at least as accurate for less (or as much) cost or steps. It compares "
        "the shown point estimates, not a test: neighbours on it may be tied (see Rank)."
    )
    return "\n\n".join(parts)


def plot_frontiers(board: pd.DataFrame) -> Any:
    """The figure: two panels, each row a dot, frontier members marked (a star) and named, the frontier a staircase."""
    from .plots import _pyplot, mpl_text

    data = frontier_data(board)
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
    for ax, (key, _, xlabel) in zip(axes, PANELS, strict=True):
        panel = data[key]
        others = [p for p in panel["points"] if not p["frontier"]]
        front = sorted((p for p in panel["points"] if p["frontier"]), key=lambda p: (p["x"], -p["accuracy"]))
        ax.scatter([p["x"] for p in others], [p["accuracy"] for p in others], color="0.55", s=28, label="other rows")
        ax.scatter(
            [p["x"] for p in front],
            [p["accuracy"] for p in front],
            marker="*",
            s=150,
            color="#d62728",
            edgecolor="black",
            zorder=3,
            label="on the Pareto frontier",
        )
        if len(front) > 1:
            xs, ys = [p["x"] for p in front], [p["accuracy"] for p in front]
            ax.step(xs, ys, where="post", color="#d62728", lw=1, ls="--", zorder=2)
        for p in front:
            ax.annotate(
                mpl_text(p["label"]), (p["x"], p["accuracy"]), xytext=(5, 5), textcoords="offset points", fontsize=8
            )
        positive = [p["x"] for p in panel["points"] if p["x"] > 0]
        if key == "cost" and positive and max(positive) > 10 * min(positive):
            # costs spanning orders of magnitude; a free model (0) stays drawn on the linear part near 0
            ax.set_xscale("symlog", linthresh=min(positive) / 2)
            xlabel += ", log scale"
        else:
            right = max([p["x"] for p in panel["points"]] or [1.0]) * 1.25 or 1.0
            ax.set_xlim(left=-0.03 * right, right=right)  # a point at 0 (no steps, a free model) drawn whole
        ax.set(xlabel=xlabel, ylabel="accuracy (%)", ylim=(0, 100))
        ax.set_title(f"Accuracy vs {'cost' if key == 'cost' else 'mean steps'}")
        if not panel["points"]:
            ax.text(0.5, 0.5, "no row has both numbers", ha="center", va="center", transform=ax.transAxes)
        ax.legend(loc="upper left", fontsize=8)  # the frontier rises to the right: the upper left is empty
    fig.tight_layout()
    plt.close(fig)
    return fig
