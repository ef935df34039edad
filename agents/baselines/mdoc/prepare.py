"""MDocAgent (paper §4; Han et al. 2025) as a registered :class:`~madqa.agents.harness.protocol.Agent` (``--agent
mdoc``).

Per question: a text retrieval (``--retriever SPEC``, default ``bm25``; MDocAgent's is ColBERTv2) and an image
retrieval (``--image-retriever SPEC``; MDocAgent's is ColPali, not built yet, so by default the image side is the
renders of the text-retrieved pages), ``top_k`` pages each (default 4, MDocAgent's top-4 setting; the MADQA paper
states no other), then the five agents of :mod:`.pipeline`, one model call each. A vision model sees the image
side as page images (``--observe image``, its default); a text-only model sees those pages' texts instead, so the
image agent degrades to a second text reader (recorded as ``observe: text``). The results line records both
retrievals as its ``search_history`` (``retriever``: ``text`` / ``image``), the five calls as its ``trajectory``,
and ``steps`` = 5 model calls (``max_steps`` is 5 whatever ``--max-steps`` says).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smolagents import Model
from smolagents.memory import ActionStep

from madqa.agents.baselines.mdoc.options import DEFAULT_RETRIEVER, DEFAULT_TOP_K, MDocOptions
from madqa.agents.baselines.mdoc.pipeline import MDocPipeline
from madqa.agents.corpus.render import PageRenderer
from madqa.agents.harness.agent_base import AgentBase, Preparation
from madqa.agents.harness.protocol import Citation, SearchEvent, StepEvent
from madqa.agents.harness.smolagents_loop import SmolagentsPrepared
from madqa.agents.prompts import load_prompts
from madqa.agents.search_loop.embedder_ledger import embedder_role
from madqa.agents.search_loop.resources import corpus_costs, load_page_readers

__all__ = ["AGENT", "DEFAULT_RETRIEVER", "DEFAULT_TOP_K", "MDocAgentEntry", "PreparedMDocAgent"]


@dataclass(eq=False, repr=False, kw_only=True)
class PreparedMDocAgent(SmolagentsPrepared[Model]):
    """MDocAgent ready for a run: a model per slot; the retrievers and the renderer shared."""

    text_retriever: Any
    image_retriever: Any | None
    renderer: PageRenderer

    def _pages(self, hits: Sequence[Any]) -> list[dict[str, Any]]:
        chars = self.config.typed(MDocOptions).page_chars or 0
        return [
            {"document": h.document, "page": h.page, "text": self.renderer.text(h.document, h.page)[:chars]}
            for h in hits
        ]

    def build(self, slot: Model, item: Mapping[str, Any]) -> MDocPipeline:
        """Both retrievals, then the pipeline over their pages (renders for a vision model)."""
        c = self.config.typed(MDocOptions)
        question = str(item.get("question") or "")
        text_hits = self.text_retriever.search(question, k=c.top_k)
        image_hits = self.image_retriever.search(question, k=c.top_k) if self.image_retriever else text_hits
        text_pages, image_pages = self._pages(text_hits), self._pages(image_hits)
        images = [self.renderer.image(p["document"], p["page"]) for p in image_pages] if c.observe == "image" else None
        pipeline = MDocPipeline(slot, load_prompts("mdoc"), text_pages, image_pages, images)
        pipeline.retrievals = [  # type: ignore[attr-defined]
            {
                "query": question,
                "retriever": kind,
                "results": [{"document": p["document"], "page": p["page"]} for p in pages],
                "count": len(pages),
                "error": None,
            }
            for kind, pages in (("text", text_pages), ("image", image_pages))
        ]
        return pipeline

    def step_events(self, agent: MDocPipeline, step: ActionStep, shown: Sequence[StepEvent]) -> list[StepEvent]:
        """The two retrievals, as :class:`SearchEvent` values, with the first step."""
        if shown:
            return []
        return [
            SearchEvent(
                step=step.step_number,
                query=f"{r['retriever']}: {r['query']}",
                count=r["count"],
                pages=tuple(Citation(str(p["document"]), int(p["page"])) for p in r["results"]),
            )
            for r in getattr(agent, "retrievals", [])
        ]

    def record_fields(self, agent: MDocPipeline | None) -> dict[str, Any]:
        """``search_history``: the two retrievals; ``steps``: the agents called; ``roles``: the retrievals' query
        embeddings (:mod:`madqa.agents.search_loop.embedder_ledger`)."""
        if agent is None:
            return {"search_history": []}
        retrievers = [self.text_retriever.name] + ([self.image_retriever.name] if self.image_retriever else [])
        searched = bool(getattr(agent, "retrievals", None))
        return {
            "search_history": [dict(r) for r in getattr(agent, "retrievals", [])],
            "steps": len(agent.memory.steps),
            "roles": embedder_role(retrievers, 1) if searched else {},
        }


class MDocAgentEntry(AgentBase):
    """MDocAgent's five-agent pipeline; see :mod:`madqa.agents.baselines.mdoc.prepare`."""

    options = MDocOptions

    def load(self, request: Preparation) -> PreparedMDocAgent:
        """Load a model per slot and build the text (and, given ``image_retriever``, the image) retriever over the
        dataset's pages (raises as :func:`~madqa.agents.search_loop.resources.load_page_readers` does)."""
        given = request.config.typed(MDocOptions)
        specs = [given.retriever or DEFAULT_RETRIEVER] + ([given.image_retriever] if given.image_retriever else [])
        readers = load_page_readers(request, given, calls=3, retrievers=specs)
        retrievers = readers.retrievers
        image = retrievers[1] if len(retrievers) > 1 else None
        config = readers.run_config(
            request, self.options, retriever=retrievers[0].name, image_retriever=image.name if image else None
        )
        settings = config.settings(self.options)
        return PreparedMDocAgent(
            config,
            settings,
            readers.models,
            request.dataset,
            corpus_costs(readers.pages, retrievers=readers.retrievers),
            text_retriever=retrievers[0],
            image_retriever=image,
            renderer=readers.renderer,
        )


#: The registered entry (:mod:`madqa.agents.harness.registry`).
AGENT = MDocAgentEntry()
