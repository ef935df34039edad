"""What the human app shows: the agents' search index (same engine, same query syntax, same k), page images and
page counts.

Searching goes through :meth:`madqa.agents.search.SearchIndex.search`, so a person gets exactly the pages an agent
would for the same query; a query the engine refuses (:class:`madqa.agents.search.QuerySyntaxError` and its
too-broad / time-limit subclasses) comes back as a message instead of an exception.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from madqa.agents.search import QuerySyntaxError, SearchIndex, no_results_message

if TYPE_CHECKING:
    from PIL import Image

    from madqa.agents.render import PageRenderer

logger = logging.getLogger(__name__)

#: Results per search: the BM25 agent's default ``top_k`` (``madqa.agents.config.DEFAULT_TOP_K``).
DEFAULT_K = 5
#: Resolution of result thumbnails and of the document viewer (dots per inch). 40 dpi draws a letter page at
#: 340×440, above the size the results gallery shows it, at under half the pixels of 60 dpi (``madqa bench human``).
THUMB_DPI, VIEW_DPI = 40, 110


@dataclass(frozen=True)
class SearchOutcome:
    """The pages a query returned (best first) or why it returned none."""

    pages: tuple[tuple[str, int], ...]
    error: str | None = None


class HumanCorpus:
    """Search, page counts and images over one dataset's pages (thread-safe: the renderer serialises itself)."""

    def __init__(
        self,
        index: SearchIndex | None,
        viewer: PageRenderer,
        thumbs: PageRenderer,
        page_counts: Mapping[str, int],
        *,
        k: int = DEFAULT_K,
    ) -> None:
        """Wrap an opened index (``None`` in oracle mode) and two renderers (viewer and thumbnail resolution)."""
        if k < 1:
            raise ValueError(f"k must be positive, got {k}")
        self.index, self.viewer, self.thumbs, self.k = index, viewer, thumbs, k
        self.page_counts = dict(page_counts)

    @classmethod
    def open(
        cls, dataset: str | os.PathLike[str] | None, *, oracle: bool = False, backend: str | None = None,
        k: int = DEFAULT_K,
    ) -> HumanCorpus:  # fmt: skip
        """Open the dataset's index (built on first use, then reused) and renderers, as ``madqa run`` does."""
        from madqa.agents.render import PageRenderer
        from madqa.agents.search import DEFAULT_BACKEND, open_index
        from madqa.loading_script.load import load_pages

        pages = load_pages(dataset)
        index = None if oracle else open_index(pages, backend=backend or DEFAULT_BACKEND)  # type: ignore[arg-type]
        viewer = PageRenderer(dataset, pages=pages, dpi=VIEW_DPI)
        thumbs = PageRenderer(dataset, pages=pages, dpi=THUMB_DPI, cache_mb=64)
        return cls(index, viewer, thumbs, page_counts_of(pages), k=k)

    def search(self, query: str) -> SearchOutcome:
        """The top-k pages of ``query``; a refused or empty query gives the engine's message."""
        if self.index is None:
            return SearchOutcome((), "search is off in oracle mode")
        query = (query or "").strip()
        if not query:
            return SearchOutcome((), "type some words to search for")
        try:
            hits = self.index.search(query, self.k)
        except QuerySyntaxError as exc:
            return SearchOutcome((), str(exc))
        if not hits:
            return SearchOutcome((), no_results_message(query))
        return SearchOutcome(tuple((h.document, int(h.page)) for h in hits))

    def pages(self, document: str) -> int:
        """Number of pages of ``document`` (0 for a document the corpus does not have)."""
        return self.page_counts.get(document, 0)

    def clamp(self, document: str, page: int) -> int:
        """``page`` moved into ``1..pages(document)``."""
        return max(1, min(int(page), max(self.pages(document), 1)))

    def image(self, document: str, page: int) -> Image.Image:
        """The page at viewer resolution."""
        return self.viewer.image(document, page)

    def thumbnail(self, document: str, page: int) -> Image.Image:
        """The page at thumbnail resolution (search results)."""
        return self.thumbs.image(document, page)


def page_counts_of(pages: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Pages per document from the page corpus rows (its highest page number).

    >>> page_counts_of([{"document": "a.pdf", "page": 1}, {"document": "a.pdf", "page": 3}])
    {'a.pdf': 3}
    """
    counts: dict[str, int] = {}
    for row in pages:
        doc = str(row["document"])
        counts[doc] = max(counts.get(doc, 0), int(row["page"]))
    return counts
