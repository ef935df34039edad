"""Matplotlib figures for the systems a user selects, drawn from whole-submission aggregates only.

Test-split submissions never get per-item curves (see :mod:`.disclosure`): the three panels are accuracy / Page F1
/ Doc F1 with the accuracy CI, the Kuiper statistic with its bootstrap CI, and the error cascade (found document →
found page → correct answer, as shares of all test items). :func:`plot_data` is the pure part (what is drawn, as
numbers); :func:`plot_systems` draws it. Figures are closed after drawing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .board_view import system_label
from .disclosure import cascade_shares, public_report
from .storage import SubmissionStore

#: At most this many systems in one figure.
MAX_SYSTEMS = 8
#: Drawn when the page opens: the board's first rows (issue 44, item 9: no empty plot until systems are ticked).
DEFAULT_SYSTEMS = 3
CASCADE_STEPS = (("found_doc", "found doc"), ("found_page", "found page"), ("correct", "correct"))


def _pct(value: Any) -> float | None:
    return None if value is None else 100.0 * float(value)


def plot_data(store: SubmissionStore, ids: Sequence[Any]) -> list[dict[str, Any]]:
    """What the figure shows for the selected submission ids (unknown ids are ignored), one dict per system.

    Every value comes from :func:`~.disclosure.public_report` of the stored report: no per-item data.
    """
    subs = {s.id: s for s in store.submissions()}
    chosen: list[int] = []
    for raw in ids:
        try:
            sid = int(raw)
        except (TypeError, ValueError):
            continue
        if sid in subs and sid not in chosen:
            chosen.append(sid)
    out = []
    for sid in chosen[:MAX_SYSTEMS]:
        r = public_report(subs[sid].report)
        # rows stored before the cascade was part of the report: the same whole-set shares from the item table
        cascade = r.get("cascade") or cascade_shares(store.item_scores(sid))
        out.append(
            {
                "id": sid,
                "label": system_label(sid, subs[sid].form["system"]),
                "accuracy": _pct(r.get("accuracy")),
                "accuracy_ci": [_pct(v) for v in (r.get("accuracy_ci") or [])],
                "page_f1": _pct(r.get("page_f1")),
                "doc_f1": _pct(r.get("doc_f1")),
                "kuiper": r.get("kuiper"),
                "kuiper_ci": list(r.get("kuiper_ci") or []),
                "cascade": [_pct(cascade.get(key)) for key, _ in CASCADE_STEPS],
            }
        )
    return out


def top_ids(store: SubmissionStore, n: int = DEFAULT_SYSTEMS) -> list[int]:
    """The submission ids of the board's first ``n`` rows (its rank order), the plot's default selection."""
    from .leaderboard import board_frame

    board = board_frame(store.submissions())
    return [int(sid) for sid in list(board["#"])[:n]] if "#" in board else []


def plot_alt(data: Sequence[dict[str, Any]]) -> str:
    """The figure's text alternative (the image's ``alt``): what it shows and each system's numbers."""
    if not data:
        return "No systems selected: tick systems above and press Plot."

    def pct(value: Any) -> str:
        return "n/a" if value is None else f"{value:.1f}%"

    rows = []
    for d in data:
        kuiper = "n/a" if d["kuiper"] is None else f"{d['kuiper']:.1f}"
        found = ", ".join(f"{name} {pct(v)}" for (_, name), v in zip(CASCADE_STEPS, d["cascade"], strict=True))
        rows.append(
            f"{d['label']}: accuracy {pct(d['accuracy'])}, Page F1 {pct(d['page_f1'])}, "
            f"Doc F1 {pct(d['doc_f1'])}, Kuiper {kuiper}; error cascade {found}"
        )
    return (
        f"Three bar charts comparing {len(data)} system{'s' if len(data) != 1 else ''}: accuracy with its 95% CI, "
        "Page F1 and Doc F1; the Kuiper statistic; the error cascade. " + ". ".join(rows) + "."
    )


def mpl_text(text: str) -> str:
    """A submitter's text as matplotlib draws it literally: ``$`` escaped, since a name such as ``$\\bad$`` would
    otherwise be parsed as math and raise, failing the plot for every visitor.

    >>> print(mpl_text("cost $0.01 per $q$"))
    cost \\$0.01 per \\$q\\$
    """
    return text.replace("$", r"\$")


