"""What goes with accuracy: evidence distance (paper H.1), response time (§5.2), and the shared statistics.

Pure functions: values in, numbers out. Embeddings are inputs (the embedder belongs to the caller).

* **Cosine distance** ``1 - cos(a, b)``; a zero vector has none (``ValueError``, never a silent 0).
* **Binned accuracy**: bins ``(-inf, e1), [e1, e2), …, [ek, inf)`` over a value (semantic distance, seconds), with
  the mean outcome of the items in each bin; an item whose value or outcome is ``None`` is excluded and counted.
* **Evidence distance** of a multi-hop question (H.1), over its distinct gold pages (``(doc_key, page)``): the
  *semantic* distance is the mean cosine distance between the page embeddings over all page pairs (for the
  paper's two-page questions, the one pair's distance); the *physical* distance is the mean page gap
  ``|page_a - page_b|`` over the pairs, defined for same-document questions only (``None`` across documents). A
  question with fewer than two distinct pages, or with a page that has no embedding, has no distance (``None``).
* **Response time** (§5.2): a results line's ``elapsed_s`` (both ``madqa run`` and ``madqa human`` write it),
  else ``ended_at - started_at``; the paper's bins are under 1 min, 1–2, 2–4, 4–10 and over 10 minutes.
* **Correlations**: Pearson's r and Spearman's rho (scipy) over the pairs where both values are given; ``None``
  with fewer than three pairs or a constant variable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import pearsonr, spearmanr

from .schema import Citation
from .scoring import doc_key

#: Response-time bin edges in seconds (§5.2: under one minute, the 1–4 min interquartile range, over ten minutes).
TIME_EDGES_S: tuple[float, ...] = (60.0, 120.0, 240.0, 600.0)
#: Semantic-distance bin edges of the paper's Tables 14–15 (0–0.15, …, 0.6+).
DISTANCE_EDGES: tuple[float, ...] = (0.15, 0.30, 0.45, 0.60)


def cosine_distance(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """``1 - cos(a, b)``, in ``[0, 2]``.

    Raises:
        ValueError: a vector has zero norm (its cosine is undefined) or the shapes differ.

    >>> cosine_distance([1.0, 0.0], [0.0, 2.0]), round(cosine_distance([1.0, 1.0], [2.0, 2.0]), 12)
    (1.0, 0.0)
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"need two vectors of the same length, got shapes {x.shape} and {y.shape}")
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0.0 or ny == 0.0:
        raise ValueError("a zero vector has no cosine distance")
    return float(min(2.0, max(0.0, 1.0 - float(x @ y) / (nx * ny))))


@dataclass(frozen=True)
class Summary:
    """Location and spread of a set of values (e.g. one system's drifts).

    Attributes:
        n: values summarised.
        n_excluded: ``None`` entries left out (for drift: trajectories with fewer than two queries).
        mean: arithmetic mean; ``median``, ``q1`` (25th) and ``q3`` (75th percentile, linear interpolation) and
            ``iqr = q3 - q1``. All ``None`` when ``n == 0``.
        median: see ``mean``.
        q1: see ``mean``.
        q3: see ``mean``.
        iqr: see ``mean``.
    """

    n: int
    n_excluded: int
    mean: float | None
    median: float | None
    q1: float | None
    q3: float | None
    iqr: float | None


def summarize(values: Sequence[float | None]) -> Summary:
    """Mean, median and quartiles of the non-``None`` values.

    >>> s = summarize([0.1, 0.2, 0.3, 0.4, None])
    >>> s.n, s.n_excluded, round(s.median, 3), round(s.iqr, 3)
    (4, 1, 0.25, 0.15)
    """
    kept = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if not len(kept):
        return Summary(0, len(values), None, None, None, None, None)
    q1, med, q3 = (float(q) for q in np.percentile(kept, [25, 50, 75]))
    return Summary(len(kept), len(values) - len(kept), float(kept.mean()), med, q1, q3, q3 - q1)


@dataclass(frozen=True)
class Correlation:
    """Pearson and Spearman correlation of paired values.

    Attributes:
        n: pairs used.
        n_excluded: pairs left out because a value was ``None`` (or, for mappings, a key in only one of them).
        pearson: Pearson's r; ``None`` with fewer than 3 pairs or a constant variable.
        pearson_p: its two-sided p-value.
        spearman: Spearman's rho; ``None`` likewise.
        spearman_p: its two-sided p-value.
    """

    n: int
    n_excluded: int
    pearson: float | None
    pearson_p: float | None
    spearman: float | None
    spearman_p: float | None


