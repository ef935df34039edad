"""Paired inference between systems scored on the same items, rank intervals and tie groups (pure, seeded).

Two runs of the same gold list are compared on their **shared items** only: items both scored (an item one run did
not answer is scored 0 by the metric, so it is shared; an item a run could not score, ``None``, is left out and the
count of shared items is reported). Per item the difference ``d_i = a_i - b_i`` of the two scores is taken
(``0``/``1`` correctness, or a judge's score in ``[0, 1]``); the difference in accuracy is ``mean(d)``.

* **p-value.** For 0/1 scores, McNemar's exact test: under the null of equal accuracy the discordant items (right in
  one run only) fall on either side with probability 1/2, so the two-sided p-value is the binomial tail
  ``min(1, 2 * sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c))`` for ``b`` items right only in A and ``c`` only in B
  (computed exactly in integers, :func:`mcnemar_exact`). For other scores, a seeded sign-flip randomisation test
  of ``mean(d)`` (:func:`sign_flip_p`): under the null each ``d_i`` is as likely as ``-d_i``.
* **Confidence interval.** A seeded paired bootstrap: items are drawn with replacement (the two runs' scores of
  an item stay together) and the interval is the percentile interval of the resampled ``mean(d)``
  (:func:`paired_bootstrap_ci`).

**Rank intervals** (:func:`rank_intervals`). With ``N`` systems and all ``m = N (N - 1) / 2`` pairwise p-values,
Holm's step-down correction controls the family-wise error at ``alpha``: the ``k``-th smallest p-value (``k`` from
0) is significant when it and every smaller one satisfy ``p <= alpha / (m - k)``. System ``i``'s rank interval is
``[1 + #systems significantly better than i, N - #systems significantly worse than i]``: the ranks it could hold
given the significant differences. **Tie groups** join systems linked by a chain of non-significant differences
(the connected components of the "not significantly different" graph), so any two systems in different groups
differ significantly; groups are numbered from 1 in the order of their best point estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: Default level of the tests and of the intervals (``1 - alpha`` coverage).
ALPHA = 0.05
#: Default bootstrap resamples and seed.
RESAMPLES = 2000
SEED = 0


class PairedError(ValueError):
    """Two runs that cannot be compared (no shared items, a score outside ``[0, 1]``, a bad argument)."""


@dataclass(frozen=True)
class PairedDifference:
    """The difference in accuracy of run A minus run B on their shared items.

    Attributes:
        n_shared: items scored in both runs (the only ones compared).
        accuracy_a: A's mean score on the shared items.
        accuracy_b: B's mean score on the shared items.
        difference: ``accuracy_a - accuracy_b``.
        ci: the paired bootstrap's percentile interval of the difference at ``1 - alpha``.
        p_value: two-sided p-value of "no difference".
        test: ``"mcnemar-exact"`` (0/1 scores) or ``"sign-flip"`` (other scores, seeded randomisation).
        only_a: items A got right and B wrong (0/1 scores; for other scores, items where A scored higher).
        only_b: the converse.
    """

    n_shared: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    ci: tuple[float, float]
    p_value: float
    test: str
    only_a: int
    only_b: int


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """McNemar's exact two-sided p-value from the discordant counts (1.0 when there are none).

    >>> mcnemar_exact(1, 6)  # 2 * (C(7,0) + C(7,1)) / 2^7 = 16/128
    0.125
    """
    if only_a < 0 or only_b < 0:
        raise PairedError("discordant counts must be non-negative")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1))
    return min(1.0, float(2 * tail / 2**n))


def shared_scores(
    a: Mapping[str, float | None], b: Mapping[str, float | None]
) -> tuple[list[str], FloatArray, FloatArray]:
    """The items both runs scored, in ``a``'s order, with their two scores.

    Raises:
        PairedError: no shared item, or a score outside ``[0, 1]``.
    """
    ids = [i for i, x in a.items() if x is not None and b.get(i) is not None]
    if not ids:
        raise PairedError("the two runs share no scored item: nothing to compare")
    sa = np.array([float(a[i]) for i in ids])  # type: ignore[arg-type]
    sb = np.array([float(b[i]) for i in ids])  # type: ignore[arg-type]
    for name, s in (("A", sa), ("B", sb)):
        if not np.all((s >= 0) & (s <= 1)):
            raise PairedError(f"run {name} has a score outside [0, 1]")
    return ids, sa, sb


def paired_bootstrap_ci(
    d: Sequence[float] | FloatArray, *, alpha: float = ALPHA, n_resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float]:
    """Percentile interval of ``mean(d)`` over ``n_resamples`` resamples of the items (seeded).

    Raises:
        PairedError: no items, ``alpha`` outside ``(0, 1)`` or ``n_resamples`` below 1.
    """
    _check(alpha, n_resamples)
    values = np.asarray(d, dtype=float)
    if values.size == 0:
        raise PairedError("no items to resample")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    rows = max(1, 2_000_000 // values.size)  # bounded memory: about 16 MB of indices at once
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        means[start:stop] = values[rng.integers(0, values.size, size=(stop - start, values.size))].mean(axis=1)
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def sign_flip_p(d: Sequence[float] | FloatArray, *, n_resamples: int = RESAMPLES, seed: int = SEED) -> float:
    """Two-sided randomisation p-value of ``mean(d) = 0``: each ``d_i`` flips sign at random (seeded).

    ``(1 + #{|mean(d*)| >= |mean(d)|}) / (1 + n_resamples)``, so it is never 0.
    """
    _check(ALPHA, n_resamples)
    values = np.asarray(d, dtype=float)
    observed = abs(values.sum())
    if values.size == 0 or observed == 0:
        return 1.0
    rng = np.random.default_rng(seed)
    hits = 0
    rows = max(1, 2_000_000 // values.size)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(stop - start, values.size))
        hits += int(np.sum(np.abs(signs @ values) >= observed - 1e-12))
    return (1 + hits) / (1 + n_resamples)


def _check(alpha: float, n_resamples: int) -> None:
    if not 0 < alpha < 1:
        raise PairedError(f"alpha must be in (0, 1), not {alpha}")
    if n_resamples < 1:
        raise PairedError("the number of resamples must be positive")


def paired_difference(
    a: Mapping[str, float | None],
    b: Mapping[str, float | None],
    *,
    alpha: float = ALPHA,
    n_resamples: int = RESAMPLES,
    seed: int = SEED,
) -> PairedDifference:
    """A minus B on their shared items: difference, paired bootstrap CI, and p-value (see the module docstring).

    Args:
        a: item id → A's score (0/1 correctness or a score in ``[0, 1]``; ``None``: unscored, left out).
        b: the same for B.
        alpha: one minus the CI's coverage.
        n_resamples: bootstrap (and sign-flip) resamples.
        seed: their seed.

    Raises:
        PairedError: no shared item, a score outside ``[0, 1]``, or a bad ``alpha``/``n_resamples``.
    """
    _check(alpha, n_resamples)
    _, sa, sb = shared_scores(a, b)
    d = sa - sb
    only_a, only_b = int(np.sum(d > 0)), int(np.sum(d < 0))
    binary = bool(np.all(np.isin(sa, (0.0, 1.0))) and np.all(np.isin(sb, (0.0, 1.0))))
    p = mcnemar_exact(only_a, only_b) if binary else sign_flip_p(d, n_resamples=n_resamples, seed=seed)
    ci = paired_bootstrap_ci(d, alpha=alpha, n_resamples=n_resamples, seed=seed)
    return PairedDifference(
        n_shared=int(d.size),
        accuracy_a=float(sa.mean()),
        accuracy_b=float(sb.mean()),
        difference=float(d.mean()),
        ci=ci,
        p_value=p,
        test="mcnemar-exact" if binary else "sign-flip",
        only_a=only_a,
        only_b=only_b,
    )


def unpaired_p(difference: float, se_a: float, se_b: float) -> float:
    """Two-sided normal p-value of a difference of two independent estimates with standard errors ``se_a``, ``se_b``.

    For tables that hold only aggregates (the live board): it ignores the pairing, so it is conservative when the
    two runs' per-item outcomes are positively correlated (as runs on the same items usually are). A zero
    combined standard error gives 1.0 for no difference and 0.0 otherwise.

    >>> round(unpaired_p(0.1, 0.03, 0.04), 4)  # z = 0.1 / 0.05 = 2
    0.0455
    """
    scale = math.hypot(se_a, se_b)
    if scale == 0:
        return 1.0 if difference == 0 else 0.0
    return math.erfc(abs(difference) / scale / math.sqrt(2))


def holm_significant(p_values: Mapping[tuple[str, str], float], alpha: float = ALPHA) -> set[tuple[str, str]]:
    """The pairs whose difference is significant under Holm's step-down correction at family-wise ``alpha``.

    >>> sorted(holm_significant({("a", "b"): 0.01, ("a", "c"): 0.04, ("b", "c"): 0.03}))  # 0.01 <= 0.05/3 only
    [('a', 'b')]
    """
    if not 0 < alpha < 1:
        raise PairedError(f"alpha must be in (0, 1), not {alpha}")
    ordered = sorted(p_values.items(), key=lambda kv: (kv[1], kv[0]))
    m = len(ordered)
    out: set[tuple[str, str]] = set()
    for k, (pair, p) in enumerate(ordered):
        if p > alpha / (m - k):
            break
        out.add(pair)
    return out


@dataclass(frozen=True)
class RankInterval:
    """The ranks a system could hold given the significant pairwise differences.

    Attributes:
        low: best rank (1 + systems significantly better).
        high: worst rank (N - systems significantly worse).
        group: its tie group (1 = the group of the best point estimate).
    """

    low: int
    high: int
    group: int

    def text(self) -> str:
        """``"2"`` or ``"1–3"`` (an en dash)."""
        return str(self.low) if self.low == self.high else f"{self.low}–{self.high}"


def rank_intervals(
    estimates: Mapping[str, float],
    p_values: Mapping[tuple[str, str], float],
    alpha: float = ALPHA,
) -> dict[str, RankInterval]:
    """Rank interval and tie group of each system (higher estimate is better; see the module docstring).

    Args:
        estimates: system → point estimate (its accuracy).
        p_values: ``(a, b)`` → the p-value of their difference, one entry per unordered pair (either order); a
            missing pair counts as not significant.
        alpha: family-wise level of Holm's correction.

    >>> r = rank_intervals({"x": 0.9, "y": 0.5, "z": 0.45}, {("x", "y"): 0.001, ("x", "z"): 0.001, ("y", "z"): 0.6})
    >>> [(k, v.text(), v.group) for k, v in r.items()]
    [('x', '1', 1), ('y', '2–3', 2), ('z', '2–3', 2)]
    """
    names = list(estimates)
    known = {frozenset(pair): p for pair, p in p_values.items()}
    pairs = {(a, b): known.get(frozenset((a, b)), 1.0) for i, a in enumerate(names) for b in names[i + 1 :]}
    significant = {frozenset(pair) for pair in holm_significant(pairs, alpha)} if pairs else set()
    better = dict.fromkeys(names, 0)
    worse = dict.fromkeys(names, 0)
    for pair in significant:
        a, b = sorted(pair, key=lambda s: -estimates[s])
        if estimates[a] == estimates[b]:
            continue  # equal estimates order nothing
        worse[a] += 1
        better[b] += 1
    order = sorted(names, key=lambda s: (-estimates[s], names.index(s)))
    group: dict[str, int] = {}
    for start in order:  # components of the "not significantly different" graph, numbered by best estimate
        if start in group:
            continue
        number = len(set(group.values())) + 1
        todo = [start]
        while todo:
            s = todo.pop()
            if s in group:
                continue
            group[s] = number
            todo += [t for t in names if t not in group and frozenset((s, t)) not in significant]
    n = len(names)
    return {s: RankInterval(1 + better[s], n - worse[s], group[s]) for s in names}
