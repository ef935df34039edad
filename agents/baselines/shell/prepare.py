"""The Semtools-style shell agent (paper G.4) as a registered :class:`~madqa.agents.harness.protocol.Agent`.

``madqa run --agent shell``: the corpus is parsed once to one text file per page (``$MADQA_HOME/shell/<digest>/
<document>/page_0001.txt``, :mod:`.corpus`), and a tool-calling agent answers each question with ``search``
(semantic search over the page files: ``--retriever``, default ``dense:wordllama``, static embeddings like
Semtools'; ``--top-k`` files per search, default 3 as Semtools' ``--top-k``) and ``bash`` (read-only ``ls``,
``cat``, ``head``, ``grep`` with pipes, run in the REPL worker's walls: :mod:`.tools`), then ``final_answer``
with citations. It is the search agent's loop (:class:`~madqa.agents.search_loop.agent.SearchAgent`: T model calls, the
last one can only answer) with these tools and the prompts of ``agents/prompts/shell.yaml``. A citation may name
a page file (``1007969/page_0003.txt``) or a folder: it is mapped back to ``(document, page)``.

A results line's ``search_history`` holds the semantic searches; ``shell_history`` every command with the pages
it printed or matched; ``shell.walls`` what the worker reported about its walls.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smolagents import Model
from smolagents.memory import ActionStep

from madqa.agents.baselines.shell.corpus import CorpusMap, read_corpus, write_corpus
from madqa.agents.baselines.shell.options import DEFAULT_RETRIEVER, DEFAULT_TOP_K, ShellOptions
from madqa.agents.baselines.shell.tools import FileSearchTool, ShellTool
from madqa.agents.harness.agent_base import AgentBase, Preparation
from madqa.agents.harness.protocol import Citation, CodeEvent, Host, SearchEvent, StepEvent
from madqa.agents.harness.smolagents_loop import SmolagentsPrepared
from madqa.agents.prompts import load_prompts
from madqa.agents.sandbox.pool import WorkerSlots, worker_pool
from madqa.agents.sandbox.worker import ReplWorker
from madqa.agents.search_loop.agent import SearchAgent
from madqa.agents.search_loop.resources import corpus_costs, default_min_searches, load_models, make_run_retrievers

logger = logging.getLogger(__name__)

__all__ = ["AGENT", "DEFAULT_RETRIEVER", "DEFAULT_TOP_K", "PreparedShellAgent", "ShellAgent", "ShellAgentEntry"]


class ShellAgent(SearchAgent):
    """The search agent's loop with ``search`` and ``bash``; citations of page files are mapped to pages."""

    def __init__(
        self,
        *,
        search_tool: FileSearchTool,
        shell_tool: ShellTool,
        model: Model,
        max_steps: int,
        min_searches: int = 0,
    ) -> None:
        """Assemble the agent."""
        self.shell_tool = shell_tool
        super().__init__(
            search_tool=search_tool,
            model=model,
            prompts=load_prompts("shell"),  # type: ignore[arg-type]
            max_steps=max_steps,
            min_searches=min_searches,
            extra_tools=[shell_tool],
        )

    def solve_steps(self, question: str) -> Generator[ActionStep, None, dict[str, Any]]:
        """The search agent's run; then every citation mapped back to a ``(document, page)``."""
        self.shell_tool.history.clear()
        output = yield from super().solve_steps(question)
        return {"answer": output["answer"], "citations": map_citations(output["citations"], self.shell_tool.mapping)}


def map_citations(citations: Sequence[Mapping[str, Any]], mapping: CorpusMap) -> list[dict[str, Any]]:
    """Citations naming page files or folders as ``{document, page}`` (a page file's number wins); others as given.

    >>> m = CorpusMap.of([{"document": "a.pdf", "page": 1}])
    >>> map_citations([{"document": "a/page_0003.txt", "page": 1}, {"document": "a", "page": 2}], m)
    [{'document': 'a.pdf', 'page': 3}, {'document': 'a.pdf', 'page': 2}]
    """
    out: list[dict[str, Any]] = []
    for cite in citations:
        name, page = str(cite["document"]), int(cite["page"])
        found = mapping.page(name)
        document, page = found if found is not None else (mapping.document(name) or name, page)
        if {"document": document, "page": page} not in out:
            out.append({"document": document, "page": page})
    return out


@dataclass
class Slot:
    """One question at a time: its model and its walled worker."""

    model: Model
    worker: ReplWorker


