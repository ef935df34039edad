"""The search agent's options (``madqa run --agent bm25``; paper G.1), light: the command line and the Space read
them without loading the agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from madqa.agents.corpus.search import DEFAULT_BACKEND, DEFAULT_SEARCH_TIMEOUT, MAX_EXPANSION_TERMS, MAX_POSTINGS
from madqa.agents.harness.config import DEFAULT_TOP_K
from madqa.agents.harness.options import AgentOptions, RunError, option
from madqa.agents.search_loop.options import observe_option, page_chars_option


@dataclass(frozen=True)
class SearchOptions(AgentOptions):
    """The BM25 search agent's settings (the paper's defaults)."""

    agent: ClassVar[str] = "bm25"
    summary: ClassVar[str] = "search agent (paper G.1)"

    top_k: int = option(DEFAULT_TOP_K, metavar="K", help="pages per search")
    observe: Literal["image", "text"] | None = observe_option("show result pages as images or texts")
    oracle: bool = option(False, help="show the gold evidence pages instead of searching (not on test)")
    search_backend: str = option(DEFAULT_BACKEND, choices=("whoosh", "tantivy"), help="search engine (the paper's)")
    page_chars: int | None = page_chars_option("page text shown per result in text mode")
    image_steps: int = option(1, metavar="N", help="searches whose page images stay in the model input")
    min_searches: int | None = option(
        None, metavar="N", help="searches before answering is allowed", default_text="0; 1 for the local model"
    )
    search_timeout: float | None = option(
        DEFAULT_SEARCH_TIMEOUT,
        metavar="S",
        help="safety net of one search in wall-clock seconds: a search past it ends the question as an "
        "infrastructure error (kind 'search', rerun by --retry-errors), never an observation (0: none)",
    )
    search_max_terms: int | None = option(
        MAX_EXPANSION_TERMS,
        metavar="N",
        help="work limit: most words one query's wildcards and ranges may expand to; a wider query is refused, "
        "the agent told to narrow it (0: none)",
    )
    search_max_postings: int | None = option(
        MAX_POSTINGS,
        metavar="N",
        help="work limit: most page entries one query may read (its words' page counts summed; 0: none)",
    )
    retriever: str | None = option(
        None,
        metavar="SPEC",
        help="search with this retriever (bm25, dense:wordllama, rrf:A+B, hybrid:A>B) instead of the page index",
        default_text="the page index",
    )

    def check(self, run: Any) -> None:
        """Raise :class:`RunError` for search settings that cannot work."""
        super().check(run)
        if self.oracle and run.split == "test":
            raise RunError("--oracle shows the gold evidence pages, which the test split hides: use dev or train")
        for name in ("top_k", "image_steps"):
            if getattr(self, name) < 1:
                raise RunError(f"{name.replace('_', '-')} must be at least 1")
        if self.min_searches is not None and not 0 <= self.min_searches < run.max_steps:
            raise RunError("min-searches must be between 0 and max-steps - 1")
        if self.search_timeout is not None and not self.search_timeout >= 0:  # also rejects NaN
            raise RunError(
                f"search-timeout must be 0 (no limit) or a positive number of seconds, got {self.search_timeout}"
            )
        for name in ("search_max_terms", "search_max_postings"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise RunError(
                    f"{name.replace('_', '-')} must be 0 (no limit) or a positive whole number, got {value!r}"
                )
        if self.retriever is not None and self.oracle:
            raise RunError("--retriever and --oracle exclude each other (the oracle shows the gold pages)")
