"""The static RAG baseline's options (``madqa run --agent rag``), light: read without loading the agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from madqa.agents.harness.options import AgentOptions, RunError, option
from madqa.agents.search_loop.options import observe_option, page_chars_option

#: The retriever when ``--retriever`` is not given (offline).
DEFAULT_RETRIEVER = "rrf:bm25+dense:wordllama"


@dataclass(frozen=True)
class RAGOptions(AgentOptions):
    """Static RAG's settings: one retrieval of ``top_k`` pages (HEAVEN's final k₂), one model call."""

    agent: ClassVar[str] = "rag"
    summary: ClassVar[str] = "static RAG, one retrieval and one model call (§4)"
    fixed_max_steps: ClassVar[int | None] = 1  # one model call, whatever --max-steps says

    top_k: int = option(5, metavar="K", help="pages retrieved")
    observe: Literal["image", "text"] | None = observe_option("show the pages as images or texts")
    page_chars: int | None = page_chars_option("page text shown per page in text mode")
    retriever: str | None = option(
        None,
        metavar="SPEC",
        help="page retriever (bm25, dense:wordllama, rrf:A+B, hybrid:A>B)",
        default_text=DEFAULT_RETRIEVER,
    )

    def check(self, run: Any) -> None:
        """Raise :class:`RunError` for settings static RAG cannot use."""
        super().check(run)
        if self.top_k < 1:
            raise RunError("top-k must be at least 1")
