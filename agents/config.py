"""What to run: :class:`RunConfig`, the settings of ``madqa run`` (one flat value the command line fills in).

The fields every agent uses are :data:`COMMON_FIELDS`; the others belong to one agent, which names them in its
``fields`` (:class:`madqa.agents.protocol.Agent`) and checks them in its ``check``. A results line's ``config`` holds
the common fields and the agent's own, so a line of one agent never carries another agent's settings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from .search import DEFAULT_BACKEND, DEFAULT_SEARCH_TIMEOUT

#: T, the most model calls per question (both agents), and the search agent's pages per search.
DEFAULT_MAX_STEPS = 10
DEFAULT_TOP_K = 5
#: Fields of every results line's ``config`` (whatever the agent), in :class:`RunConfig` order.
COMMON_FIELDS: tuple[str, ...] = ("model", "agent", "split", "dataset", "max_steps")


class RunError(ValueError):
    """A run that cannot start as asked; the message says what to change."""


@dataclass(frozen=True)
class RunConfig:
    """What to run (stored, minus the output options, in every results line's ``config``).

    Attributes:
        model: model spec (:func:`madqa.agents.models.make_model`).
        agent: a registered agent name (:mod:`madqa.agents.registry`): ``"bm25"`` (search agent, paper G.1) or
            ``"repl"`` (code-REPL agent, paper G.5).
        split: ``train``, ``dev`` or ``test``.
        dataset: dataset spec (``None``: ``MADQA_DATASET`` or the local sample).
        limit: run only the first ``limit`` questions of the split.
        max_steps: T, the most model calls per question.
        top_k: (bm25) pages per search.
        observe: (bm25) ``image`` or ``text``; ``None`` picks by model (text for text-only models).
        oracle: (bm25) show the gold evidence pages instead of searching (not on ``test``).
        search_backend: (bm25) ``whoosh`` or ``tantivy``.
        page_chars: (bm25) page text shown per result in text mode; ``None`` picks by model (smaller for small
            contexts).
        image_steps: (bm25) searches whose page images stay in the model input.
        min_searches: (bm25) searches required before ``final_answer`` is offered; ``None`` picks by model (0, the
            paper's protocol, except 1 for the bundled local model).
        sub_model: (repl) model spec behind ``llm_query``; ``None``: the root model.
        sub_calls: (repl) sub-calls per question; ``None``: by sub-model.
        sub_call_chars: (repl) longest ``llm_query`` prompt in characters; ``None``: by sub-model.
        observation_chars: (repl) longest observation of a code step in the root prompt; ``None``: by model.
        step_timeout: (repl) wall-clock seconds per code step (sub-model time excluded).
        search_timeout: (bm25) wall-clock seconds one search may take before the agent is told to narrow the query
            (0 or ``None``: no limit); see :class:`madqa.agents.search.SearchLimits`.
    """

    model: str = "local"
    agent: str = "bm25"
    split: str = "dev"
    dataset: str | None = None
    limit: int | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    top_k: int = DEFAULT_TOP_K
    observe: Literal["image", "text"] | None = None
    oracle: bool = False
    search_backend: str = DEFAULT_BACKEND
    page_chars: int | None = None
    image_steps: int = 1
    min_searches: int | None = None
    sub_model: str | None = None
    sub_calls: int | None = None
    sub_call_chars: int | None = None
    observation_chars: int | None = None
    step_timeout: float = 30.0
    search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT

    def check(self) -> None:
        """Raise :class:`RunError` for common settings that cannot work (the agent checks its own fields)."""
        if self.max_steps < 1:
            raise RunError("max-steps must be at least 1")
        if self.limit is not None and self.limit < 0:
            raise RunError("limit must not be negative")

    def settings(self, fields: tuple[str, ...]) -> dict[str, Any]:
        """The results line's ``config``: :data:`COMMON_FIELDS` and ``fields``, in field order.

        >>> RunConfig(agent="repl").settings(("step_timeout",))
        {'model': 'local', 'agent': 'repl', 'split': 'dev', 'dataset': None, 'max_steps': 10, 'step_timeout': 30.0}
        """
        keep = set(COMMON_FIELDS) | set(fields)
        return {k: v for k, v in asdict(self).items() if k in keep}
