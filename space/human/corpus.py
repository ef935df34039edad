"""What the human app shows: the agents' search index (same engine, same query syntax, same k), page images and
page counts.

Searching goes through :meth:`madqa.agents.corpus.search.SearchIndex.search`, so a person gets exactly the pages an
agent
would for the same query; a query the engine refuses (:class:`madqa.agents.corpus.search.QuerySyntaxError` and its
too-broad subclass: the work limits) comes back as a message instead of an exception, and so does a search
abandoned at the safety net (:class:`madqa.agents.corpus.search.SearchTimeoutError`: the machine's fault, so the person
is
asked to try again, and the search is no step of their effort).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from madqa.agents.corpus.search import QuerySyntaxError, SearchIndex, SearchTimeoutError, no_results_message

if TYPE_CHECKING:
    from PIL import Image

    from madqa.agents.corpus.render import PageRenderer

logger = logging.getLogger(__name__)

#: Results per search: the BM25 agent's default ``top_k`` (``madqa.agents.harness.config.DEFAULT_TOP_K``).
DEFAULT_K = 5
#: Resolution of result thumbnails and of the document viewer (dots per inch). 40 dpi draws a letter page at
#: 340×440, above the size the results gallery shows it, at under half the pixels of 60 dpi (``madqa bench human``).
THUMB_DPI, VIEW_DPI = 40, 110
#: Characters of a result caption's snippet, and of each page's text kept for finding it (a page's first 2,000
#: characters: 37 MB for the paper's 18,619 pages at most).
SNIPPET_CHARS, SNIPPET_SOURCE_CHARS = 60, 2000
#: A word the index can search for (a query without any letter or digit has none).
_WORD = re.compile(r"[^\W_]+")


def no_words_message(query: str) -> str:
    """What a query without letters or digits (``*``, ``?``, ``"-"``) is told.

    >>> no_words_message("*")  # doctest: +ELLIPSIS
    'the query "*" has no searchable words: type words that appear on the page you are looking for ...'
    """
    return (
        f'the query "{query}" has no searchable words: type words that appear on the page you are looking '
        "for (a wildcard needs letters before it, e.g. invoic*)"
    )


@dataclass(frozen=True)
class SearchOutcome:
    """The pages a query returned (best first) or why it returned none; ``refused``: nothing was searched (no
    words, a syntax error, too broad, abandoned at the safety net), so it is no step of the person's effort."""

    pages: tuple[tuple[str, int], ...]
    error: str | None = None
    refused: bool = False


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
        texts: Mapping[tuple[str, int], str] | None = None,
    ) -> None:
        """Wrap an opened index (``None`` in oracle mode) and two renderers (viewer and thumbnail resolution);
        ``texts`` (document, page) → the page's text, for the snippets of result captions (at most
        :data:`SNIPPET_SOURCE_CHARS` of each page are kept)."""
        if k < 1:
            raise ValueError(f"k must be positive, got {k}")
        self.index, self.viewer, self.thumbs, self.k = index, viewer, thumbs, k
        self.page_counts = dict(page_counts)
        self.texts = {(str(d), int(p)): str(t)[:SNIPPET_SOURCE_CHARS] for (d, p), t in (texts or {}).items()}

    @classmethod
    def open(
        cls,
        dataset: str | os.PathLike[str] | None,
        *,
        oracle: bool = False,
        backend: str | None = None,
        k: int = DEFAULT_K,
    ) -> HumanCorpus:
        """Open the dataset's index (built on first use, then reused) and renderers, as ``madqa run`` does."""
        from madqa.agents.corpus.render import PageRenderer
        from madqa.agents.corpus.search import DEFAULT_BACKEND, open_index
        from madqa.loading_script.load import load_pages

        pages = load_pages(dataset)
        index = None if oracle else open_index(pages, backend=backend or DEFAULT_BACKEND)  # type: ignore[arg-type]
        viewer = PageRenderer(dataset, pages=pages, dpi=VIEW_DPI)
        thumbs = PageRenderer(dataset, pages=pages, dpi=THUMB_DPI, cache_mb=64)
        texts = {(str(r["document"]), int(r["page"])): str(r.get("text") or "") for r in pages}
        return cls(index, viewer, thumbs, page_counts_of(pages), k=k, texts=texts)

    def search(self, query: str) -> SearchOutcome:
        """The top-k pages of ``query``; a refused or empty query gives the engine's message."""
        if self.index is None:
            return SearchOutcome((), "search is off in oracle mode", refused=True)
        query = (query or "").strip()
        if not query:
            return SearchOutcome((), "type some words to search for", refused=True)
        if not _WORD.search(query):
            return SearchOutcome((), no_words_message(query), refused=True)
        try:
            hits = self.index.search(query, self.k)
        except QuerySyntaxError as exc:
            return SearchOutcome((), str(exc), refused=True)
        except SearchTimeoutError:
            logger.warning("search %r abandoned at the safety net", query)
            return SearchOutcome(
                (),
                "the search server is overloaded and this search was abandoned; please search again in a moment",
                refused=True,
            )
        if not hits:
            return SearchOutcome((), no_results_message(query))
        return SearchOutcome(tuple((h.document, int(h.page)) for h in hits))

    def snippet(self, document: str, page: int, query: str = "") -> str:
        """A short piece of the page's text: around the first word of ``query`` found on it, else its start."""
        text = " ".join(self.texts.get((document, int(page)), "").split())
        if not text:
            return ""
        lowered = text.lower()
        for word in _WORD.findall(query or ""):
            if word.upper() in ("AND", "OR", "NOT") or len(word) < 3:
                continue
            at = lowered.find(word.lower())
            if at >= 0:
                start = max(at - SNIPPET_CHARS // 3, 0)
                piece = text[start : start + SNIPPET_CHARS]
                return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(text) else "")
        return text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else "")

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