@dataclass(eq=False, repr=False, kw_only=True)
class PreparedShellAgent(WorkerSlots, SmolagentsPrepared[Slot]):
    """The shell agent ready for a run: slots of a model and a worker; the page files and one retriever shared."""

    files: Mapping[str, str]
    mapping: CorpusMap
    retriever: Any
    host: Host

    def build(self, slot: Slot, item: Mapping[str, Any]) -> ShellAgent:
        """A fresh agent on the slot's model; the slot's worker gets the corpus files (its namespace reset)."""
        c = self.config.typed(ShellOptions)
        shell = ShellTool(slot.worker, self.mapping)
        shell.load(self.files)
        search = FileSearchTool(self.retriever, self.files, self.mapping, top_k=c.top_k)
        return ShellAgent(
            search_tool=search,
            shell_tool=shell,
            model=slot.model,
            max_steps=self.config.max_steps,
            min_searches=c.min_searches or 0,
        )

    def step_events(self, agent: ShellAgent, step: ActionStep, shown: Sequence[StepEvent]) -> list[StepEvent]:
        """One :class:`SearchEvent` per search and one :class:`CodeEvent` per command of the step."""
        events: list[StepEvent] = []
        searches = agent.search_tool.history if agent.search_tool is not None else []
        commands = agent.shell_tool.history
        n_search = sum(isinstance(e, SearchEvent) for e in shown)
        n_command = sum(isinstance(e, CodeEvent) for e in shown)
        for rec in searches[n_search:]:
            pages = tuple(Citation(str(p["document"]), int(p["page"])) for p in rec.results)
            events.append(
                SearchEvent(step=step.step_number, query=rec.query, pages=pages, count=rec.count, error=rec.error)
            )
        observation = str(step.observations or "")
        for rec in commands[n_command:]:
            events.append(
                CodeEvent(step=step.step_number, code=f"$ {rec.command}", output=observation, error=rec.error)
            )
        return events

    def record_fields(self, agent: ShellAgent | None) -> dict[str, Any]:
        """``search_history`` (searches), ``steps`` (= searches + commands), ``shell_history`` and the walls."""
        if agent is None:
            return {"search_history": []}
        searches = agent.search_tool.history if agent.search_tool is not None else []
        commands = agent.shell_tool.history
        return {
            "search_history": [h.as_dict() for h in searches],
            "steps": len(searches) + len(commands),
            "extra": {
                "shell_history": [c.as_dict() for c in commands],
                "shell": {"walls": dict(agent.shell_tool.worker.walls)},
            },
        }


class ShellAgentEntry(AgentBase):
    """The Semtools-style shell agent (paper G.4); see :mod:`madqa.agents.baselines.shell.prepare`."""

    options = ShellOptions

    def load(self, request: Preparation) -> PreparedShellAgent:
        """Parse the corpus to page files (once), start the workers, load the models, build the retriever.

        Raises:
            AgentUnavailableError: ``host.require_isolation`` and the worker's kernel walls are incomplete.
            RunError: a retriever spec that cannot be built.
            ValueError: an invalid model spec or a missing model dependency.
        """
        from madqa.loading_script.load import load_pages
        from madqa.loading_script.paths import Layout

        config, host = request.config, request.host
        given = config.typed(ShellOptions)
        with worker_pool(given.step_timeout, request.slots, host) as workers:
            models, _ = load_models(config, request.slots, request.model_options, "text")
            pages = load_pages(config.dataset)
            folder, mapping = write_corpus(pages, Layout.default().root / "shell")
            files = read_corpus(folder)
            [retriever] = make_run_retrievers([given.retriever or DEFAULT_RETRIEVER], pages, progress=host.progress)
        min_searches = default_min_searches(models[0]) if given.min_searches is None else given.min_searches
        config = config.with_options(retriever=retriever.name, min_searches=min_searches)
        slot_list = [Slot(m, w) for m, w in zip(models, workers, strict=True)]
        logger.info("shell agent: %d page file(s) in %s", len(files), folder)
        settings = config.settings(self.options)
        return PreparedShellAgent(
            config,
            settings,
            slot_list,
            request.dataset,
            corpus_costs(pages, retrievers=[retriever]),
            files=files,
            mapping=mapping,
            retriever=retriever,
            host=host,
        )


#: The registered entry (:mod:`madqa.agents.harness.registry`).
AGENT = ShellAgentEntry()
