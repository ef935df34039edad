"""The search agent's loop (paper G.1) as an inspect solver.

The same protocol as ``madqa run --agent bm25`` (:mod:`madqa.agents.search_loop.agent`), with its prompts
(``agents/prompts/bm25.yaml``) and tools (:mod:`.tools`): at most ``max_steps`` = T model calls; each of the first
T - 1 offers ``search_documents`` and ``final_answer`` and runs the tool calls of its reply; the last offers only
``final_answer`` (forced with inspect's ``tool_choice``), after the prompt's last-step instruction. The run ends
at the first accepted ``final_answer``. A reply without a tool call is answered with a reminder to call one.

If step T brings no accepted answer but a ``final_answer`` call, its arguments are read leniently (what can be used
is kept: ``final_state`` ``forced``), as the search agent salvages its forced answer; otherwise the sample ends
without an answer (``no_answer``, with the reason in the store). The task's ``message_limit`` (inspect's own limit)
is the backstop: a model calling several tools per reply cannot run past it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolFunction
from smolagents.agents import populate_template

from madqa.agents.corpus.render import PageRenderer
from madqa.agents.corpus.search import SearchIndex
from madqa.agents.harness.answer import FinalAnswerTool, normalise_answer
from madqa.agents.harness.config import DEFAULT_MAX_STEPS, DEFAULT_TOP_K
from madqa.agents.integrations.inspect_task.lines import STORE_ANSWER, STORE_FORCED, STORE_STATE
from madqa.agents.integrations.inspect_task.tools import FINAL_ANSWER, final_answer_tool, search_tool
from madqa.agents.prompts import load_prompts
from madqa.agents.search_loop.tools import DEFAULT_PAGE_CHARS, Observe, SearchDocumentsTool

#: Said to the model after a reply without a tool call (it must search or answer).
CALL_A_TOOL = "Call a tool now: search_documents to search, or final_answer to answer."


@dataclass(frozen=True)
class Corpus:
    """What every sample's search tool shares: the page index and the renderer (both thread-safe)."""

    index: SearchIndex
    renderer: PageRenderer


def messages_per_step() -> int:
    """Messages one step adds at most with one tool call per reply: the reply, the tool result, a reminder."""
    return 3


def message_limit(max_steps: int) -> int:
    """Inspect's ``message_limit`` for T steps: system and question, then :func:`messages_per_step` per step."""
    return 2 + messages_per_step() * max_steps


def new_search(corpus: Corpus, *, top_k: int, observe: Observe, page_chars: int) -> SearchDocumentsTool:
    """A fresh search tool (its ``history`` is one sample's searches)."""
    return SearchDocumentsTool(corpus.index, corpus.renderer, top_k=top_k, observe=observe, page_chars=page_chars)


def system_prompt(search: SearchDocumentsTool, max_steps: int) -> str:
    """The search agent's system prompt, with its tools and T filled in (as ``madqa run`` renders it)."""
    tools = {t.name: t for t in (search, FinalAnswerTool())}
    variables = {"tools": tools, "managed_agents": {}, "max_steps": max_steps, "custom_instructions": None}
    return populate_template(load_prompts("bm25")["system_prompt"], variables=variables)


def texts() -> Mapping[str, str]:
    """The prompt file's own texts (``task``, ``last_step``)."""
    return load_prompts("bm25")["madqa"]  # type: ignore[no-any-return]


def _last_reply(state: TaskState) -> ChatMessageAssistant | None:
    return next((m for m in reversed(state.messages) if isinstance(m, ChatMessageAssistant)), None)


def _last_final_call(state: TaskState) -> Any:
    """The arguments of the last reply's ``final_answer`` call, or ``None``."""
    reply = _last_reply(state)
    for call in (reply.tool_calls or []) if reply is not None else []:
        if call.function == FINAL_ANSWER:
            return call.arguments
    return None


@solver
def search_agent(
    corpus: Corpus,
    max_steps: int = DEFAULT_MAX_STEPS,
    top_k: int = DEFAULT_TOP_K,
    observe: Observe = "text",
    page_chars: int = DEFAULT_PAGE_CHARS,
) -> Solver:
    """The BM25 search agent: at most ``max_steps`` model calls over ``search_documents`` and ``final_answer``."""
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        search = new_search(corpus, top_k=top_k, observe=observe, page_chars=page_chars)
        both, final_only = [search_tool(search), final_answer_tool()], [final_answer_tool()]
        words = texts()
        state.messages = [
            ChatMessageSystem(content=system_prompt(search, max_steps)),
            ChatMessageUser(content=populate_template(words["task"], variables={"question": state.input_text})),
        ]
        for step in range(1, max_steps + 1):
            if step == max_steps:
                state.messages.append(ChatMessageUser(content=words["last_step"]))
                state.tools, state.tool_choice = list(final_only), ToolFunction(name=FINAL_ANSWER)
            else:
                state.tools, state.tool_choice = list(both), "auto"
            state = await generate(state, tool_calls="single")
            if state.store.get(STORE_ANSWER) is not None:
                state.store.set(STORE_STATE, "answered")
                return state
            if state.completed:
                return state
            reply = _last_reply(state)
            if step < max_steps and (reply is None or not reply.tool_calls):
                state.messages.append(ChatMessageUser(content=CALL_A_TOOL))
        arguments = _last_final_call(state)
        if arguments is not None:
            output = normalise_answer(arguments.get("answer"), arguments.get("citations"), strict=False)
            state.store.set(STORE_ANSWER, output)
            state.store.set(STORE_STATE, "forced")
        else:
            state.store.set(STORE_STATE, "no_answer")
            state.store.set(STORE_FORCED, "the last step brought no final_answer call")
        return state

    return solve