def correlation(x: Sequence[float | None], y: Sequence[float | None]) -> Correlation:
    """Pearson and Spearman correlation of ``x`` and ``y`` over the pairs where both are given.

    With a binary ``y`` (correct or not) Pearson's r is the point-biserial correlation (H.1's "r").

    >>> c = correlation([1, 2, 3, None], [2, 4, 7, 1])
    >>> c.n, c.n_excluded, round(c.pearson, 4), c.spearman
    (3, 1, 0.9934, 1.0)
    """
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} vs {len(y)})")
    pairs = [(float(a), float(b)) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
    n, excluded = len(pairs), len(x) - len(pairs)
    xs, ys = np.asarray([a for a, _ in pairs]), np.asarray([b for _, b in pairs])
    if n < 3 or np.ptp(xs) == 0 or np.ptp(ys) == 0:
        return Correlation(n, excluded, None, None, None, None)
    pr, sr = pearsonr(xs, ys), spearmanr(xs, ys)
    return Correlation(n, excluded, float(pr.statistic), float(pr.pvalue), float(sr.statistic), float(sr.pvalue))


def system_correlation(x: Mapping[str, float | None], y: Mapping[str, float | None]) -> Correlation:
    """:func:`correlation` across systems (e.g. median drift against accuracy), aligned by system name.

    A system in only one mapping counts as excluded.
    """
    names = list(dict.fromkeys([*x, *y]))
    return correlation([x.get(s) for s in names], [y.get(s) for s in names])


@dataclass(frozen=True)
class Bin:
    """One bin of a binned accuracy.

    Attributes:
        low: inclusive lower edge (``None``: no lower edge).
        high: exclusive upper edge (``None``: no upper edge).
        n: items in the bin.
        accuracy: their mean outcome (``None`` when ``n == 0``).
    """

    low: float | None
    high: float | None
    n: int
    accuracy: float | None


@dataclass(frozen=True)
class Binned:
    """Accuracy by bins of a value.

    Attributes:
        bins: the bins, lowest first.
        n: items binned.
        n_excluded: items whose value or outcome is ``None``.
        accuracy: the mean outcome over all binned items (``None`` when ``n == 0``).
    """

    bins: tuple[Bin, ...]
    n: int
    n_excluded: int
    accuracy: float | None


def binned_accuracy(
    values: Sequence[float | None], outcomes: Sequence[float | bool | None], edges: Sequence[float]
) -> Binned:
    """The mean outcome of the items in each bin ``(-inf, e1), [e1, e2), …, [ek, inf)`` of ``values``.

    Args:
        values: one value per item (``None``: unknown).
        outcomes: one outcome per item: correct (``True``/``False``) or an accuracy in ``[0, 1]`` such as the share
            of systems correct (``None``: unscored).
        edges: increasing bin edges.

    Returns:
        ``len(edges) + 1`` bins.

    >>> b = binned_accuracy([10, 59.9, 60, 700, None], [True, False, True, True, True], [60, 600])
    >>> [(x.low, x.high, x.n, x.accuracy) for x in b.bins], b.n_excluded
    ([(None, 60, 2, 0.5), (60, 600, 1, 1.0), (600, None, 1, 1.0)], 1)
    """
    if len(values) != len(outcomes):
        raise ValueError(f"values and outcomes differ in length ({len(values)} vs {len(outcomes)})")
    if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ValueError(f"bin edges must increase, got {list(edges)}")
    lows: list[float | None] = [None, *edges]
    highs: list[float | None] = [*edges, None]
    members: list[list[float]] = [[] for _ in lows]
    kept = [(float(v), float(o)) for v, o in zip(values, outcomes, strict=True) if v is not None and o is not None]
    for value, outcome in kept:
        members[sum(value >= e for e in edges)].append(outcome)
    bins = tuple(Bin(lo, hi, len(m), _mean(m)) for lo, hi, m in zip(lows, highs, members, strict=True))
    return Binned(bins, len(kept), len(values) - len(kept), _mean([o for _, o in kept]))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class EvidencePair:
    """Two distinct gold pages of one question.

    Attributes:
        a: the first page (in sorted order).
        b: the second page.
        same_document: whether both are pages of one document.
        page_gap: ``|a.page - b.page|`` within one document, ``None`` across documents.
        semantic: the cosine distance of their embeddings.
    """

    a: Citation
    b: Citation
    same_document: bool
    page_gap: int | None
    semantic: float


@dataclass(frozen=True)
class HopDistance:
    """The semantic and physical distance of one multi-hop question's evidence (paper H.1).

    Attributes:
        same_document: all distinct evidence pages are in one document (the paper's same-document multi-hop).
        semantic: mean cosine distance over the evidence page pairs.
        physical: mean page gap over the pairs of a same-document question; ``None`` across documents.
        pairs: the pairs it is computed from.
    """

    same_document: bool
    semantic: float
    physical: float | None
    pairs: tuple[EvidencePair, ...]


def hop_distance(
    evidence: Sequence[Citation], embeddings: Mapping[tuple[str, int], npt.ArrayLike]
) -> HopDistance | None:
    """Semantic and physical distance between a question's gold evidence pages.

    Args:
        evidence: the question's gold pages (whole-document entries, page ``None``, are ignored).
        embeddings: page embedding per ``(scoring.doc_key(document), page)``.

    Returns:
        The distances, or ``None`` when there are fewer than two distinct pages or a page has no embedding.

    >>> emb = {("a", 1): [1.0, 0.0], ("a", 4): [0.0, 1.0], ("b", 2): [1.0, 0.0]}
    >>> d = hop_distance([Citation("a.pdf", 1), Citation("a.pdf", 4)], emb)
    >>> d.same_document, d.semantic, d.physical
    (True, 1.0, 3.0)
    >>> hop_distance([Citation("a", 1), Citation("b", 2)], emb).physical is None
    True
    """
    pages = sorted({(doc_key(c.document), c.page) for c in evidence if c.page is not None})
    if len(pages) < 2 or any(p not in embeddings for p in pages):
        return None
    pairs = tuple(
        EvidencePair(
            Citation(*a),
            Citation(*b),
            a[0] == b[0],
            abs(a[1] - b[1]) if a[0] == b[0] else None,
            cosine_distance(embeddings[a], embeddings[b]),
        )
        for a, b in combinations(pages, 2)
    )
    same = len({doc for doc, _ in pages}) == 1
    physical = _mean([float(p.page_gap or 0) for p in pairs]) if same else None
    return HopDistance(same, sum(p.semantic for p in pairs) / len(pairs), physical, pairs)


@dataclass(frozen=True)
class DistanceVsAccuracy:
    """Accuracy against evidence distance for one kind of multi-hop question (same- or cross-document).

    Attributes:
        by_semantic: accuracy by semantic-distance bin (the paper's Tables 14–15).
        semantic_r: correlation of semantic distance with accuracy.
        physical_r: correlation of page gap with accuracy (same-document only, else ``None``).
        n_no_distance: questions of either kind without a distance (excluded; their kind is not known).
    """

    by_semantic: Binned
    semantic_r: Correlation
    physical_r: Correlation | None
    n_no_distance: int


def distance_vs_accuracy(
    distances: Mapping[str, HopDistance | None],
    accuracy: Mapping[str, float | bool | None],
    *,
    same_document: bool,
    edges: Sequence[float] = DISTANCE_EDGES,
) -> DistanceVsAccuracy:
    """Accuracy by semantic distance, and both distances' correlation with accuracy (paper H.1).

    Args:
        distances: each multi-hop question's distance (from :func:`hop_distance`; ``None``: none).
        accuracy: each question's outcome: correct, or the share of systems correct (``difficulty.item_p_values``).
        same_document: analyse the same-document questions (``True``) or the cross-document ones.
        edges: semantic-distance bin edges.

    Returns:
        The bins and correlations over the questions of that kind that have both a distance and an outcome.
    """
    kept = [(q, d) for q, d in distances.items() if d is not None and d.same_document == same_document]
    outcomes = [None if (a := accuracy.get(q)) is None else float(a) for q, _ in kept]
    semantic = [d.semantic for _, d in kept]
    physical = [d.physical for _, d in kept]
    return DistanceVsAccuracy(
        binned_accuracy(semantic, outcomes, edges),
        correlation(semantic, outcomes),
        correlation(physical, outcomes) if same_document else None,
        sum(d is None for d in distances.values()),
    )


def elapsed_seconds(record: Mapping[str, Any]) -> float | None:
    """A results line's response time: ``elapsed_s``, else ``ended_at - started_at`` (ISO 8601), else ``None``.

    A negative, non-finite or non-numeric value counts as unknown.

    >>> elapsed_seconds({"elapsed_s": 75.5}), elapsed_seconds({"started_at": "2026-12-01T08:00:00.000Z",
    ...                                                        "ended_at": "2026-12-01T08:02:30.000Z"})
    (75.5, 150.0)
    """
    value = record.get("elapsed_s")
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    start, end = record.get("started_at"), record.get("ended_at")
    if not isinstance(start, str) or not isinstance(end, str):
        return None
    try:
        seconds = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (ValueError, TypeError):  # unparsable, or one aware and one naive
        return None
    return seconds if seconds >= 0 else None


@dataclass(frozen=True)
class TimeVsAccuracy:
    """Response time against accuracy (paper §5.2).

    Attributes:
        seconds: the distribution of known response times (all items with a time, scored or not).
        bins: accuracy by time bin.
        r: correlation of time with correctness (point-biserial Pearson, and Spearman).
    """

    seconds: Summary
    bins: Binned
    r: Correlation


def time_vs_accuracy(
    seconds: Sequence[float | None], correct: Sequence[bool | None], *, edges: Sequence[float] = TIME_EDGES_S
) -> TimeVsAccuracy:
    """Distribution of response times and accuracy by time bin (one value per item, aligned).

    Args:
        seconds: each item's response time (:func:`elapsed_seconds`; ``None``: unknown).
        correct: each item's correctness (``None``: unscored).
        edges: bin edges in seconds.

    Returns:
        The summary, the bins and the correlation.
    """
    outcomes = [None if c is None else float(c) for c in correct]
    return TimeVsAccuracy(
        summarize(seconds), binned_accuracy(seconds, outcomes, edges), correlation(seconds, outcomes)
    )
