"""Streamed attempts for self-hosted servers: an abandoned call is really cancelled.

A non-streamed request cannot be taken back: closing its connection leaves llama-cpp-python's server generating to
the end (its tool-choice "auto" text replies ignore ``max_tokens``), so on a single-slot server the next question's
call waits behind it and times out too. A streamed request can: llama-cpp-python checks for a disconnect after each
token and stops generating when the client has gone. So, for self-hosted endpoints (the ``stream`` model option,
``auto`` = on for any base URL other than OpenAI's own API), each attempt is sent with ``stream=True`` and read chunk
by chunk by :func:`streamed_completion`, which **closes** the stream

* when the attempt's deadline passes (its timeout, already cut to what is left of the question's budget): the
  attempt then fails as a timed-out call would (``openai.APITimeoutError``), and the retry policy decides what next;
  the cut happens at the first chunk after the deadline (a server that sends nothing is bounded by the read timeout);
* when the output reaches ``max_tokens``: the reply is kept, with ``finish_reason: "length"``. Tokens are counted from
  the stream's ``usage`` when the server sends one, else one token per chunk that carries text or tool-call arguments
  (llama-cpp-python sends one chunk per token).

The chunks are assembled into the same ``ChatCompletion`` a non-streamed call returns (content, tool calls merged by
index with their ``arguments`` concatenated, finish reason, usage), so smolagents sees no difference. A server that
sends no ``usage`` (llama-cpp-python ignores ``stream_options``) gets an estimate: completion tokens as counted above,
prompt tokens as the messages' characters / :data:`CHARS_PER_TOKEN`; the log says so once per model. A stream that
ends without a finish reason is a reply cut short (retried like a truncated body): llama-cpp-python's server ends a
stream that way when another request arrives, unless started with ``--interrupt_requests False``, which a server
taking concurrent calls (``--workers``, the judge's parallel calls) needs.

Not streamed even with ``stream=auto``: a request with tools and ``tool_choice: "auto"``, which llama-cpp-python's
``chatml-function-calling`` format refuses to stream ("Automatic streaming tool choice is not supported"; its server
then ends the stream empty and stops answering). ``stream=on`` streams those too (vLLM and llama.cpp's own server
stream tool calls); ``stream=off`` streams nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from madqa.agents.models.options import ModelOptions

__all__ = ["CHARS_PER_TOKEN", "assemble", "should_stream", "streamed_completion"]

logger = logging.getLogger(__name__)

#: Characters per token of the prompt estimate when a server streams no usage.
CHARS_PER_TOKEN = 4
_warned_usage: set[str] = set()


def should_stream(kwargs: Mapping[str, Any], options: ModelOptions) -> bool:
    """Whether this request goes out streamed (see the module docstring for ``auto``).

    >>> opts = ModelOptions.resolve({}, api_base="http://127.0.0.1:8080/v1")
    >>> should_stream({"messages": []}, opts), should_stream({"tools": [{}], "tool_choice": "auto"}, opts)
    (True, False)
    """
    if "stream" in kwargs or options.streaming == "off":
        return False
    if options.streaming == "on":
        return True
    return not (kwargs.get("tools") and kwargs.get("tool_choice") in (None, "auto"))


def _text_chars(messages: Any) -> int:
    total = 0
    for message in messages or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(str(p.get("text", ""))) for p in content if isinstance(p, Mapping))
    return total


class _Assembly:
    """The parts of a ChatCompletion gathered from stream chunks."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.role = "assistant"
        self.content: list[str] = []
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.tokens = 0  # chunks with text or arguments (the count when no usage is sent)

    def add(self, chunk: Mapping[str, Any]) -> None:
        for key in ("id", "created", "model", "system_fingerprint"):
            if chunk.get(key) is not None:
                self.head.setdefault(key, chunk[key])
        if chunk.get("usage"):
            self.usage = dict(chunk["usage"])
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            self.role = delta.get("role") or self.role
            counted = False
            if delta.get("content"):
                self.content.append(delta["content"])
                counted = True
            for call in delta.get("tool_calls") or []:
                merged = self.tool_calls.setdefault(
                    call.get("index", 0), {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
                )
                merged["id"] = call.get("id") or merged["id"]
                function = call.get("function") or {}
                merged["function"]["name"] = merged["function"]["name"] or function.get("name") or ""
                if function.get("arguments"):
                    merged["function"]["arguments"] += function["arguments"]
                    counted = True
            self.tokens += counted
            self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def output_tokens(self) -> int:
        return int(self.usage.get("completion_tokens") or self.tokens) if self.usage else self.tokens


def assemble(chunks: list[Mapping[str, Any]], *, prompt_chars: int = 0, finish_reason: str | None = None) -> Any:
    """Stream chunks (as dicts) → the ``ChatCompletion`` a non-streamed call returns (``finish_reason`` overrides).

    >>> head = {"id": "c", "created": 1, "model": "m"}
    >>> done = assemble([{**head, "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
    ...                  {**head, "choices": [{"index": 0, "delta": {"content": "!"}, "finish_reason": "stop"}]}])
    >>> done.choices[0].message.content, done.choices[0].finish_reason, done.usage.completion_tokens
    ('Hi!', 'stop', 2)
    """
    parts = _Assembly()
    for chunk in chunks:
        parts.add(chunk)
    return _build(parts, prompt_chars=prompt_chars, finish_reason=finish_reason)


def _build(parts: _Assembly, *, prompt_chars: int, finish_reason: str | None) -> Any:
    calls = [{**call, "id": call["id"] or f"call_{index}"} for index, call in sorted(parts.tool_calls.items())] or None
    usage = parts.usage or {
        "prompt_tokens": -(-prompt_chars // CHARS_PER_TOKEN),
        "completion_tokens": parts.tokens,
        "total_tokens": -(-prompt_chars // CHARS_PER_TOKEN) + parts.tokens,
    }
    return ChatCompletion.model_validate(
        {
            "id": parts.head.get("id") or "stream",
            "object": "chat.completion",
            "created": parts.head.get("created") or int(time.time()),
            "model": parts.head.get("model") or "",
            "system_fingerprint": parts.head.get("system_fingerprint"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish_reason or parts.finish_reason or ("tool_calls" if calls else "stop"),
                    "logprobs": None,
                    "message": {
                        "role": parts.role,
                        "content": "".join(parts.content) if parts.content or not calls else None,
                        "tool_calls": calls,
                    },
                }
            ],
            "usage": usage,
        }
    )


def streamed_completion(create: Any, kwargs: dict[str, Any], max_tokens: int) -> Any:
    """Send ``kwargs`` through ``create`` (``chat.completions.create``) streamed; read, cut and assemble the reply.

    Raises ``openai.APITimeoutError`` when the attempt's ``timeout`` passes before the reply ends (the stream closed).
    """
    timeout = kwargs.get("timeout")
    deadline = None if timeout is None else time.monotonic() + float(timeout)
    stream = create(**kwargs, stream=True, stream_options={"include_usage": True})
    parts = _Assembly()
    cut: str | None = None
    chunks = 0  # all chunks, role and usage ones included
    try:
        for chunk in stream:
            chunks += 1
            parts.add(chunk.model_dump(exclude_none=True))
            if deadline is not None and time.monotonic() > deadline:
                # Closing the HTTP stream is what makes the server stop generating (llama-cpp-python checks).
                stream.close()
                raise openai.APITimeoutError(request=stream.response.request)
            if parts.output_tokens() >= max_tokens and parts.finish_reason is None:
                cut = "length"
                break
    finally:
        stream.close()
    if cut is None and parts.finish_reason is None:
        # A stream that ends without a finish reason is a reply cut short: llama-cpp-python's when it cannot stream
        # the request (no chunk at all), or when another request interrupted it (its interrupt_requests setting).
        raise openai.APIResponseValidationError(
            response=stream.response,
            body=None,
            message=f"the server ended the stream without a finish reason after {chunks} chunk(s)",
        )
    model = str(kwargs.get("model"))
    if parts.usage is None and model not in _warned_usage:
        _warned_usage.add(model)
        logger.info("model %s streams no usage: token counts are estimated (see madqa.agents.models.streaming)", model)
    return _build(parts, prompt_chars=_text_chars(kwargs.get("messages")), finish_reason=cut)
