"""Search dynamics from results lines (paper H.5, H.6): retrieval by iteration, recovery, reformulation drift.

All functions are pure: results-line values and gold evidence in, numbers out. Query embeddings are inputs
(vectors); the embedder belongs to the caller. Evidence distance (H.1) and response time (§5.2) are in
``correlates.py``. Conventions shared by every function:

* **Search iteration** ``i`` is the ``i``-th entry of a line's ``search_history`` (1-based).
* A query **hits the document** when one of the pages it returned is in a gold evidence document, and **hits the
  page** when one of them is a gold evidence page (documents compared by ``scoring.doc_key``).
* An item whose line has **no** ``search_history`` (``None``), or whose history does not record the pages each
  query returned (the public harness's list of query strings), is *excluded and counted*, never scored 0. An empty
  history (``[]``: answered without searching) is a real trajectory of zero queries.
* An item without gold evidence is excluded and counted; an unscored item (``correct`` ``None``) is left out of
  accuracy denominators and counted. A rate whose denominator is 0 is ``None``, next to the count explaining it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .correlates import Correlation, Summary, cosine_distance, summarize, system_correlation
from .schema import Citation, ItemScore
from .scoring import doc_key

#: Retrieval level: a gold document or a gold page.
Level = Literal["document", "page"]


@dataclass(frozen=True)
class SearchStep:
    """One entry of a ``search_history``.

    Attributes:
        query: the query text (``""`` when the entry has none).
        pages: the pages the search returned, best first; ``None`` when the entry does not record them.
    """

    query: str
    pages: tuple[Citation, ...] | None


@dataclass(frozen=True)
class Trajectory:
    """One system's searches on one item.

    Attributes:
        id: item id.
        searches: the searches in order; ``None`` when the line has no ``search_history``.
        correct: the item's binary correctness (``ItemScore.correct``; ``None``: unscored).
    """

    id: str
    searches: tuple[SearchStep, ...] | None
    correct: bool | None


def parse_search_history(value: Any) -> tuple[SearchStep, ...] | None:
    """The searches of a results line's ``search_history`` value (``record.get("search_history")``).

    An entry is a string (the public harness: the query only, so ``pages`` is ``None``) or a mapping with
    ``query`` and ``results`` (``madqa run`` and ``madqa human``: ``[{document, page}]``); an entry without a
    ``results`` list has ``pages = None``. A result without a usable document, or with a page that is not a
    positive integer, is skipped.

    Args:
        value: the field's value; ``None`` means the line has no history.

    Returns:
        The searches, or ``None`` for no history.

    Raises:
        ValueError: ``value`` is neither ``None`` nor a list, or an entry is neither a string nor a mapping.

    >>> parse_search_history(["a", {"query": "b", "results": [{"document": "x.pdf", "page": 2}]}])
    (SearchStep(query='a', pages=None), SearchStep(query='b', pages=(Citation(document='x.pdf', page=2),)))
    """
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"search_history must be a list, got {type(value).__name__}")
    steps: list[SearchStep] = []
    for entry in value:
        if isinstance(entry, str):
            steps.append(SearchStep(entry, None))
        elif isinstance(entry, Mapping):
            results = entry.get("results")
            pages = _pages(results) if isinstance(results, list) else None
            steps.append(SearchStep(str(entry.get("query") or ""), pages))
        else:
            raise ValueError(f"a search_history entry must be a string or an object, got {type(entry).__name__}")
    return tuple(steps)


def trajectories(records: Sequence[Mapping[str, Any]], items: Sequence[ItemScore]) -> list[Trajectory]:
    """One trajectory per scored item: the ``search_history`` of its results line (matched by ``id``).

    An item whose line is missing (or has no ``id``) has no history (``searches = None``).
    """
    lines = {str(r["id"]): r for r in records if r.get("id") is not None}
    return [
        Trajectory(it.id, parse_search_history(lines.get(it.id, {}).get("search_history")), it.correct) for it in items
    ]


def _pages(results: list[Any]) -> tuple[Citation, ...]:
    found = [(r.get("document") or r.get("file"), r.get("page")) for r in results if isinstance(r, Mapping)]
    return tuple(Citation(d, p) for d, p in found if isinstance(d, str) and d.strip() and type(p) is int and p > 0)


def _hits(step: SearchStep, evidence: Sequence[Citation], level: Level) -> bool:
    pages = step.pages or ()
    if level == "document":
        gold_docs = {doc_key(c.document) for c in evidence}
        return any(doc_key(p.document) in gold_docs for p in pages)
    gold_pages = {(doc_key(c.document), c.page) for c in evidence if c.page is not None}
    return any((doc_key(p.document), p.page) in gold_pages for p in pages)


@dataclass(frozen=True)
class Excluded:
    """Items a retrieval analysis could not use: no ``search_history``, no returned pages, or no gold evidence."""

    no_history: int = 0
    no_pages: int = 0
    no_gold: int = 0


WithGold = list[tuple[Trajectory, tuple[Citation, ...]]]


def usable_trajectories(
    trajectories: Sequence[Trajectory], evidence: Mapping[str, Sequence[Citation]]
) -> tuple[WithGold, Excluded]:
    """The ``(trajectory, gold evidence)`` pairs a retrieval analysis can use, and the counted exclusions."""
    items: WithGold = []
    no_history = no_pages = no_gold = 0
    for t in trajectories:
        gold = tuple(evidence.get(t.id, ()))
        if t.searches is None:
            no_history += 1
        elif any(s.pages is None for s in t.searches):
            no_pages += 1
        elif not gold:
            no_gold += 1
        else:
            items.append((t, gold))
    return items, Excluded(no_history, no_pages, no_gold)


@dataclass(frozen=True)
class IterationPoint:
    """Retrieval at search iteration ``i``.

    Attributes:
        iteration: ``i`` (1-based).
        n_queried: usable items with at least ``i`` queries.
        doc_hit: share of those whose ``i``-th query returned a gold document (``None`` when ``n_queried == 0``).
        page_hit: likewise for a gold page.
        doc_found: share of *all* usable items whose first ``i`` queries returned a gold document (cumulative;
            an item with fewer queries keeps what it found; ``None`` when there are no usable items).
        page_found: likewise for a gold page.
    """

    iteration: int
    n_queried: int
    doc_hit: float | None
    page_hit: float | None
    doc_found: float | None
    page_found: float | None


@dataclass(frozen=True)
class RetrievalCurve:
    """Retrieval by search iteration (paper H.5, Fig. 23).

    Attributes:
        n: usable items (the denominator of the cumulative rates), zero-query items included.
        excluded: the items left out, by reason.
        points: one point per iteration ``1..T``.
    """

    n: int
    excluded: Excluded
    points: tuple[IterationPoint, ...]


def first_hit(searches: Sequence[SearchStep], evidence: Sequence[Citation], level: Level) -> int | None:
    """The 1-based iteration of the first query that returned gold evidence at ``level``, ``None`` if none did.

    >>> ev = [Citation("a.pdf", 3)]
    >>> s = [SearchStep("x", (Citation("b", 1),)), SearchStep("y", (Citation("a", 1),)),
    ...      SearchStep("z", (Citation("a", 3),))]
    >>> first_hit(s, ev, "document"), first_hit(s, ev, "page"), first_hit(s[:1], ev, "page")
    (2, 3, None)
    """
    for i, step in enumerate(searches, start=1):
        if _hits(step, evidence, level):
            return i
    return None


def retrieval_by_iteration(
    trajectories: Sequence[Trajectory], evidence: Mapping[str, Sequence[Citation]], *, max_iteration: int | None = None
) -> RetrievalCurve:
    """Document and page retrieval rates at each search iteration, per query and cumulative.

    Args:
        trajectories: one system's items.
        evidence: gold evidence pages per item id.
        max_iteration: the last iteration ``T`` (default: the longest usable history; no points when it is 0).

    Returns:
        The curve; ``points[0].doc_found`` is the first-query document hit rate.
    """
    usable, excluded = usable_trajectories(trajectories, evidence)
    n = len(usable)
    longest = max((len(t.searches or ()) for t, _ in usable), default=0)
    top = longest if max_iteration is None else max_iteration
    firsts = [
        (first_hit(t.searches or (), gold, "document"), first_hit(t.searches or (), gold, "page"))
        for t, gold in usable
    ]
    points = []
    for i in range(1, top + 1):
        at = [(t, gold) for t, gold in usable if len(t.searches or ()) >= i]
        doc_hit = _share([_hits((t.searches or ())[i - 1], gold, "document") for t, gold in at])
        page_hit = _share([_hits((t.searches or ())[i - 1], gold, "page") for t, gold in at])
        doc_found = _share([d is not None and d <= i for d, _ in firsts])
        page_found = _share([p is not None and p <= i for _, p in firsts])
        points.append(IterationPoint(i, len(at), doc_hit, page_hit, doc_found, page_found))
    return RetrievalCurve(n, excluded, tuple(points))


@dataclass(frozen=True)
class Recovery:
    """What happened after a first query that missed the gold evidence (paper H.5, Fig. 24).

    Attributes:
        level: the evidence level of "missed" and "found" (``document`` in the paper).
        n_usable: usable items with at least one query.
        n_zero_queries: usable items with no query (no first query to fail; not in ``n_usable``).
        n_failed_first: items whose first query missed.
        n_recovered: those whose later queries found the evidence.
        recovery_rate: ``n_recovered / n_failed_first`` (``None`` when nothing failed).
        n_correct: failed-first items answered correctly.
        n_unscored: failed-first items without a score (left out of ``correct_rate``).
        correct_rate: ``n_correct / (n_failed_first - n_unscored)``.
        excluded: the items left out, by reason.
    """

    level: Level
    n_usable: int
    n_zero_queries: int
    n_failed_first: int
    n_recovered: int
    recovery_rate: float | None
    n_correct: int
    n_unscored: int
    correct_rate: float | None
    excluded: Excluded


def recovery_after_failure(
    trajectories: Sequence[Trajectory], evidence: Mapping[str, Sequence[Citation]], *, level: Level = "document"
) -> Recovery:
    """Among items whose first query missed the gold evidence, the share found later and the share correct.

    Args:
        trajectories: one system's items.
        evidence: gold evidence pages per item id.
        level: ``"document"`` (the paper's) or ``"page"``.

    Returns:
        The counts and rates.
    """
    usable, excluded = usable_trajectories(trajectories, evidence)
    queried = [(t, gold) for t, gold in usable if t.searches]
    failed = [(t, hit) for t, gold in queried if (hit := first_hit(t.searches or (), gold, level)) != 1]
    recovered = sum(hit is not None for _, hit in failed)
    scored = [t.correct for t, _ in failed if t.correct is not None]
    return Recovery(
        level,
        len(queried),
        len(usable) - len(queried),
        len(failed),
        recovered,
        recovered / len(failed) if failed else None,
        sum(scored),
        len(failed) - len(scored),
        _share(scored),
        excluded,
    )


@dataclass(frozen=True)
class QueryCountAccuracy:
    """Accuracy on items answered with one query against items with several (paper H.6).

    Attributes:
        n_single: scored items with exactly one query.
        single: their accuracy (``None`` when there are none).
        n_multi: scored items with two or more queries.
        multi: their accuracy.
        n_zero: scored items with no query (in neither group).
        zero: their accuracy.
        gap: ``single - multi`` (``None`` when either is).
        n_no_history: excluded, no ``search_history``.
        n_unscored: excluded, unscored.
    """

    n_single: int
    single: float | None
    n_multi: int
    multi: float | None
    n_zero: int
    zero: float | None
    gap: float | None
    n_no_history: int
    n_unscored: int


def single_vs_multi_query(trajectories: Sequence[Trajectory]) -> QueryCountAccuracy:
    """Accuracy by number of queries: one, several, none (pages returned are not needed).

    >>> t = [Trajectory("a", (SearchStep("q", None),), True), Trajectory("b", (SearchStep("q", None),) * 2, False),
    ...      Trajectory("c", None, True)]
    >>> r = single_vs_multi_query(t)
    >>> r.single, r.multi, r.gap, r.n_no_history
    (1.0, 0.0, 1.0, 1)
    """
    groups: dict[str, list[bool]] = {"zero": [], "single": [], "multi": []}
    no_history = unscored = 0
    for t in trajectories:
        if t.searches is None:
            no_history += 1
        elif t.correct is None:
            unscored += 1
        else:
            groups["zero" if not t.searches else "single" if len(t.searches) == 1 else "multi"].append(t.correct)
    single, multi = _share(groups["single"]), _share(groups["multi"])
    gap = single - multi if single is not None and multi is not None else None
    return QueryCountAccuracy(
        len(groups["single"]),
        single,
        len(groups["multi"]),
        multi,
        len(groups["zero"]),
        _share(groups["zero"]),
        gap,
        no_history,
        unscored,
    )


def _share(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def trajectory_drift(vectors: Sequence[npt.ArrayLike] | npt.NDArray[np.floating[Any]]) -> float | None:
    """Mean drift per step of one trajectory: ``(1 / (k - 1)) * sum_i (1 - cos(q_i, q_{i+1}))`` (paper H.6).

    Args:
        vectors: the embeddings of the trajectory's ``k`` queries, in order.

    Returns:
        The mean drift, or ``None`` when ``k < 2`` (no consecutive pair).

    Raises:
        ValueError: see :func:`cosine_distance`.

    >>> trajectory_drift([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]), trajectory_drift([[1.0, 0.0]])
    (0.5, None)
    """
    k = len(vectors)
    if k < 2:
        return None
    return sum(cosine_distance(vectors[i], vectors[i + 1]) for i in range(k - 1)) / (k - 1)


def drift_by_system(drifts: Mapping[str, Sequence[float | None]]) -> dict[str, Summary]:
    """Each system's drift distribution (median, mean, quartiles, IQR; H.6, Fig. 25).

    Args:
        drifts: per system, the :func:`trajectory_drift` of each of its items (``None``: fewer than two queries,
            or no history; counted in ``n_excluded``).

    Returns:
        The summaries, in the mapping's order.
    """
    return {name: summarize(values) for name, values in drifts.items()}


def drift_accuracy_correlation(
    summaries: Mapping[str, Summary],
    accuracy: Mapping[str, float | None],
    *,
    statistic: Literal["median", "mean"] = "median",
) -> Correlation:
    """Correlation across systems of a drift statistic with accuracy (H.6, Fig. 26).

    Args:
        summaries: from :func:`drift_by_system`.
        accuracy: each system's accuracy.
        statistic: the per-system drift value (the paper orders systems by their median).

    Returns:
        Pearson and Spearman over the systems that have both values.
    """
    return system_correlation({n: getattr(s, statistic) for n, s in summaries.items()}, accuracy)
