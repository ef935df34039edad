"""Retrievers made of retrievers: ``rrf:A+B`` (reciprocal-rank fusion) and ``hybrid:A>B`` (two-stage re-ranking)."""

from __future__ import annotations

from collections.abc import Sequence

from madqa.agents.corpus.retrieval.base import (
    DEFAULT_CANDIDATES,
    RRF_K,
    Reranker,
    RetrievalError,
    Retriever,
    build_seconds,
)
from madqa.agents.corpus.search.base import PageHit


class RRFRetriever:
    """Reciprocal-rank fusion (Cormack, Clarke & Büttcher 2009): a page's score is the sum over the parts of
    ``1 / (RRF_K + rank)`` (rank 1-based) in each part's top ``depth``; ties by the first part's order."""

    def __init__(self, parts: Sequence[Retriever], depth: int = 100, k_constant: int = RRF_K) -> None:
        if len(parts) < 2:
            raise RetrievalError("rrf: needs two or more retrievers, e.g. rrf:bm25+dense:wordllama")
        self.parts, self.depth, self.k_constant = list(parts), depth, k_constant
        self.name = "rrf:" + "+".join(p.name for p in self.parts)

    @property
    def build_seconds(self) -> float | None:
        """The parts' build seconds, summed."""
        return build_seconds(*self.parts)

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        scores: dict[tuple[str, int], float] = {}
        first_seen: dict[tuple[str, int], int] = {}
        for part in self.parts:
            for rank, hit in enumerate(part.search(query, k=max(k, self.depth)), start=1):
                key = (hit.document, hit.page)
                scores[key] = scores.get(key, 0.0) + 1.0 / (self.k_constant + rank)
                first_seen.setdefault(key, len(first_seen))
        best = sorted(scores, key=lambda key: (-scores[key], first_seen[key]))[:k]
        return [PageHit(doc, page, scores[(doc, page)]) for doc, page in best]


class HybridRetriever:
    """Candidates from ``first`` (its top ``candidates``) re-ranked by ``second`` (HEAVEN's two stages, G.3).

    With ``beta`` > 0 a candidate's final score is ``beta * first + (1 - beta) * second`` (HEAVEN's stage-2
    weighting of the stage-1 score, raw scores as HEAVEN combines them); with ``beta`` 0 (the default) the second
    stage's order alone. ``query_filter`` > 0 is HEAVEN's query filter in the second stage (:mod:`.heaven`);
    ``options`` is the spec's option prefix, kept in the name (``vs_pages=15:``).
    """

    def __init__(
        self,
        first: Retriever,
        second: Retriever,
        candidates: int = DEFAULT_CANDIDATES,
        beta: float = 0.0,
        query_filter: float = 0.0,
        options: str = "",
    ) -> None:
        if not isinstance(second, Reranker):
            raise RetrievalError(
                f"hybrid: the second stage {second.name!r} cannot re-rank given pages; use a "
                "vector retriever there, e.g. hybrid:bm25>dense:wordllama"
            )
        if candidates < 1 or not 0.0 <= beta <= 1.0 or not 0.0 <= query_filter <= 1.0:
            raise RetrievalError(
                f"hybrid: candidates must be positive, beta and query_filter in [0, 1] (got "
                f"{candidates}, {beta}, {query_filter})"
            )
        if query_filter and not hasattr(second, "rerank_filtered"):
            raise RetrievalError(f"hybrid: query_filter needs a late-interaction second stage, not {second.name!r}")
        self.first, self.second, self.candidates, self.beta = first, second, candidates, beta
        self.query_filter = query_filter
        self.name = f"hybrid:{options}{first.name}>{second.name}"

    @property
    def build_seconds(self) -> float | None:
        """Both stages' build seconds, summed."""
        return build_seconds(self.first, self.second)

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        pool = self.first.search(query, k=max(k, self.candidates))
        pages = [(h.document, h.page) for h in pool]
        if self.query_filter:  # HEAVEN's query filter: key tokens first (agents/corpus/retrieval/heaven.py)
            reranked = self.second.rerank_filtered(query, pages, self.query_filter)  # type: ignore[attr-defined]
        else:
            reranked = self.second.rerank(query, pages)  # type: ignore[attr-defined]
        if not self.beta:
            return list(reranked[:k])
        first = {(h.document, h.page): (i, h.score) for i, h in enumerate(pool)}
        scored = [
            (self.beta * first[(h.document, h.page)][1] + (1 - self.beta) * h.score, first[(h.document, h.page)][0], h)
            for h in reranked
        ]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [PageHit(h.document, h.page, s) for s, _, h in scored[:k]]
