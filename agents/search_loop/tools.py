"""The BM25 agent's two tools: ``search_documents(query)`` and ``final_answer(answer, citations)``.

:class:`SearchDocumentsTool` searches the page index and shows the top-k pages to the model: as page *images* for
vision models (``observe="image"``) or as page *texts* for text-only models (``observe="text"``). smolagents does
not pass images returned by a tool to the model, so the tool keeps the rendered pages aside and
:meth:`SearchDocumentsTool.attach_images`, registered as an ``ActionStep`` callback, moves them into the step's
``observations_images``; the model sees them in its next input, right before the observation text that lists them
in order. Images of earlier searches are dropped from memory (only the last ``image_steps`` searches keep theirs).
Every call is recorded in :attr:`SearchDocumentsTool.history`; a query the engine cannot parse, a search without
results or a page that cannot be rendered becomes an observation the model can act on, never an exception. So does
a query the index's work limits refuse (:class:`~madqa.agents.corpus.search.SearchLimits`): one that matches
everything,
expands to too many words (``*``, ``[a TO z]``, ``b*``) or would read too many page entries; the observation, the
same on every machine, tells the model to narrow the query. The one exception let through is the search's
wall-clock safety net (:class:`~madqa.agents.corpus.search.SearchTimeoutError`): its hit depends on the machine, so the
model must not see it; it is recorded in the search's history and ends the question as an infrastructure error
(``error_kind`` ``search``, rerun by ``--retry-errors``; :class:`~madqa.agents.search_loop.agent.SearchAgent` lets it
out
of smolagents' step, which would otherwise show it to the model).

The ``final_answer`` tool is shared with the code agent (:mod:`madqa.agents.harness.answer`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from smolagents import Tool
from smolagents.memory import ActionStep

from madqa.agents.corpus.search import (
    SYNTAX_HELP,
    PageHit,
    QuerySyntaxError,
    QueryTooBroadError,
    SearchIndex,
    SearchTimeoutError,
    no_results_message,
)

if TYPE_CHECKING:
    from PIL import Image
    from smolagents import MultiStepAgent

    from madqa.agents.corpus.render import PageRenderer

logger = logging.getLogger(__name__)

Observe = Literal["image", "text"]
OBSERVE_MODES: tuple[Observe, ...] = ("image", "text")
#: Page text shown per result in ``text`` mode unless the caller sets another cap (characters).
DEFAULT_PAGE_CHARS = 6000


@dataclass
class SearchRecord:
    """One call of ``search_documents`` as recorded in a results line's ``search_history``.

    Attributes:
        query: the query as the model wrote it.
        results: the pages shown, best first (``{"document", "page"}``).
        count: number of pages returned.
        error: why the search returned nothing usable (unparsable query, no match), else ``None``.
    """

    query: str
    results: list[dict[str, Any]] = field(default_factory=list)
    count: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form written to results files."""
        return {"query": self.query, "results": self.results, "count": self.count, "error": self.error}


