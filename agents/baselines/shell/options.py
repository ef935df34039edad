"""The shell agent's options (``madqa run --agent shell``; paper G.4), light: read without loading the agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from madqa.agents.harness.options import AgentOptions, RunError, option

#: The retriever of ``search`` when ``--retriever`` is not given: static embeddings, offline (as Semtools').
DEFAULT_RETRIEVER = "dense:wordllama"
#: Files per search (Semtools' ``search --top-k`` default).
DEFAULT_TOP_K = 3


@dataclass(frozen=True)
class ShellOptions(AgentOptions):
    """The Semtools-style shell agent's settings."""

    agent: ClassVar[str] = "shell"
    summary: ClassVar[str] = "Semtools-style search and read-only ls/grep/cat/head (G.4)"

    top_k: int = option(DEFAULT_TOP_K, metavar="K", help="page files per search (Semtools' --top-k)")
    min_searches: int | None = option(
        None, metavar="N", help="searches before answering is allowed", default_text="0; 1 for the local model"
    )
    step_timeout: float = option(30.0, metavar="S", help="wall-clock seconds per shell command")
    retriever: str | None = option(
        None, metavar="SPEC", help="the search tool's retriever", default_text=DEFAULT_RETRIEVER
    )

    def check(self, run: Any) -> None:
        """Raise :class:`RunError` for settings the shell agent cannot use."""
        super().check(run)
        if self.top_k < 1:
            raise RunError("top-k must be at least 1")
        if not self.step_timeout > 0:
            raise RunError("step-timeout must be positive")
        if self.min_searches is not None and not 0 <= self.min_searches < run.max_steps:
            raise RunError("min-searches must be between 0 and max-steps - 1")
