"""Classical Test Theory item statistics and the split builder of the paper's §2.4.

Input: a binary matrix ``X`` (systems × items) of per-item correctness of several systems on the same items.

* Difficulty ``p_j``: the share of systems that solve item ``j``.
* Discrimination ``r_pbis,j``: Pearson (point-biserial) correlation between ``X[:, j]`` and each system's total
  on the *other* items. Undefined (constant vector) correlations are NaN and rank last.

Split builder (:func:`select_items`): a sentinel pool takes ``sentinel_fraction`` of the size from items with
``p <= sentinel_max_p`` (hardest first; ties by higher discrimination, then item order); the rest comes from
items with ``p > sentinel_max_p`` in ``n_bins`` equal-width difficulty bins over ``(sentinel_max_p, 1]``, taken
round-robin from the hardest bin to the easiest, each bin giving its most discriminating remaining item, until
the size is reached (so bins contribute equally while they last). If the sentinel pool is short, the bins make up
the difference. :func:`build_splits` picks test, then dev the same way from the remainder; train is the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import spearmanr

FloatArray = npt.NDArray[np.float64]


def item_statistics(matrix: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Difficulty and corrected point-biserial discrimination of each item.

    Args:
        matrix: binary outcomes, shape ``(systems, items)``.

    Returns:
        ``(p, r_pbis)``, each of length ``items``; ``r_pbis`` is NaN where undefined.

    >>> p, r = item_statistics([[1, 1, 0], [1, 0, 0], [0, 0, 0]])
    >>> p.round(3).tolist(), r.round(3).tolist()
    ([0.667, 0.333, 0.0], [0.5, 0.5, nan])
    """
    x = np.asarray(matrix, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError("need a (systems, items) matrix with at least two systems")
    p = x.mean(axis=0)
    rest = x.sum(axis=1, keepdims=True) - x  # total without item j, per system
    xc = x - p
    rc = rest - rest.mean(axis=0)
    num = (xc * rc).sum(axis=0)
    den = np.sqrt((xc**2).sum(axis=0) * (rc**2).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return p, r


@dataclass(frozen=True)
class Selection:
    """Items chosen for one split (indices into the item axis)."""

    items: tuple[int, ...]
    sentinel: tuple[int, ...]
    by_bin: tuple[int, ...]


def _bin_of(p: float, lo: float, n_bins: int) -> int:
    width = (1.0 - lo) / n_bins
    return min(n_bins - 1, max(0, int(np.ceil((p - lo) / width - 1e-12)) - 1))


def select_items(
    p: Sequence[float] | FloatArray,
    r: Sequence[float] | FloatArray,
    size: int,
    *,
    available: Sequence[int] | None = None,
    sentinel_fraction: float = 0.2,
    sentinel_max_p: float = 0.1,
    n_bins: int = 9,
) -> Selection:
    """Choose ``size`` items (see the module docstring for the rule)."""
    p_arr = np.asarray(p, dtype=np.float64)
    r_rank = np.nan_to_num(np.asarray(r, dtype=np.float64), nan=-np.inf)
    pool = list(range(p_arr.size)) if available is None else list(available)
    size = min(size, len(pool))
    quota = int(round(size * sentinel_fraction))
    hard = sorted((j for j in pool if p_arr[j] <= sentinel_max_p), key=lambda j: (p_arr[j], -r_rank[j], j))
    sentinel = hard[:quota]
    bins: list[list[int]] = [[] for _ in range(n_bins)]
    for j in pool:
        if p_arr[j] > sentinel_max_p:
            bins[_bin_of(float(p_arr[j]), sentinel_max_p, n_bins)].append(j)
    queues = [sorted(b, key=lambda j: (-r_rank[j], j)) for b in bins]
    picked: list[int] = []
    need = size - len(sentinel)
    while len(picked) < need and any(queues):
        for queue in queues:
            if queue and len(picked) < need:
                picked.append(queue.pop(0))
    if len(picked) < need:  # not enough items above the sentinel threshold: top up with the hardest left
        picked.extend(hard[quota : quota + need - len(picked)])
    return Selection(tuple(sentinel + picked), tuple(sentinel), tuple(picked))


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman ρ, ``None`` when undefined (fewer than 2 systems or a constant ranking)."""
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    rho = spearmanr(a, b).statistic
    return None if rho is None or not np.isfinite(rho) else float(rho)


@dataclass(frozen=True)
class Splits:
    """CTT splits and their validation.

    Attributes:
        test: test items (sentinel first).
        dev: dev items.
        train: the remaining items.
        test_sentinel: sentinel items of the test split.
        spearman_test_vs_all: Spearman ρ between system rankings on the test items and on all items.
    """

    test: tuple[int, ...]
    dev: tuple[int, ...]
    train: tuple[int, ...]
    test_sentinel: tuple[int, ...]
    spearman_test_vs_all: float | None


def build_splits(
    matrix: npt.ArrayLike,
    test_size: int = 500,
    dev_size: int = 200,
    *,
    sentinel_fraction: float = 0.2,
    sentinel_max_p: float = 0.1,
    n_bins: int = 9,
) -> Splits:
    """Test, dev and train splits from a systems × items correctness matrix (paper §2.4)."""
    x = np.asarray(matrix, dtype=np.float64)
    p, r = item_statistics(x)

    def pick(size: int, available: list[int] | None) -> Selection:
        return select_items(
            p,
            r,
            size,
            available=available,
            sentinel_fraction=sentinel_fraction,
            sentinel_max_p=sentinel_max_p,
            n_bins=n_bins,
        )

    test = pick(test_size, None)
    chosen = set(test.items)
    dev = pick(dev_size, [j for j in range(p.size) if j not in chosen])
    chosen |= set(dev.items)
    train = tuple(j for j in range(p.size) if j not in chosen)
    on_test = x[:, list(test.items)].mean(axis=1) if test.items else np.zeros(x.shape[0])
    rho = spearman(on_test.tolist(), x.mean(axis=1).tolist())
    return Splits(test.items, dev.items, train, test.sentinel, rho)