class SearchDocumentsTool(Tool):
    """``search_documents(query)``: the top-k pages of a BM25 page index, as images or texts.

    Args:
        index: the page index (:func:`madqa.agents.corpus.search.open_index`).
        renderer: page images and texts (:class:`madqa.agents.corpus.render.PageRenderer`).
        top_k: pages per search.
        observe: ``"image"`` (vision models) or ``"text"`` (text-only models).
        page_chars: longest page text shown in ``text`` mode (longer texts are cut, with a note).
        image_steps: how many of the latest searches keep their page images in the model's input.
    """

    name = "search_documents"
    description = (
        "Search the document collection and show the best-matching pages (each result is one page of a PDF, "
        "with its file name and page number). Query syntax: " + SYNTAX_HELP + ". "
        "Examples: 'engine specifications', '\"Bell 407\" AND accessories', 'invoic*', 'incorporation NOT date'."
    )
    inputs = {"query": {"type": "string", "description": "keywords or a boolean query (not a whole sentence)"}}
    output_type = "string"

    def __init__(
        self,
        index: SearchIndex,
        renderer: PageRenderer,
        *,
        top_k: int = 5,
        observe: Observe = "image",
        page_chars: int = DEFAULT_PAGE_CHARS,
        image_steps: int = 1,
    ) -> None:
        """Configure the tool; nothing is searched or rendered yet."""
        super().__init__()
        if top_k < 1:
            raise ValueError(f"top_k must be positive, got {top_k}")
        if observe not in OBSERVE_MODES:
            raise ValueError(f"observe must be one of {', '.join(OBSERVE_MODES)}, got {observe!r}")
        self.index, self.renderer = index, renderer
        self.top_k, self.observe, self.page_chars, self.image_steps = top_k, observe, page_chars, max(1, image_steps)
        self.history: list[SearchRecord] = []
        self.pending_images: list[Image.Image] = []

    def forward(self, query: str) -> str:
        """Search, record the search, and describe the result pages (images wait in :attr:`pending_images`)."""
        record = SearchRecord(query=str(query))
        self.history.append(record)
        try:
            hits = self.index.search(str(query), k=self.top_k)
        except QueryTooBroadError as exc:
            logger.info("search %r refused by the work limits: %s", query, type(exc).__name__)
            record.error = str(exc)
            return record.error
        except SearchTimeoutError as exc:  # infrastructure: recorded, then raised past the model (see the docstring)
            logger.warning("search %r abandoned at the safety net: %s", query, exc)
            record.error = f"{type(exc).__name__}: {exc}"
            raise
        except QuerySyntaxError as exc:
            record.error = str(exc)
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - an engine failure is shown to the model, never raised into the loop
            logger.warning("search %r failed: %s: %s", query, type(exc).__name__, exc)
            record.error = f"The search failed ({type(exc).__name__}: {exc}). Try a simpler query."
            return record.error
        if not hits:
            record.error = no_results_message(str(query))
            return record.error
        record.results = [{"document": h.document, "page": h.page} for h in hits]
        record.count = len(hits)
        if self.observe == "image":
            return self._show_images(query, hits)
        return self._show_texts(query, hits)

    def _show_images(self, query: str, hits: list[PageHit]) -> str:
        lines = [f"Search {query!r} found {len(hits)} page(s); their images are attached in this order:"]
        for i, hit in enumerate(hits, 1):
            try:
                self.pending_images.append(self.renderer.image(hit.document, hit.page))
                lines.append(f"{i}. file {hit.document}, page {hit.page}")
            except (LookupError, OSError, ValueError) as exc:
                logger.warning("cannot render %s page %d: %s", hit.document, hit.page, exc)
                lines.append(f"{i}. file {hit.document}, page {hit.page} (image unavailable: {exc})")
        return "\n".join(lines)

    def _show_texts(self, query: str, hits: list[PageHit]) -> str:
        parts = [f"Search {query!r} found {len(hits)} page(s):"]
        for i, hit in enumerate(hits, 1):
            try:
                text = self.renderer.text(hit.document, hit.page).strip()
            except (LookupError, OSError, ValueError) as exc:
                text = f"(text unavailable: {exc})"
            if len(text) > self.page_chars:
                text = text[: self.page_chars] + f" […] (page text cut at {self.page_chars} characters)"
            parts.append(f"--- {i}. file {hit.document}, page {hit.page} ---\n{text or '(no text on this page)'}")
        return "\n".join(parts)

    def attach_images(self, step: ActionStep, agent: MultiStepAgent) -> None:
        """``ActionStep`` callback: give this step the pages rendered during it and prune older page images."""
        step.observations_images = list(self.pending_images) or None
        self.pending_images.clear()
        if not step.observations_images:
            return
        with_images = [s for s in agent.memory.steps if isinstance(s, ActionStep) and s.observations_images]
        for old in with_images[: max(0, len(with_images) - (self.image_steps - 1))]:
            old.observations_images = None


class SemanticSearchTool(SearchDocumentsTool):
    """``search_documents(query)`` over a :mod:`madqa.agents.corpus.retrieval` retriever (``madqa run --retriever
    SPEC``):
    the same tool, pages and records, but the query is free text ranked by the retriever, not keyword syntax."""

    description = (
        "Search the document collection and show the best-matching pages (each result is one page of a PDF, "
        "with its file name and page number). The query is ranked by meaning: write a short description of what "
        "the page you need says (a phrase or a question), not a boolean query."
    )
    inputs = {"query": {"type": "string", "description": "what the page you need says, in a few words"}}
