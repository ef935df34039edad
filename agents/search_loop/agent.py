"""The BM25 search agent of the paper (G.1) on smolagents' ``ToolCallingAgent``.

The agent has two tools, ``search_documents`` and ``final_answer`` (:mod:`.tools`), and at most ``max_steps`` = T
model calls. On step T only ``final_answer`` is offered and the model is told that searching is over (API models
then must call it: smolagents asks for ``tool_choice="required"``; the local model is grammar-constrained). If step
T still fails (no call, malformed arguments), :meth:`SearchAgent.provide_final_answer` makes one more call with only
``final_answer`` and accepts what it can of the reply, instead of smolagents' free-text fallback.

With ``oracle_pages`` the gold evidence pages are given with the question (as images or texts) and only
``final_answer`` is offered: the retrieval-free ablation of the paper.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from smolagents import ChatMessage, MessageRole, Model, ToolCallingAgent
from smolagents.agents import populate_template
from smolagents.memory import ActionStep, FinalAnswerStep, ToolCall
from smolagents.models import parse_json_if_needed
from smolagents.monitoring import LogLevel
from smolagents.utils import AgentMaxStepsError, AgentToolExecutionError

from madqa.agents.corpus.search import SearchIndex, SearchTimeoutError
from madqa.agents.harness.answer import FinalAnswerTool, normalise_answer
from madqa.agents.harness.config import DEFAULT_MAX_STEPS, DEFAULT_TOP_K
from madqa.agents.harness.smolagents_loop import drain
from madqa.agents.models.factory import is_text_only
from madqa.agents.prompts import load_prompts
from madqa.agents.search_loop.tools import DEFAULT_PAGE_CHARS, Observe, SearchDocumentsTool, SemanticSearchTool

if TYPE_CHECKING:
    from madqa.agents.corpus.render import PageRenderer

logger = logging.getLogger(__name__)


class SearchAgent(ToolCallingAgent):
    """A ``ToolCallingAgent`` that must give a structured ``final_answer`` by its last step.

    Attributes:
        final_state: after a run, ``"answered"`` (the model called ``final_answer``), ``"forced"`` (answer taken
            from the forced call after step T) or ``"no_answer"`` (even that failed); ``None`` before a run.
        forced_error: why the forced call failed, when ``final_state == "no_answer"``.
        search_tool: the ``search_documents`` tool, or ``None`` in oracle mode.
        oracle: the oracle pages shown with the question (``{"document", "page"}``), else ``None``.
        min_searches: ``final_answer`` is offered (before the last step) only after this many searches.
    """

    def __init__(
        self,
        *,
        search_tool: SearchDocumentsTool | None,
        model: Model,
        prompts: Mapping[str, Any],
        max_steps: int,
        oracle: list[dict[str, Any]] | None = None,
        oracle_content: tuple[str, list[Any]] | None = None,
        min_searches: int = 0,
        verbosity_level: int = LogLevel.OFF,
        extra_tools: Sequence[Any] = (),
    ) -> None:
        """Assemble the agent (use :func:`build_search_agent`; ``extra_tools``: more tools, e.g. the shell agent's)."""
        tools = [t for t in (search_tool, *extra_tools, FinalAnswerTool()) if t is not None]
        templates = {k: v for k, v in prompts.items() if k != "madqa"}
        self.texts: dict[str, str] = dict(prompts["madqa"])
        self.search_tool, self.oracle, self._oracle_content = search_tool, oracle, oracle_content
        self.min_searches = min_searches
        self.final_state: str | None = None
        self.forced_error: str | None = None
        self.forced_exception: BaseException | None = None  # the exception behind forced_error (its kind)
        self._forced_call: ToolCall | None = None
        super().__init__(
            tools=tools,
            model=model,
            prompt_templates=templates,
            max_steps=max_steps,  # type: ignore[arg-type]
            verbosity_level=verbosity_level,
            step_callbacks={ActionStep: self._after_step},
        )

    def initialize_system_prompt(self) -> str:
        """The system prompt, with the tools and the step budget filled in."""
        variables = {
            "tools": self.tools,
            "managed_agents": self.managed_agents,
            "max_steps": self.max_steps,
            "custom_instructions": self.instructions,
        }
        return populate_template(self.prompt_templates["system_prompt"], variables=variables)

    def _last_step(self) -> bool:
        return self.step_number >= self.max_steps

    def _must_search(self) -> bool:
        return self.search_tool is not None and len(self.search_tool.history) < self.min_searches

    @property
    def tools_and_managed_agents(self) -> list[Any]:
        """The tools offered at this step: only ``final_answer`` on the last one, only search before min_searches."""
        if self._last_step():
            return [self.tools["final_answer"]]
        if self._must_search():
            return [self.tools[self.search_tool.name]]  # type: ignore[union-attr]
        return list(self.tools.values())

    def write_memory_to_messages(self, summary_mode: bool = False) -> list[ChatMessage]:
        """The model input; on the last step it ends with the instruction to answer now."""
        messages = super().write_memory_to_messages(summary_mode)
        if self._last_step() and not summary_mode and self.search_tool is not None:
            reminder = [{"type": "text", "text": self.texts["last_step"]}]
            messages.append(ChatMessage(role=MessageRole.USER, content=reminder))
        return messages

    def execute_tool_call(self, tool_name: str, arguments: dict[str, str] | str) -> Any:
        """Run a tool call; on the last step only ``final_answer`` is accepted (a search raises a step error)."""
        if self._last_step() and tool_name != "final_answer":
            raise AgentToolExecutionError(
                f"{tool_name} is not available on the last step: call final_answer now.", self.logger
            )
        if tool_name == "final_answer" and not self._last_step() and self._must_search():
            raise AgentToolExecutionError(
                f"Search at least {self.min_searches} time(s) before answering: call search_documents.", self.logger
            )
        try:
            return super().execute_tool_call(tool_name, arguments)
        except AgentToolExecutionError as exc:
            # smolagents shows a tool's exception to the model; a search's safety net is the machine's failure, not
            # the model's: raised past the step (not an AgentError), it ends the question as an error line.
            if isinstance(exc.__cause__, SearchTimeoutError):
                raise exc.__cause__ from None
            raise

    def provide_final_answer(self, task: str) -> ChatMessage:
        """After step T without an answer: one more call offering only ``final_answer``, parsed leniently."""
        final_tool = self.tools["final_answer"]
        message: ChatMessage | None = None
        try:
            message = self.model.generate(self.write_memory_to_messages(), tools_to_call_from=[final_tool])
            self.final_reply = message  # its raw usage, for the ledger (smolagents' last step keeps no reply)
            if not message.tool_calls:
                message = self.model.parse_tool_calls(message)
            calls = message.tool_calls or []
            call = next((c for c in calls if c.function.name == "final_answer"), None)
            if call is None:
                raise ValueError(f"the model called {[c.function.name for c in calls]} instead of final_answer")
            args = parse_json_if_needed(call.function.arguments)
            if not isinstance(args, dict):
                raise ValueError(f"final_answer arguments are not an object: {str(args)[:200]}")
            content = normalise_answer(args.get("answer"), args.get("citations"), strict=False)
            self._forced_call = ToolCall(name="final_answer", arguments=args, id=call.id)
            self.final_state = "forced"
        except Exception as exc:  # noqa: BLE001 - any failure here is recorded; the run still ends with a record
            logger.warning("no final answer after %d steps: %s", self.max_steps, exc)
            content = {"answer": [], "citations": []}
            self.final_state, self.forced_error = "no_answer", f"{type(exc).__name__}: {exc}"
            self.forced_exception = exc
        usage = message.token_usage if message is not None else None
        return ChatMessage(role=MessageRole.ASSISTANT, content=content, token_usage=usage)  # type: ignore[arg-type]

    def _after_step(self, step: ActionStep, agent: Any = None) -> None:
        if self.search_tool is not None:
            self.search_tool.attach_images(step, self)
        else:
            step.observations_images = None  # oracle images travel once, with the task
        if step.is_final_answer:
            self.final_state = "answered"
        if isinstance(step.error, AgentMaxStepsError) and self._forced_call is not None:
            step.tool_calls = [self._forced_call]

    def solve_steps(self, question: str) -> Generator[ActionStep, None, dict[str, Any]]:
        """Run the agent on one question, yielding each finished step; returns ``{"answer", "citations"}``.

        Raises:
            smolagents.utils.AgentGenerationError: the model call failed (network, credentials, …).
        """
        self.final_state, self.forced_error, self._forced_call = None, None, None
        self.final_reply: ChatMessage | None = None
        self.forced_exception = None
        if self.search_tool is not None:
            self.search_tool.history.clear()
            self.search_tool.pending_images.clear()
        task = populate_template(self.texts["task"], variables={"question": question})
        images = None
        if self._oracle_content is not None:
            kind, pages = self._oracle_content
            if kind == "image":
                task += "\n\n" + populate_template(self.texts["oracle_images"], variables={"pages": self.oracle})
                images = pages
            else:
                task += "\n\n" + populate_template(self.texts["oracle_text"], variables={"pages": pages})
        output = None
        for step in self.run(task, images=images, stream=True):
            if isinstance(step, ActionStep):
                yield step
            elif isinstance(step, FinalAnswerStep):
                output = step.output
        if isinstance(output, Mapping) and "answer" in output:
            return normalise_answer(output.get("answer"), output.get("citations"), strict=False)
        return {"answer": [], "citations": []}

    def solve(self, question: str) -> dict[str, Any]:
        """Run the agent on one question; returns ``{"answer": [...], "citations": [...]}`` (:meth:`solve_steps`)."""
        return drain(self.solve_steps(question))


def build_search_agent(
    model: Model,
    index: SearchIndex | None,
    renderer: PageRenderer,
    max_steps: int = DEFAULT_MAX_STEPS,
    top_k: int = DEFAULT_TOP_K,
    observe: Observe | None = None,
    oracle_pages: Sequence[Mapping[str, Any]] | None = None,
    *,
    page_chars: int = DEFAULT_PAGE_CHARS,
    image_steps: int = 1,
    min_searches: int = 0,
    prompts: str = "bm25",
    semantic: bool = False,
) -> SearchAgent:
    """The BM25 agent for one question at a time (call :meth:`SearchAgent.solve`; an agent is not thread-safe).

    Args:
        model: a smolagents model (:func:`madqa.agents.models.factory.make_model`).
        index: the page index; unused (may be ``None``) with ``oracle_pages``.
        renderer: page images and texts.
        max_steps: T, the most model calls; the last one can only answer.
        top_k: pages per search.
        observe: ``"image"`` or ``"text"``; default: text for text-only models, else images.
        oracle_pages: gold evidence pages ``{"document", "page"}`` shown up front instead of searching.
        page_chars: longest page text shown in text mode.
        image_steps: searches whose page images stay in the model input.
        min_searches: searches required before ``final_answer`` is offered (the last step always offers it); 0 is
            the paper's protocol. The bundled tiny model otherwise answers at once without searching.
        prompts: prompt file name under ``agents/prompts`` (:func:`madqa.agents.prompts.load_prompts`).
        semantic: ``index`` is a :mod:`madqa.agents.corpus.retrieval` retriever: the search tool takes free text
            (:class:`~.tools.SemanticSearchTool`).

    Raises:
        ValueError: bad numbers, images for a text-only model, or no index without oracle pages.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")
    observe = observe or ("text" if is_text_only(model) else "image")
    if observe == "image" and is_text_only(model):
        raise ValueError(f"model {model.model_id} takes text only: use observe='text'")
    templates = load_prompts(prompts)
    if oracle_pages is not None:
        keys = [(str(p["document"]), int(p["page"])) for p in oracle_pages]
        pages = [{"document": d, "page": n} for d, n in keys]
        if observe == "image":
            content: tuple[str, list[Any]] = ("image", [renderer.image(d, n) for d, n in keys])
        else:
            texts = [{"document": d, "page": n, "text": renderer.text(d, n)[:page_chars]} for d, n in keys]
            content = ("text", texts)
        return SearchAgent(
            search_tool=None, model=model, prompts=templates, max_steps=max_steps, oracle=pages, oracle_content=content
        )
    if index is None:
        raise ValueError("build_search_agent needs a search index unless oracle_pages are given")
    tool_class = SemanticSearchTool if semantic else SearchDocumentsTool
    tool = tool_class(index, renderer, top_k=top_k, observe=observe, page_chars=page_chars, image_steps=image_steps)
    return SearchAgent(
        search_tool=tool, model=model, prompts=templates, max_steps=max_steps, min_searches=min_searches
    )
