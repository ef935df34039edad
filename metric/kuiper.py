"""Kuiper statistic of effort calibration (paper §3.3 and F.3), its bootstrap CI and the cumulative-difference curve.

Items are sorted by effort ``s`` (number of search steps) and ``D_k = sum_{j<=k} (y_j - ybar)`` is accumulated
over the binary outcomes ``y``; ``K = max_k D_k - min_k D_k`` with ``D_0 = 0``. ``K`` is reported on the paper's
(raw) scale and divided by the number of items ``N``.

Two orders:

* ``block`` (default): items with equal effort form one block and ``D`` is only read at the boundaries between
  distinct effort values (and at ``k = N``). The result depends only on the multiset of ``(effort, outcome)``
  pairs, never on the order of lines in the results file.
* ``file``: the public harness's tie order: a stable sort by effort keeps ties in file order and ``D`` is read at
  every ``k``, so shuffling the file can change ``K``. It gives the harness's value only when both see the same
  items and efforts: the harness drops items with 0 steps and never reads a line's ``steps`` (see the metric
  card, "Differences from the public harness").

Items with 0 steps (answered without searching) are ordinary items with effort 0: they form the first block.
Items with unknown effort (no ``search_history``/``steps``/``iterations``, or a missing prediction) and
unscored items are left out; the caller reports how many.

``D`` is computed in integers (``N * D_k = N * sum(y) - k * total``) so ties and hand-computed cases are exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import numpy.typing as npt

from .schema import KuiperOrder

IntArray = npt.NDArray[np.int64]


def _scaled_cumdiff(y_sorted: IntArray) -> IntArray:
    """``N * D_k`` for ``k = 1..N`` along the last axis (rows are independent samples)."""
    n = y_sorted.shape[-1]
    total = y_sorted.sum(axis=-1, keepdims=True)
    k = np.arange(1, n + 1, dtype=np.int64)
    result: IntArray = n * np.cumsum(y_sorted, axis=-1) - k * total
    return result


def _boundaries(s_sorted: IntArray) -> npt.NDArray[np.bool_]:
    """True at ``k`` (1-based, last axis) where the block of equal effort ends."""
    keep = np.ones(s_sorted.shape, dtype=bool)
    keep[..., :-1] = s_sorted[..., 1:] != s_sorted[..., :-1]
    return keep


def _range_scaled(s_sorted: IntArray, y_sorted: IntArray, order: KuiperOrder) -> IntArray:
    """``N * K`` for each row of already-sorted samples."""
    d = _scaled_cumdiff(y_sorted)
    if order == "block":
        keep = _boundaries(s_sorted)
        hi = np.where(keep, d, np.iinfo(np.int64).min).max(axis=-1)
        lo = np.where(keep, d, np.iinfo(np.int64).max).min(axis=-1)
    else:
        hi = d.max(axis=-1)
        lo = d.min(axis=-1)
    result: IntArray = np.maximum(hi, 0) - np.minimum(lo, 0)
    return result


def _prepare(
    effort: npt.ArrayLike, correct: npt.ArrayLike, position: npt.ArrayLike | None, order: KuiperOrder
) -> tuple[IntArray, IntArray]:
    """Arrays in the order the statistic sees them.

    File order for ``file``; as given for ``block``, where the order cannot matter (and must not: the bootstrap
    draws indices into these arrays).
    """
    if order not in ("block", "file"):
        raise ValueError(f"unknown Kuiper order {order!r} (use 'block' or 'file')")
    s = np.asarray(effort, dtype=np.int64)
    y = np.asarray(correct, dtype=np.int64)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError("effort and correct must be 1-D arrays of equal length")
    if position is not None and order == "file":
        perm = np.argsort(np.asarray(position), kind="stable")
        s, y = s[perm], y[perm]
    return s, y


def _sort_rows(s: IntArray, y: IntArray) -> tuple[IntArray, IntArray]:
    perm = np.argsort(s, axis=-1, kind="stable")
    return np.take_along_axis(s, perm, axis=-1), np.take_along_axis(y, perm, axis=-1)


def kuiper_statistic(
    effort: npt.ArrayLike,
    correct: npt.ArrayLike,
    order: KuiperOrder = "block",
    position: npt.ArrayLike | None = None,
) -> float:
    """Raw Kuiper statistic ``K`` (paper scale).

    Args:
        effort: steps per item (non-negative integers).
        correct: binary outcome per item.
        order: ``block`` (order-invariant) or ``file`` (ties in file order).
        position: each item's position in the file; used by ``file`` order (default: the given order).

    Returns:
        ``K`` (0.0 for no items).

    >>> kuiper_statistic([1, 1, 2], [1, 0, 1])  # blocks {1: [1, 0]}, {2: [1]}: D = 0, -1/3, 0
    0.3333333333333333
    >>> kuiper_statistic([1, 1, 2], [1, 0, 1], order="file")  # D = 0, 1/3, -1/3, 0
    0.6666666666666666
    """
    s, y = _prepare(effort, correct, position, order)
    if s.size == 0:
        return 0.0
    s, y = _sort_rows(s, y)
    return float(_range_scaled(s, y, order)) / s.size


class CurveColumns(TypedDict):
    """Plot data of the cumulative-difference curve (equal-length columns)."""

    k: list[int]
    effort: list[int | None]
    d: list[float]


def cumulative_curve(
    effort: npt.ArrayLike,
    correct: npt.ArrayLike,
    order: KuiperOrder = "block",
    position: npt.ArrayLike | None = None,
) -> CurveColumns:
    """The cumulative-difference curve as plot data.

    Returns:
        Columns ``k`` (items accumulated), ``effort`` (effort of the ``k``-th item; ``None`` at ``k = 0``) and
        ``d`` (``D_k``, raw scale), starting at ``k = 0``; in ``block`` order only block boundaries are listed.

    >>> cumulative_curve([2, 1, 1], [1, 1, 0])["k"]
    [0, 2, 3]
    """
    s, y = _prepare(effort, correct, position, order)
    if s.size == 0:
        return {"k": [0], "effort": [None], "d": [0.0]}
    s, y = _sort_rows(s, y)
    d = _scaled_cumdiff(y) / s.size
    keep = _boundaries(s) if order == "block" else np.ones(s.shape, dtype=bool)
    ks = np.flatnonzero(keep)
    return {
        "k": [0] + [int(k) + 1 for k in ks],
        "effort": [None] + [int(s[k]) for k in ks],
        "d": [0.0] + [float(d[k]) for k in ks],
    }


def kuiper_bootstrap(
    effort: npt.ArrayLike,
    correct: npt.ArrayLike,
    order: KuiperOrder = "block",
    position: npt.ArrayLike | None = None,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the raw ``K`` (items resampled with replacement; vectorised).

    In ``file`` order a resample keeps its items in their original file order within effort ties.

    Returns:
        ``(low, high)``, or ``None`` for no items.
    """
    if n_resamples < 1:
        raise ValueError("n_resamples must be positive")
    s, y = _prepare(effort, correct, position, order)
    n = s.size
    if n == 0:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    if order == "file":
        idx.sort(axis=1)  # items are already in file order, so sorted indices keep it
    stats = _range_scaled(*_sort_rows(s[idx], y[idx]), order) / n
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


