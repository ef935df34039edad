"""What every retriever is: ranks the pages of one corpus for a query; errors are :class:`RetrievalError`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from madqa.agents.corpus.search.base import PageHit

#: Candidates a ``hybrid:`` retriever takes from its first stage (HEAVEN re-ranks the DSE top candidates).
DEFAULT_CANDIDATES = 50
#: Constant of reciprocal-rank fusion (Cormack et al. 2009: 1 / (k + rank)).
RRF_K = 60


def manifest_seconds(manifest: Mapping[str, Any]) -> float | None:
    """A cache manifest's ``build_seconds`` as a number of seconds, ``None`` when missing or not a number >= 0.

    >>> manifest_seconds({"build_seconds": 2}), manifest_seconds({}), manifest_seconds({"build_seconds": -1.0})
    (2.0, None, None)
    """
    seconds = manifest.get("build_seconds")
    ok = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0
    return float(seconds) if ok else None


def build_seconds(*parts: object) -> float | None:
    """The seconds building ``parts`` took, summed (each retriever's ``build_seconds``: read from its cache's
    manifest, so the first build's time, paid once and reused by later runs); ``None`` when any part's is not known
    (a cache written before it was recorded, a retriever that does not say). A part given twice counts once.
    A run's lines carry it as ``costs.retriever_build_s``.

    >>> class R:
    ...     def __init__(self, s): self.build_seconds = s
    >>> a = R(1.5)
    >>> build_seconds(a, R(0.25), a), build_seconds(a, R(None)), build_seconds(a, object())
    (1.75, None, None)
    """
    seen = {id(p): p for p in parts}.values()
    values = [getattr(p, "build_seconds", None) for p in seen]
    return None if any(v is None for v in values) else round(sum(values), 3)


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
