"""MDocAgent's options (``madqa run --agent mdoc``), light: read without loading the agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from madqa.agents.harness.options import AgentOptions, RunError, option
from madqa.agents.search_loop.options import observe_option, page_chars_option

#: The text retriever when ``--retriever`` is not given (offline).
DEFAULT_RETRIEVER = "bm25"
#: Pages per retrieval: MDocAgent's top-4 setting.
DEFAULT_TOP_K = 4


@dataclass(frozen=True)
class MDocOptions(AgentOptions):
    """MDocAgent's settings: a text and an image retrieval of ``top_k`` pages each, then five agents."""

    agent: ClassVar[str] = "mdoc"
    summary: ClassVar[str] = "MDocAgent's five agents (§4)"
    fixed_max_steps: ClassVar[int | None] = 5  # one call per agent (pipeline.ROLES), whatever --max-steps says

    top_k: int = option(DEFAULT_TOP_K, metavar="K", help="pages per retrieval (MDocAgent's top-4)")
    observe: Literal["image", "text"] | None = observe_option("show the image side as page images or texts")
    page_chars: int | None = page_chars_option("page text shown per page")
    retriever: str | None = option(
        None, metavar="SPEC", help="the text side's retriever", default_text=DEFAULT_RETRIEVER
    )
    image_retriever: str | None = option(
        None, metavar="SPEC", help="the image side's retriever", default_text="renders of the text side's pages"
    )

    def check(self, run: Any) -> None:
        """Raise :class:`RunError` for settings MDocAgent cannot use."""
        super().check(run)
        if self.top_k < 1:
            raise RunError("top-k must be at least 1")
