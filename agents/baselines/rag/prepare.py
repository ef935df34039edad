"""Static RAG as a registered :class:`~madqa.agents.harness.protocol.Agent` (``madqa run --agent rag``).

The paper's non-agentic family (§4: M3DocRAG, HEAVEN, ColBERTv2 + Llama 3): the question's text is the query, one
retriever (:mod:`madqa.agents.corpus.retrieval`, ``--retriever SPEC``) returns ``top_k`` pages (5: HEAVEN's final
``k₂``, G.3), and the model sees them (images, or page texts for text-only models) in one call that can only
answer, with citations (the search agent's given-pages path, :func:`madqa.agents.search_loop.agent.build_search_agent`,
with the prompts of ``agents/prompts/rag.yaml``). The results line records the retrieval as one
``search_history`` entry (query = the question), so the explorer and the analyses see what was retrieved; its
effort (``steps``) is 1, and ``max_steps`` is 1 whatever ``--max-steps`` says. The retrievers of M3DocRAG and
HEAVEN (ColPali, DSE + ColQwen2.5) are not built yet (``madqa retrieval`` says so); the default is
``rrf:bm25+dense:wordllama``, which runs offline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smolagents import Model
from smolagents.memory import ActionStep

from madqa.agents.baselines.rag.options import DEFAULT_RETRIEVER, RAGOptions
from madqa.agents.corpus.render import PageRenderer
from madqa.agents.harness.agent_base import AgentBase, Preparation
from madqa.agents.harness.protocol import Citation, SearchEvent, StepEvent
from madqa.agents.harness.smolagents_loop import SmolagentsPrepared
from madqa.agents.search_loop.agent import SearchAgent, build_search_agent
from madqa.agents.search_loop.embedder_ledger import embedder_role
from madqa.agents.search_loop.resources import corpus_costs, load_page_readers

__all__ = ["AGENT", "DEFAULT_RETRIEVER", "PreparedRAGAgent", "RAGAgentEntry"]


@dataclass(eq=False, repr=False, kw_only=True)
class PreparedRAGAgent(SmolagentsPrepared[Model]):
    """The static RAG baseline ready for a run: a model per slot, one shared retriever and renderer."""

    retriever: Any
    renderer: PageRenderer

    def build(self, slot: Model, item: Mapping[str, Any]) -> SearchAgent:
        """Retrieve the question's pages, then an agent that is shown them and can only answer."""
        c = self.config.typed(RAGOptions)
        question = str(item.get("question") or "")
        hits = self.retriever.search(question, k=c.top_k)
        pages = [{"document": h.document, "page": h.page} for h in hits]
        agent = build_search_agent(
            slot,
            None,
            self.renderer,
            max_steps=1,
            observe=c.observe,
            oracle_pages=pages,
            page_chars=c.page_chars or 0,
            prompts="rag",
        )
        agent.retrieval = {"query": question, "results": pages, "count": len(pages), "error": None}  # type: ignore[attr-defined]
        return agent

    def step_events(self, agent: SearchAgent, step: ActionStep, shown: Sequence[StepEvent]) -> list[StepEvent]:
        """The retrieval, as one :class:`SearchEvent`, with the first step."""
        if shown:
            return []
        got = getattr(agent, "retrieval", None) or {"query": "", "results": [], "count": 0}
        pages = tuple(Citation(str(p["document"]), int(p["page"])) for p in got["results"])
        return [SearchEvent(step=step.step_number, query=got["query"], pages=pages, count=got["count"])]

    def record_fields(self, agent: SearchAgent | None) -> dict[str, Any]:
        """``search_history``: the one retrieval; ``steps``: 1 (0 when the question failed before retrieving);
        ``roles``: the retrieval's query embeddings (:mod:`madqa.agents.search_loop.embedder_ledger`)."""
        got = getattr(agent, "retrieval", None)
        roles = embedder_role([self.retriever.name], 1) if got else {}
        return {"search_history": [dict(got)] if got else [], "steps": 1 if got else 0, "roles": roles}


class RAGAgentEntry(AgentBase):
    """The static RAG baseline; see :mod:`madqa.agents.baselines.rag.prepare`."""

    options = RAGOptions

    def load(self, request: Preparation) -> PreparedRAGAgent:
        """Load a model per slot and build the retriever over the dataset's pages (raises as
        :func:`~madqa.agents.search_loop.resources.load_page_readers` does)."""
        given = request.config.typed(RAGOptions)
        readers = load_page_readers(request, given, calls=2, retrievers=[given.retriever or DEFAULT_RETRIEVER])
        [retriever] = readers.retrievers
        config = readers.run_config(request, self.options, retriever=retriever.name)
        settings = config.settings(self.options)
        return PreparedRAGAgent(
            config,
            settings,
            readers.models,
            request.dataset,
            corpus_costs(readers.pages, retrievers=readers.retrievers),
            retriever=retriever,
            renderer=readers.renderer,
        )


#: The registered entry (:mod:`madqa.agents.harness.registry`).
AGENT = RAGAgentEntry()