def tick_label(label: str, width: int = 16, lines: int = 3) -> str:
    """A system's label on a narrow axis: wrapped onto at most ``lines`` lines (cut with "…" beyond), not cut short.

    >>> print(tick_label("Baseline: BM25 top-3 pages (#4)"))
    Baseline: BM25
    top-3 pages (#4)
    """
    import textwrap

    wrapped = textwrap.wrap(label, width) or [""]
    if len(wrapped) > lines:
        wrapped = [*wrapped[: lines - 1], textwrap.shorten(" ".join(wrapped[lines - 1 :]), width, placeholder="…")]
    return "\n".join(wrapped)


def _bar(ax: Any, x: float, value: float | None, width: float, label: str | None, **kw: Any) -> None:
    if value is not None:
        ax.bar([x], [value], width=width, label=label, **kw)


def _yerr(value: float, interval: Sequence[float]) -> list[list[float]]:
    """Error-bar lengths (a bias-corrected estimate may lie outside its interval: clipped at 0)."""
    return [[max(0.0, value - interval[0])], [max(0.0, interval[1] - value)]]


def _pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, imported when the first figure is drawn: importing it costs the
    Space's start-up about half a second (issue 47), and most visits draw no plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_systems(store: SubmissionStore, ids: Sequence[Any]) -> Any:
    """One figure with the three aggregate panels for the selected submission ids."""
    data = plot_data(store, ids)
    plt = _pyplot()
    fig, (ax_s, ax_k, ax_c) = plt.subplots(1, 3, figsize=(15, 4.2))
    width = 0.8 / max(1, len(data))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for n, d in enumerate(data):
        color = colors[n % len(colors)]
        for x, key in enumerate(("accuracy", "page_f1", "doc_f1")):
            _bar(ax_s, x + n * width, d[key], width, mpl_text(d["label"]) if x == 0 else None, color=color)
        lo_hi = d["accuracy_ci"]
        if d["accuracy"] is not None and len(lo_hi) == 2 and None not in lo_hi:
            ax_s.errorbar([n * width], [d["accuracy"]], yerr=_yerr(d["accuracy"], lo_hi), color="black", capsize=3)
        if d["kuiper"] is not None:
            ci = d["kuiper_ci"]
            yerr = _yerr(d["kuiper"], ci) if len(ci) == 2 and None not in ci else None
            ax_k.errorbar([n], [d["kuiper"]], yerr=yerr, fmt="o", capsize=4, color=color, label=mpl_text(d["label"]))
        for x, value in enumerate(d["cascade"]):
            _bar(ax_c, x + n * width, value, width, mpl_text(d["label"]) if x == 0 else None, color=color)
    offset = width * (len(data) - 1) / 2
    ax_s.set(title="Accuracy (95% CI), Page F1, Doc F1", ylabel="%")
    ax_s.set_xticks([x + offset for x in range(3)], ["accuracy", "Page F1", "Doc F1"])
    ax_k.set(title="Kuiper statistic (95% bootstrap CI)", ylabel="Kuiper (lower: effort better calibrated)")
    ax_k.set_xticks(range(len(data)), [mpl_text(tick_label(d["label"])) for d in data])
    ax_c.set(title="Error cascade", ylabel="% of test items")
    ax_c.set_xticks([x + offset for x in range(3)], [name for _, name in CASCADE_STEPS])
    if not data:
        ax_k.text(0.5, 0.5, "select systems above", ha="center", va="center", transform=ax_k.transAxes)
    fig.text(
        0.5,
        0.005,
        "Test-split plots show whole-submission aggregates only (no per-item curves).",
        ha="center",
        fontsize=8,
        color="grey",
    )
    # one legend for the three panels, under them: inside an axis it hid bars (issue 44, item 9)
    handles, labels = ax_s.get_legend_handles_labels()
    columns = min(len(labels), 4) or 1
    legend_rows = -(-len(labels) // columns)
    if labels:
        fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.035), ncol=columns, fontsize=9)
    fig.tight_layout(rect=(0, 0.05 + 0.07 * legend_rows, 1, 1))
    plt.close(fig)
    return fig
