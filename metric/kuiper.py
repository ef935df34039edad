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

**Where effort varies.** ``K`` says how correctness depends on effort, so it means something only when effort
varies: a run whose items all take the same number of steps (a fixed pipeline: rag, file search, mdoc) has one
block and ``K = 0`` by construction, which is no evidence of good calibration (the paper leaves Kuiper out for
such systems). :func:`effort_varies` is the rule: at least one item in :data:`MIN_VARYING_ONE_IN` (and at least
one item) lies off the most common effort value. Below it the report gives no Kuiper value ("n/a (fixed
effort)") and nothing highlights one.

``D`` is computed in integers (``N * D_k = N * sum(y) - k * total``) so ties and hand-computed cases are exact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from .schema import KuiperOrder

IntArray = npt.NDArray[np.int64]


#: :func:`effort_varies`: at least one item in this many must lie off the most common effort (5%).
MIN_VARYING_ONE_IN = 20


def effort_varies(effort: npt.ArrayLike) -> bool:
    """Whether effort varies enough for Kuiper to say anything (see the module docstring).

    True when at least ``N / MIN_VARYING_ONE_IN`` items, and at least one, lie off the most common effort value.

    >>> effort_varies([3, 3, 3, 3]), effort_varies([1, 1, 2]), effort_varies([1] * 39 + [2])
    (False, True, False)
    """
    s = np.asarray(effort, dtype=np.int64).reshape(-1)
    if s.size == 0:
        return False
    _, counts = np.unique(s, return_counts=True)
    off = int(s.size - counts.max())
    return off >= 1 and MIN_VARYING_ONE_IN * off >= s.size


#: How a report's Kuiper value is shown where effort does not vary (tables, the board, the explorer, figures).
NOT_APPLICABLE = "n/a (fixed effort)"


def not_applicable(report: Mapping[str, Any]) -> bool:
    """Whether a report (or a row of one) says Kuiper is n/a: items with effort, but effort that does not vary.

    A report without ``kuiper_applicable`` (older than the rule) is taken as applicable.

    >>> not_applicable({"kuiper_applicable": False, "kuiper_n": 4}), not_applicable({"kuiper_n": 4})
    (True, False)
    """
    return report.get("kuiper_applicable") is False and bool(report.get("kuiper_n"))


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


#: Most ``resample x point`` cells held at once by :func:`kuiper_bootstrap` (memory bound: about 100 MB).
_CHUNK_CELLS = 4_000_000


def _points(s: IntArray, order: KuiperOrder) -> tuple[IntArray, int]:
    """Each item's point on the curve's axis (0-based, ascending effort) and the number of points.

    ``block``: one point per distinct effort. ``file``: one point per item, in stable effort order (so ties keep
    the given, file, order).
    """
    if order == "file":
        point = np.empty(s.size, dtype=np.int64)
        point[np.argsort(s, kind="stable")] = np.arange(s.size, dtype=np.int64)
        return point, s.size
    _, inverse = np.unique(s, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), int(inverse.max()) + 1


def _scaled_curve(counts: IntArray, n: int) -> IntArray:
    """``N * D`` at every point, from ``(..., points, 2)`` counts of (wrong, correct) items; ``D = 0`` first."""
    total_at = np.cumsum(counts.sum(axis=-1), axis=-1)
    correct_at = np.cumsum(counts[..., 1], axis=-1)
    curve: IntArray = n * correct_at - correct_at[..., -1:] * total_at
    zero = np.zeros((*curve.shape[:-1], 1), dtype=np.int64)
    return np.concatenate([zero, curve], axis=-1)


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
    """Bootstrap CI of the population Kuiper value on the raw scale: ``K +- q``, clipped at 0.

    The target is ``N * kappa``, where ``kappa`` is the range of the population curve
    ``G(t) = E[(y - E y) 1{s <= t}]`` (so ``K / N`` estimates ``kappa``). For any two curves the ranges differ by
    at most the range of their difference, so ``|K - N * kappa| <= N * range(G_N - G)``: the interval
    ``K +- q``, with ``q`` the ``1 - alpha`` quantile of ``N * range(G*_N - G_N)`` over resamples ``G*_N`` of the
    items, covers with probability ``1 - alpha`` asymptotically, wherever ``kappa`` lies. The bootstrap is
    consistent for this range of a centred process, while the percentile interval of ``K`` itself is not near
    ``kappa = 0`` (``K >= 0`` with an ``O(sqrt N)`` upward bias there, and each resample adds more; it can lie
    wholly above ``K``). The interval always contains ``K``. It is near-exact at ``kappa = 0`` and conservative
    away from it, where ``K``'s error is a difference of the curve's error at two points, not its whole range.

    In ``file`` order every item is its own point, in stable effort order (ties in file order).

    Args:
        effort: steps per item.
        correct: binary outcome per item.
        order: ``block`` or ``file``.
        position: each item's position in the file (``file`` order).
        n_resamples: bootstrap resamples (items drawn with replacement).
        seed: seed of the resampling.
        alpha: one minus the coverage.

    Returns:
        ``(low, high)``, or ``None`` for no items.

    Raises:
        ValueError: ``n_resamples`` below 1 or ``alpha`` outside ``(0, 1)``.
    """
    if n_resamples < 1:
        raise ValueError("n_resamples must be positive")
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")
    s, y = _prepare(effort, correct, position, order)
    n = s.size
    if n == 0:
        return None
    point, m = _points(s, order)
    cell = point * 2 + y  # (point, outcome) cell of each item
    base = _scaled_curve(np.bincount(cell, minlength=2 * m).reshape(m, 2), n)
    rng = np.random.default_rng(seed)
    ranges: list[IntArray] = []
    rows = max(1, _CHUNK_CELLS // max(n, 2 * m))
    for done in range(0, n_resamples, rows):
        b = min(rows, n_resamples - done)
        idx = rng.integers(0, n, size=(b, n))
        flat = (np.arange(b, dtype=np.int64)[:, None] * (2 * m) + cell[idx]).ravel()
        counts = np.bincount(flat, minlength=b * 2 * m).reshape(b, m, 2)
        diff = _scaled_curve(counts, n) - base
        ranges.append(diff.max(axis=-1) - diff.min(axis=-1))
    q = float(np.quantile(np.concatenate(ranges), 1 - alpha)) / n
    k = float(base.max() - base.min()) / n
    return max(k - q, 0.0), k + q


@dataclass(frozen=True)
class KuiperResult:
    """Kuiper summary.

    Attributes:
        statistic: raw ``K`` (``None`` for no items).
        normalized: ``K / N``.
        ci: bootstrap CI of the population value on ``K``'s scale (see :func:`kuiper_bootstrap`).
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
