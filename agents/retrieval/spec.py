"""``make_retriever(spec, pages)``: one spec string → one :class:`~.base.Retriever` over a corpus.

Specs: ``bm25``; ``dense:EMBEDDER`` (an :mod:`madqa.agents.embeddings` spec: ``dense:wordllama``,
``dense:wordllama:128``, ``dense:st:MODEL``); ``rrf:A+B[+C…]``; ``hybrid:A>B`` (A's top candidates re-ranked by
B, which must be a vector retriever). Late-interaction and page-image retrievers (``colbert:``, ``colpali:``,
``dse:``) are not part of this version: they are refused with that message, never approximated.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from madqa.agents.search.base import PageRecord

from .base import RetrievalError, Retriever

SPEC_HELP = "bm25, dense:EMBEDDER (dense:wordllama), rrf:A+B, hybrid:A>B"
#: Spec prefixes of the paper's visual and late-interaction retrievers, not built yet (issue 25).
NOT_BUILT = ("colbert", "colpali", "dse")


class _Corpus:
    """The pages of one corpus and what is built on them once (the BM25 index, embedders by spec)."""

    def __init__(self, pages: Iterable[Mapping[str, Any]], index_dir: Any, cache_dir: Any, progress: bool) -> None:
        from madqa.agents.search.index import prepare_pages

        self.rows = [dict(p) for p in pages]
        self.records: list[PageRecord] = prepare_pages(self.rows)
        self.index_dir, self.cache_dir, self.progress = index_dir, cache_dir, progress
        self._bm25: Retriever | None = None
        self._dense: dict[str, Retriever] = {}

    def bm25(self) -> Retriever:
        if self._bm25 is None:
            from madqa.agents.search.index import open_index

            from .rankers import BM25Retriever

            self._bm25 = BM25Retriever(open_index(self.rows, self.index_dir, progress=self.progress))
        return self._bm25

    def dense(self, embedder_spec: str) -> Retriever:
        if embedder_spec not in self._dense:
            from madqa.agents.embeddings import EmbedderSpecError, make_embedder

            from .rankers import DenseRetriever

            try:
                embedder = make_embedder(embedder_spec)
            except EmbedderSpecError as exc:
                raise RetrievalError(f"dense:{embedder_spec}: {exc}") from None
            self._dense[embedder_spec] = DenseRetriever(embedder, self.records, self.cache_dir,
                                                        progress=self.progress)  # fmt: skip
        return self._dense[embedder_spec]


def _build(spec: str, corpus: _Corpus) -> Retriever:
    from .fusion import HybridRetriever, RRFRetriever

    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind == "hybrid":
        first, sep, second = rest.partition(">")
        if not sep or not first or not second:
            raise RetrievalError(f"{spec!r}: write hybrid:FIRST>SECOND, e.g. hybrid:bm25>dense:wordllama")
        return HybridRetriever(_build(first, corpus), _build(second, corpus))
    if kind == "rrf":
        parts = [p for p in rest.split("+")]
        if len(parts) < 2 or not all(p.strip() for p in parts):
            raise RetrievalError(f"{spec!r}: write rrf:A+B, e.g. rrf:bm25+dense:wordllama")
        return RRFRetriever([_build(p, corpus) for p in parts])
    if kind == "bm25" and not rest:
        return corpus.bm25()
    if kind == "dense":
        if not rest:
            raise RetrievalError(f"{spec!r}: name the embedder, e.g. dense:wordllama")
        return corpus.dense(rest)
    if kind in NOT_BUILT:
        raise RetrievalError(f"{spec!r}: {kind} retrievers are not part of this version of madqa yet; "
                             f"available: {SPEC_HELP}")  # fmt: skip
    raise RetrievalError(f"unknown retriever {spec!r}; one of {SPEC_HELP}")


def make_retrievers(specs: Iterable[str], pages: Iterable[Mapping[str, Any]], *,
                    index_dir: str | os.PathLike[str] | None = None, cache_dir: str | os.PathLike[str] | None = None,
                    progress: bool = False) -> list[Retriever]:
    """One retriever per spec over the same corpus (the BM25 index and each embedder's vectors built once).

    Raises:
        RetrievalError: a spec is malformed or names what is not available (the message names the spec).
    """
    corpus = _Corpus(pages, index_dir, cache_dir, progress)
    return [_build(spec, corpus) for spec in specs]


def make_retriever(spec: str, pages: Iterable[Mapping[str, Any]], **kwargs: Any) -> Retriever:
    """The retriever of one spec over ``pages`` (see :func:`make_retrievers`)."""
    return make_retrievers([spec], pages, **kwargs)[0]
