"""The managed RAG services' options (``madqa run --agent file-search``; paper G.2), light: read without loading
the agent or its SDKs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from madqa.agents.harness.options import AgentOptions, RunError, option

#: The services (:mod:`madqa.agents.baselines.file_search.services`).
PROVIDERS = ("openai", "gemini")


@dataclass(frozen=True)
class FileSearchOptions(AgentOptions):
    """The file-search agent's settings (pip install 'madqa[file-search]')."""

    agent: ClassVar[str] = "file-search"
    summary: ClassVar[str] = "managed RAG: OpenAI or Gemini File Search (G.2)"
    fixed_max_steps: ClassVar[int | None] = 1  # one model call, whatever --max-steps says

    provider: str | None = option(
        None,
        choices=PROVIDERS,
        help="the managed RAG service (paper G.2); its key from OPENAI_API_KEY or GOOGLE_API_KEY/GEMINI_API_KEY",
        default_text="required",
    )
    refresh_store: bool = option(
        False,
        record=False,  # it does not change what a question is answered with
        help="upload the collection again, not reusing the cached store",
    )

    def check(self, run: Any) -> None:
        """Raise :class:`RunError` without a provider."""
        if self.provider not in PROVIDERS:
            raise RunError(f"--agent file-search needs --provider {' or '.join(PROVIDERS)}")
