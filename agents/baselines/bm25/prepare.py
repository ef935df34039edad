"""The search agent as a registered :class:`~madqa.agents.harness.protocol.Agent` (``madqa run --agent bm25``).

``prepare`` loads one model per slot, resolves the settings that depend on the model (observation mode, page text
per result, searches before answering) and opens the page index and renderer, which every slot shares (both are
thread-safe); each question then gets a fresh :class:`~madqa.agents.search_loop.agent.SearchAgent`, and each of its
searches becomes a :class:`~madqa.agents.harness.protocol.SearchEvent`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from smolagents import Model
from smolagents.memory import ActionStep

from madqa.agents.baselines.bm25.options import SearchOptions
from madqa.agents.corpus.render import PageRenderer
from madqa.agents.corpus.search import SearchIndex
from madqa.agents.harness.agent_base import AgentBase, Preparation
from madqa.agents.harness.protocol import Citation, SearchEvent, StepEvent
from madqa.agents.harness.smolagents_loop import SmolagentsPrepared
from madqa.agents.search_loop.agent import SearchAgent, build_search_agent
from madqa.agents.search_loop.resources import (
    default_min_searches,
    default_page_chars,
    load_models,
    open_corpus,
    record_fields,
)


@dataclass(eq=False, repr=False, kw_only=True)
class PreparedSearchAgent(SmolagentsPrepared[Model]):
    """The search agent ready for a run: a model per slot, a shared index and renderer.

    With ``oracle``, :attr:`evidence` holds each question's gold evidence pages by id (dev and train labels).
    """

    index: SearchIndex | None
    renderer: PageRenderer
    evidence: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)

    def build(self, slot: Model, item: Mapping[str, Any]) -> SearchAgent:
        """A fresh agent; with ``oracle``, given the question's gold evidence pages."""
        c = self.config.typed(SearchOptions)
        return build_search_agent(
            slot,
            self.index,
            self.renderer,
            max_steps=self.config.max_steps,
            top_k=c.top_k,
            observe=c.observe,
            oracle_pages=self.evidence.get(str(item["id"]), item.get("evidence")) if c.oracle else None,
            page_chars=c.page_chars or 0,
            image_steps=c.image_steps,
            min_searches=c.min_searches or 0,
            semantic=c.retriever is not None,
        )

    def step_events(self, agent: SearchAgent, step: ActionStep, shown: Sequence[StepEvent]) -> list[StepEvent]:
        """One :class:`SearchEvent` per search made since the last event."""
        history = agent.search_tool.history if agent.search_tool is not None else []
        return [
            SearchEvent(
                step=step.step_number,
                query=rec.query,
                count=rec.count,
                error=rec.error,
                pages=tuple(Citation(str(p["document"]), int(p["page"])) for p in rec.results),
            )
            for rec in history[len(shown) :]
        ]

    def record_fields(self, agent: SearchAgent | None) -> dict[str, Any]:
        """See :func:`record_fields`."""
        return record_fields(agent)


class SearchAgentEntry(AgentBase):
    """The BM25 search agent of the paper (G.1); see :mod:`madqa.agents.search_loop.agent`."""

    options = SearchOptions

    def load(self, request: Preparation) -> PreparedSearchAgent:
        """Load a model per slot and open the corpus; model-dependent defaults are resolved into the settings.

        Raises:
            RunError: ``observe="image"`` with a text-only model.
            ValueError: an invalid model spec or a missing model dependency.
        """
        config = request.config
        given = config.typed(SearchOptions)
        models, observe = load_models(config, request.slots, request.model_options, given.observe)
        first = models[0]
        page_chars = given.page_chars or default_page_chars(first, given.top_k, config.max_steps)
        min_searches = default_min_searches(first) if given.min_searches is None else given.min_searches
        config = config.with_options(observe=observe, page_chars=page_chars, min_searches=min_searches)
        index, renderer, costs = open_corpus(config, config.typed(SearchOptions), progress=request.host.progress)
        if given.retriever is not None:
            config = config.with_options(retriever=getattr(index, "name", given.retriever))  # the full spec
        evidence = {}
        if given.oracle:
            from madqa.loading_script.load import load_gold

            evidence = {str(row["id"]): row["evidence"] for row in load_gold(config.split, config.dataset)}
        settings = config.settings(self.options)
        return PreparedSearchAgent(
            config, settings, models, request.dataset, costs, index=index, renderer=renderer, evidence=evidence
        )


#: The registered entry (:mod:`madqa.agents.harness.registry`).
AGENT = SearchAgentEntry()
