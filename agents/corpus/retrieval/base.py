"""What every retriever is: ranks the pages of one corpus for a query; errors are :class:`RetrievalError`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from madqa.agents.corpus.search.base import PageHit

#: Candidates a ``hybrid:`` retriever takes from its first stage (HEAVEN re-ranks the DSE top candidates).
DEFAULT_CANDIDATES = 50
#: Constant of reciprocal-rank fusion (Cormack et al. 2009: 1 / (k + rank)).
RRF_K = 60


class RetrievalError(ValueError):
    """A retriever spec or its inputs cannot be used; the message names the spec and what to do."""


@runtime_checkable
class Retriever(Protocol):
    """Ranks pages of one corpus for a query.

    Attributes:
        name: the canonical spec that rebuilds it (``bm25``, ``dense:wordllama:256``, ``rrf:bm25+dense:…``).
    """

    name: str

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        """The ``k`` best pages for ``query``, best first (fewer when fewer match; none for an empty query)."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """A retriever that can also score given pages for a query (the second stage of ``hybrid:``)."""

    name: str

    def rerank(self, query: str, pages: Sequence[tuple[str, int]]) -> list[PageHit]:
        """``pages`` ((document, page) pairs) scored for ``query``, best first; unknown pages are dropped."""
        ...
