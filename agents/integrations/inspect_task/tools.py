"""The task's inspect tools, over the search agent's own: ``search_documents(query)`` and ``final_answer``.

``search_documents`` is :class:`madqa.agents.search_loop.tools.SearchDocumentsTool` (same index, query syntax and
limits,
top-k, observation text, error observations), run in a worker thread; with ``observe="image"`` the result pages go
to the model as images (JPEG from :class:`~madqa.agents.corpus.render.PageRenderer`) after the text listing them.
``final_answer`` checks its arguments with :func:`madqa.agents.harness.answer.normalise_answer` (strict: a malformed
answer is a tool error the model can fix). Both write what a results line needs into the sample's store
(:mod:`.lines`), at once, so a sample cut short by a limit keeps its searches.
"""

from __future__ import annotations

import base64
from typing import Any

import anyio
from inspect_ai.tool import ContentImage, ContentText, ToolDef, ToolError, ToolParams, ToolResult
from inspect_ai.util import store

from madqa.agents.harness.answer import AnswerFormatError, FinalAnswerTool, normalise_answer
from madqa.agents.integrations.inspect_task.lines import STORE_ANSWER, STORE_SEARCHES
from madqa.agents.search_loop.tools import SearchDocumentsTool

FINAL_ANSWER = "final_answer"
SEARCH = "search_documents"


def _params(inputs: dict[str, Any]) -> ToolParams:
    """smolagents' ``inputs`` (JSON schema per argument) as inspect's tool parameters, all required."""
    return ToolParams.model_validate({"type": "object", "properties": inputs, "required": list(inputs)})


def search_tool(search: SearchDocumentsTool) -> ToolDef:
    """``search_documents`` over one sample's :class:`SearchDocumentsTool` (its ``history`` is that sample's)."""

    async def execute(query: str) -> ToolResult:
        text = await anyio.to_thread.run_sync(search.forward, query)
        store().set(STORE_SEARCHES, [h.as_dict() for h in search.history])
        images, search.pending_images = list(search.pending_images), []
        if not images:
            return str(text)
        encoded = [base64.b64encode(search.renderer.encode(im)).decode("ascii") for im in images]
        mime = search.renderer.mime_type
        return [ContentText(text=str(text)), *(ContentImage(image=f"data:{mime};base64,{e}") for e in encoded)]

    # max_output=0: the page texts are already cut to page_chars each (inspect's default cap is 16 KB in all).
    return ToolDef(
        execute, name=SEARCH, description=search.description, parameters=_params(dict(search.inputs)), max_output=0
    )


def final_answer_tool() -> ToolDef:
    """``final_answer(answer, citations)``: the answer, checked and normalised, is kept in the sample's store."""

    async def execute(answer: list[str], citations: list[dict[str, Any]]) -> ToolResult:
        try:
            output = normalise_answer(answer, citations, strict=True)
        except AnswerFormatError as exc:
            raise ToolError(str(exc)) from None
        store().set(STORE_ANSWER, output)
        return "Final answer recorded: " + ", ".join(output["answer"] or ["(empty)"])

    return ToolDef(
        execute,
        name=FINAL_ANSWER,
        description=FinalAnswerTool.description,
        parameters=_params(dict(FinalAnswerTool.inputs)),
    )
