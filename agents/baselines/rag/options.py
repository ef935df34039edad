"""The static RAG baseline's options (``madqa run --agent rag``), light: read without loading the agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from madqa.agents.harness.options import AgentOptions, RunError, option

#: The retriever when ``--retriever`` is not given (offline).
DEFAULT_RETRIEVER = "rrf:bm25+dense:wordllama"


@dataclass(frozen=True)
class RAGOptions(AgentOptions):
    """Static RAG's settings: one retrieval of ``top_k`` pages (HEAVEN's final k₂), one model call."""

    agent: ClassVar[str] = "rag"
    summary: ClassVar[str] = "static RAG, one retrieval and one model call (§4)"

    top_k: int = option(5, metavar="K", help="pages retrieved")
    observe: Literal["image", "text"] | None = option(
        None,
        choices=("image", "text"),
        help="show the pages as images or texts",
        default_text="text for text-only models, else image",
    )
    page_chars: int | None = option(
        None, metavar="N", help="page text shown per page in text mode", default_text="by model"
    )
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
