"""Pure aggregates over per-item scores: breakdowns, error taxonomy, budget curve, wasted effort, Cohen's κ.

The denominator is always the gold set: missing predictions are items (incorrect, F1 0). Unscored items (judge
failures) are left out of accuracy-type aggregates and counted by the report.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .accuracy import summarize_accuracy
from .schema import ERROR_TYPES, Calibration, ItemScore, Mode, Reference


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, ``None`` for no values."""
    return float(sum(values) / len(values)) if values else None


def group_summary(
    items: Sequence[ItemScore], mode: Mode, calibration: Calibration | None, alpha: float = 0.05
) -> dict[str, Any]:
    """Accuracy (with CIs), ANLS*, Page F1 and Doc F1 of a group of items."""
    scored = [it.score for it in items if it.score is not None]
    acc = summarize_accuracy(scored, mode, calibration, alpha)
    return {
        "n": len(items),
        "accuracy": acc.accuracy,
        "accuracy_raw": acc.raw,
        "accuracy_ci": None if acc.ci is None else list(acc.ci),
        "anls": mean([it.anls for it in items]),
        "page_f1": mean([it.page_f1 for it in items]),
        "doc_f1": mean([it.doc_f1 for it in items]),
        "unscored": len(items) - len(scored),
    }


def breakdown(
    items: Sequence[ItemScore],
    references: Sequence[Reference],
    key: Callable[[Reference], str],
    mode: Mode,
    calibration: Calibration | None,
    *,
    order: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """Per-group summaries; groups listed in ``order`` come first (also when empty), the rest sorted."""
    groups: dict[str, list[ItemScore]] = {g: [] for g in order}
    for it, ref in zip(items, references, strict=True):
        groups.setdefault(key(ref), []).append(it)
    names = list(order) + sorted(g for g in groups if g not in order)
    return {g: group_summary(groups[g], mode, calibration) for g in names}


def error_breakdown(items: Sequence[ItemScore]) -> dict[str, Any]:
    """H.3 error counts and shares over incorrect scored items (missing predictions count as ``no_answer``)."""
    counts = {e: 0 for e in ERROR_TYPES}
    for it in items:
        if it.error is not None:
            counts[it.error] += 1
    total = sum(counts.values())
    shares = {e: (counts[e] / total if total else None) for e in ERROR_TYPES}
    return {"n_incorrect": total, "counts": counts, "shares": shares}


#: Up to this many budgets the curve lists every budget ``1..T``; beyond, only the budgets where it can change.
DENSE_BUDGET_POINTS = 100


def budget_curve(items: Sequence[ItemScore], max_budget: int | None = None) -> list[dict[str, float | int]]:
    """Accuracy under a step budget N: the share of scored items correct with ``steps <= N``, for N in 1..T.

    Items with unknown effort never count as within budget; ``T`` is ``max_budget`` or the largest observed
    effort (at least 1). Binary correctness is used (see ``schema.CORRECT_THRESHOLD``).

    The curve is a step function that can only change at an observed effort value. When ``T`` is at most
    :data:`DENSE_BUDGET_POINTS` every budget ``1..T`` is listed; beyond that only ``1``, the distinct observed
    efforts in ``(1, T)`` and ``T`` are, and an unlisted budget has the value of the listed budget before it.
    So the curve has at most ``max(DENSE_BUDGET_POINTS, distinct efforts + 2)`` points whatever ``T`` is
    (``"steps": 1000000`` once stored a 37 MB curve), and every listed value is exact.

    >>> from .schema import ItemScore as I
    >>> its = [I("a", 1.0, True, 1, 1, 1, 1, None, "anls"), I("b", 1.0, True, 1, 1, 1, 3, None, "anls"),
    ...        I("c", 0.0, False, 0, 0, 0, 2, "retrieval", "anls")]
    >>> [round(p["accuracy"], 3) for p in budget_curve(its)]
    [0.333, 0.333, 0.667]
    >>> [p["budget"] for p in budget_curve(its, max_budget=10**12)]
    [1, 2, 3, 1000000000000]
    """
    scored = [it for it in items if it.correct is not None]
    if not scored:
        return []
    observed = sorted({it.steps for it in scored if it.steps is not None})
    top = max(int(max_budget if max_budget is not None else (observed[-1] if observed else 1)), 1)
    if top <= DENSE_BUDGET_POINTS:
        budgets = list(range(1, top + 1))
    else:
        budgets = sorted({1, top}.union(s for s in observed if 1 < s < top))
    solved = sorted(it.steps for it in scored if it.correct and it.steps is not None)
    return [{"budget": b, "accuracy": bisect_right(solved, b) / len(scored)} for b in budgets]


#: The step budgets at which ``madqa compare`` reports accuracy by default (one search, a few, the paper's T = 10).
FIXED_BUDGETS = (1, 3, 10)


def accuracy_at_budgets(items: Sequence[ItemScore], budgets: Sequence[int]) -> dict[int, float | None]:
    """Accuracy within each step budget: the :func:`budget_curve` value at each of ``budgets``.

    That is the share of scored items correct with ``steps <= budget`` (unknown effort is never within budget);
    ``None`` when nothing is scored.

    >>> from .schema import ItemScore as I
    >>> its = [I("a", 1.0, True, 1, 1, 1, 1, None, "anls"), I("b", 1.0, True, 1, 1, 1, 3, None, "anls"),
    ...        I("c", 0.0, False, 0, 0, 0, 2, "retrieval", "anls"), I("d", 1.0, True, 1, 1, 1, None, None, "anls")]
    >>> accuracy_at_budgets(its, [1, 3, 10])
    {1: 0.25, 3: 0.5, 10: 0.5}
    """
    scored = [it for it in items if it.correct is not None]
    solved = sorted(it.steps for it in scored if it.correct and it.steps is not None)
    return {int(b): (bisect_right(solved, b) / len(scored) if scored else None) for b in budgets}


def wasted_effort_ratio(items: Sequence[ItemScore]) -> float | None:
    """Mean steps of incorrect items divided by mean steps of correct items (known effort only).

    ``None`` when either group is empty or correct items took 0 steps on average.
    """
    wrong = [it.steps for it in items if it.correct is False and it.steps is not None]
    right = [it.steps for it in items if it.correct is True and it.steps is not None]
    if not wrong or not right or sum(right) == 0:
        return None
    return (sum(wrong) / len(wrong)) / (sum(right) / len(right))


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's κ between two binary vectors; ``None`` when chance agreement is 1 (κ undefined).

    >>> cohen_kappa([True, True, False, False], [True, False, False, False])
    0.5
    """
    if len(a) != len(b):
        raise ValueError("vectors differ in length")
    n = len(a)
    if n == 0:
        return None
    x = np.asarray(a, dtype=bool)
    y = np.asarray(b, dtype=bool)
    po = float(np.mean(x == y))
    pa, pb = float(x.mean()), float(y.mean())
    pe = pa * pb + (1 - pa) * (1 - pb)
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)


def kappa_matrix(outcomes: Mapping[str, Sequence[bool | None]]) -> dict[str, dict[str, float | None]]:
    """Pairwise κ between systems' per-item correctness (items unscored in either system are left out)."""
    names = list(outcomes)
    matrix: dict[str, dict[str, float | None]] = {}
    for a in names:
        row: dict[str, float | None] = {}
        for b in names:
            pairs = [(x, y) for x, y in zip(outcomes[a], outcomes[b], strict=True) if x is not None and y is not None]
            row[b] = cohen_kappa([bool(x) for x, _ in pairs], [bool(y) for _, y in pairs])
        matrix[a] = row
    return matrix
