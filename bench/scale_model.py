"""The scripted model of ``madqa bench scale``: a fixed latency per call, two searches, then an answer.

``py:madqa.bench.scale_model:sleepy_model`` builds it (a model spec the runner and Ray workers resolve by name). Each
call sleeps ``MADQA_BENCH_LATENCY`` seconds (default 0.5; the variable reaches Ray workers, as every ``MADQA_*``
does), so a question costs exactly :data:`CALLS` model calls of known latency and the rest of the wall time is the
harness's.
"""

from __future__ import annotations

import os
import time
from typing import Any

from smolagents import ChatMessage, MessageRole, Model
from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction
from smolagents.monitoring import TokenUsage

#: Model calls per question: search, search, final answer.
CALLS = 3


class SleepyModel(Model):
    """A text-only model that waits ``latency`` seconds per call, then searches twice and answers."""

    def __init__(self, latency: float | None = None) -> None:
        """``latency``: seconds per call (default ``MADQA_BENCH_LATENCY`` or 0.5)."""
        super().__init__(model_id="bench-sleepy", flatten_messages_as_text=True)
        self.latency = float(os.environ.get("MADQA_BENCH_LATENCY", "0.5")) if latency is None else latency

    def generate(
        self,
        messages: list[Any],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, Any] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """Sleep, then the next step: a search while fewer than ``CALLS - 1`` tool results came back, else answer."""
        time.sleep(self.latency)
        seen = sum(1 for m in messages if _role(m) in ("tool-response", "tool_response", "tool"))
        tools = {t.name for t in tools_to_call_from or []}
        if seen < CALLS - 1 and "search_documents" in tools:
            name, args = "search_documents", {"query": f"invoice total {seen}"}
        else:
            name, args = "final_answer", {"answer": ["17.85"], "citations": []}
        call = ChatMessageToolCall(
            id=f"call_{seen}", type="function", function=ChatMessageToolCallFunction(name=name, arguments=args)
        )
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=[call],
            token_usage=TokenUsage(input_tokens=100, output_tokens=10),
        )


def _role(message: Any) -> str:
    role = message.get("role") if isinstance(message, dict) else getattr(message, "role", "")
    return str(getattr(role, "value", role))


def sleepy_model(**_: Any) -> SleepyModel:
    """The factory of ``py:madqa.bench.scale_model:sleepy_model``."""
    return SleepyModel()
