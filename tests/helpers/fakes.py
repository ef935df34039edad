"""The one scripted smolagents model of the tests (no network, no weights), and reply builders for it.

:class:`ScriptedModel` replays a script: each call takes the next item (the last one repeats). An item is

* a string: a reply without tool call (the code agent's code block, an extraction's JSON, free text);
* ``(tool name, arguments)``: a tool call (the search agent);
* a callable ``reply(text, tools) -> str | (name, arguments)``: decided from the flattened input ``text`` and the
  names of the tools offered (stateless fakes for the runner and the Space).

Every call is recorded in :attr:`ScriptedModel.calls`. A ``py:MODULE:NAME`` model spec names a factory function in a
test module that returns one of these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from smolagents import ChatMessage, MessageRole, Model
from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction
from smolagents.monitoring import TokenUsage

ToolCall = tuple[str, dict[str, Any]]
Reply = str | ToolCall | Callable[[str, list[str]], "str | ToolCall"]
#: Token usage of a call: fixed, or computed from (flattened input, number of this call); ``None``: not reported.
Usage = tuple[int, int] | Callable[[str, int], tuple[int, int]] | None


class ScriptedModel(Model):
    """A smolagents ``Model`` that replays ``script`` and records each input.

    Args:
        script: the replies, in order (the last one repeats).
        text_only: a text-only model (``flatten_messages_as_text``, as the local model: the search agent then
            shows page texts); else page images stay in the recorded messages as image URLs.
        usage: token usage per call; default ``(100 × call number, 7)``.
        model_id: the model's id.
        raw: the provider's raw reply of call ``n`` (``ChatMessage.raw``), e.g. an OpenAI-style
            ``{"usage": {"prompt_tokens_details": {"cached_tokens": …}}}``; default: none (as a local model).

    Attributes:
        calls: per call, ``messages`` (as prepared for a provider), ``text`` (flattened), ``tools`` (names
            offered) and ``response_format``.
    """

    def __init__(
        self,
        script: list[Reply],
        *,
        text_only: bool = False,
        usage: Usage = lambda text, n: (100 * n, 7),
        model_id: str = "scripted",
        raw: Callable[[int], Any] | None = None,
    ) -> None:
        """Keep the script."""
        super().__init__(model_id=model_id, flatten_messages_as_text=text_only)
        self.script, self.usage, self.raw = list(script), usage, raw
        self.calls: list[dict[str, Any]] = []

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        """The next reply of the script."""
        prepared = self._prepare_completion_kwargs(
            messages,
            tools_to_call_from=tools_to_call_from,
            convert_images_to_image_urls=not self.flatten_messages_as_text,
        )
        text = "\n".join(_text(m["content"]) for m in prepared["messages"])
        tools = [t.name for t in tools_to_call_from or []]
        self.calls.append(
            {"messages": prepared["messages"], "text": text, "tools": tools, "response_format": response_format}
        )
        item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        reply = item(text, tools) if callable(item) else item
        usage = self.usage(text, len(self.calls)) if callable(self.usage) else self.usage
        token_usage = TokenUsage(*usage) if usage is not None else None
        raw = self.raw(len(self.calls)) if self.raw is not None else None
        if isinstance(reply, str):
            return ChatMessage(role=MessageRole.ASSISTANT, content=reply, token_usage=token_usage, raw=raw)
        name, args = reply
        call = ChatMessageToolCall(
            id=f"call_{len(self.calls)}",
            type="function",
            function=ChatMessageToolCallFunction(name=name, arguments=args),
        )
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content=f"step {len(self.calls)}",
            tool_calls=[call],
            token_usage=token_usage,
            raw=raw,
        )


def _text(content: Any) -> str:
    """A message's text (the text parts of a multimodal message)."""
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if part.get("type") == "text")
    return str(content)


def code(src: str) -> str:
    """A code agent's reply running ``src``."""
    return f"Thought: next.\n```python\n{src}\n```"


def shown_pages(text: str) -> list[tuple[str, int]]:
    """The ``(document, page)`` pairs the search tool has shown so far (``file X, page N``)."""
    return [(d, int(p)) for d, p in re.findall(r"file (\S+), page (\d+)", text)]


def search_then_cite(answer: str, query: str) -> Callable[[str, list[str]], ToolCall]:
    """A search agent's reply: search ``query`` once, then answer ``answer`` citing the first page shown."""

    def reply(text: str, tools: list[str]) -> ToolCall:
        shown = shown_pages(text)
        if "search_documents" in tools and not shown:
            return "search_documents", {"query": query}
        cites = [{"document": d, "page": p} for d, p in shown[:1]]
        return "final_answer", {"answer": [answer], "citations": cites}

    return reply


#: The role an mdoc sub-agent's prompt names (general, critical, text, image or summarising).
MDOC_ROLE = re.compile(r"You are the (general|critical|text|image|summarising) agent")


def mdoc_reply(role: str, text: str, note: str = "") -> str:
    """An mdoc sub-agent's reply: the critic's cues, the summariser's final answer citing the first page the agents
    saw, and ``"<role> answer"`` (plus ``note``) from the others."""
    if role == "critical":
        return json.dumps({"text": "cue", "image": "cue"})
    if role == "summarising":
        first = re.search(r"Pages the agents saw: file (\S+), page (\d+)", text)
        cites = [{"document": first.group(1), "page": int(first.group(2))}] if first else []
        return "Final:\n" + json.dumps({"answer": ["17.85"], "citations": cites})
    return f"{role} answer{note}"
