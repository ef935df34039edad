"""Matplotlib figures for the systems a user selects: cumulative differences (Kuiper), accuracy vs step budget, and
the error cascade (found document → found page → correct answer). Figures are closed after drawing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .storage import SubmissionStore  # noqa: E402


def cascade(items: Sequence[dict[str, Any]]) -> tuple[float, float, float]:
    """Shares of gold items whose document was cited, whose page was cited, and that were answered correctly."""
    n = len(items) or 1
    doc = sum(1 for it in items if (it.get("doc_f1") or 0) > 0) / n
    page = sum(1 for it in items if (it.get("page_f1") or 0) > 0) / n
    correct = sum(1 for it in items if it.get("correct")) / n
    return doc, page, correct


def _label(store: SubmissionStore, sid: int) -> str:
    return next((f"#{s.id} {s.form['system']}"[:40] for s in store.submissions() if s.id == sid), f"#{sid}")


def plot_systems(store: SubmissionStore, ids: Sequence[int]) -> Any:
    """One figure with the three panels for the selected submission ids (at most 8)."""
    subs = {s.id: s for s in store.submissions()}
    chosen = [int(i) for i in ids if int(i) in subs][:8]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax_k, ax_b, ax_c = axes
    width = 0.8 / max(1, len(chosen))
    for n, sid in enumerate(chosen):
        report, label = subs[sid].report, _label(store, sid)
        curve = report.get("kuiper_curve") or {"k": [0], "d": [0.0]}
        ax_k.step(curve["k"], curve["d"], where="post", label=label)
        budget = report.get("budget_curve") or []
        ax_b.plot([p["budget"] for p in budget], [100 * p["accuracy"] for p in budget], marker=".", label=label)
        shares = cascade(store.item_scores(sid))
        ax_c.bar([x + n * width for x in range(3)], [100 * s for s in shares], width=width, label=label)
    ax_k.axhline(0.0, color="grey", linewidth=0.8)
    ax_k.set(title="Cumulative differences (Kuiper)", xlabel="items, ordered by effort", ylabel="D_k")
    ax_b.set(title="Accuracy vs step budget", xlabel="step budget N", ylabel="accuracy within budget (%)")
    ax_c.set(title="Error cascade", ylabel="% of gold items")
    ax_c.set_xticks([x + width * (len(chosen) - 1) / 2 for x in range(3)], ["found doc", "found page", "correct"])
    if not chosen:
        ax_b.text(0.5, 0.5, "select systems above", ha="center", va="center", transform=ax_b.transAxes)
    for ax in axes:
        if chosen:
            ax.legend(fontsize=7)
    fig.tight_layout()
    plt.close(fig)
    return fig