@dataclass(frozen=True)
class KuiperResult:
    """Kuiper summary.

    Attributes:
        statistic: raw ``K`` (``None`` for no items).
        normalized: ``K / N``.
        ci: bootstrap CI of ``K``.
        ci_normalized: the CI divided by ``N``.
        n: items used.
        order: ``block`` or ``file``.
        curve: cumulative-difference curve (see :func:`cumulative_curve`).
    """

    statistic: float | None
    normalized: float | None
    ci: tuple[float, float] | None
    ci_normalized: tuple[float, float] | None
    n: int
    order: KuiperOrder
    curve: CurveColumns


def kuiper(
    effort: npt.ArrayLike,
    correct: npt.ArrayLike,
    order: KuiperOrder = "block",
    position: npt.ArrayLike | None = None,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
) -> KuiperResult:
    """Kuiper statistic, normalisation, bootstrap CI and curve in one call."""
    n = int(np.asarray(effort).size)
    curve = cumulative_curve(effort, correct, order, position)
    if n == 0:
        return KuiperResult(None, None, None, None, 0, order, curve)
    k = kuiper_statistic(effort, correct, order, position)
    ci = kuiper_bootstrap(effort, correct, order, position, n_resamples=n_resamples, seed=seed)
    ci_norm = None if ci is None else (ci[0] / n, ci[1] / n)
    return KuiperResult(k, k / n, ci, ci_norm, n, order, curve)
