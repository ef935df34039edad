"""API models that speak to real servers: request shapes a server accepts, one retry policy, per-call time limits.

smolagents' ``OpenAIServerModel`` and ``LiteLLMModel`` send what OpenAI's own API accepts. Self-hosted servers are
stricter (llama-cpp-python's server refuses list content in a system message, asserts on ``tool_choice:
"required"`` and refuses a ``json_schema`` response format), so :func:`adapt_request` rewrites each request to the
:class:`~madqa.agents.models.options.ModelOptions` of the endpoint. Everything else is the libraries' own machinery:

* **Retries** are one policy, ours (:mod:`madqa.agents.models.retry_policy`): the SDKs' own retries are off (the
  openai client's ``max_retries=0``, LiteLLM's ``num_retries=0`` and ``max_retries=0``) and smolagents' rate-limit
  retryer is replaced, so every HTTP attempt and every wait is counted in the question's results line (``calls``).
  A transient failure (429, 5xx, a dropped connection, a truncated body) is retried whenever the wait plus a useful
  attempt fits in what is left of the question's budget.
* **Time**: each attempt has the ``timeout`` option as its HTTP timeout, shortened to what is left of the question's
  wall-clock budget (:func:`madqa.agents.harness.deadline.remaining`); when nothing is left the call is not sent. On
  a timeout the client closes the connection, so an abandoned call stops costing this process anything. A server may
  finish a non-streamed generation anyway (llama-cpp-python's does): the ``max_tokens`` cap bounds that, and on
  self-hosted endpoints (``openai:`` specs) each attempt is streamed and closed at its deadline or at ``max_tokens``
  (:mod:`madqa.agents.models.streaming`), which stops the server's generation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from smolagents import LiteLLMModel, OpenAIServerModel

from madqa.agents.models.llamacpp import bounded_schema
from madqa.agents.models.options import ModelOptions, Profile
from madqa.agents.models.retry_policy import RetryPolicy, is_truncated_reply
from madqa.agents.models.streaming import should_stream, streamed_completion

logger = logging.getLogger(__name__)

#: Longest string and array a structured reply may hold when a schema goes to a server as ``json_object``.
SCHEMA_STRING_CHARS = 1000
SCHEMA_ARRAY_ITEMS = 50

__all__ = ["CompatLiteLLMModel", "CompatOpenAIModel", "adapt_request", "is_truncated_reply"]


def _text_of(content: Any) -> Any:
    """List content with text parts only → one string (a system message must be a string for some servers)."""
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        return "\n".join(str(p.get("text", "")) for p in content)
    return content


def adapt_request(kwargs: dict[str, Any], options: ModelOptions, profile: Profile) -> dict[str, Any]:
    """Rewrite prepared completion arguments to what the endpoint accepts (pure; returns a new mapping).

    * a system message's text parts become one string (valid everywhere);
    * smolagents' default ``tool_choice: "required"`` becomes the ``tool_choice`` option, except that with ``auto``
      and a single tool it becomes that function, forced (a forced function, as a dict, is always kept); ``none``
      drops the tools (the agents' prompts describe them, and smolagents reads a tool call written as JSON text);
    * a ``json_schema`` response format becomes ``{"type": "json_object", "schema": …}`` with its strings and
      arrays bounded (llama-cpp-python and vLLM read the schema; OpenAI gets no schema key) or is dropped, per the
      ``response_format`` option;
    * the generation cap is ``max_completion_tokens`` on OpenAI's API (its reasoning models refuse ``max_tokens``)
      and ``max_tokens`` elsewhere.

    >>> opts = ModelOptions.resolve({}, api_base="http://127.0.0.1:8080/v1")
    >>> out = adapt_request({"messages": [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]}],
    ...                      "tools": [{}, {}], "tool_choice": "required"}, opts, "compatible")
    >>> out["messages"][0]["content"], out["tool_choice"], out["max_tokens"]
    ('Be brief.', 'auto', 1024)
    """
    out = dict(kwargs)
    out["messages"] = [
        {**m, "content": _text_of(m.get("content"))} if m.get("role") == "system" else m
        for m in out.get("messages", [])
    ]
    if "tools" in out:
        choice = out.get("tool_choice")
        if choice is None or choice == "required":
            tools = out["tools"]
            if options.tool_choice == "none":
                out.pop("tools")
                out.pop("tool_choice", None)
            elif options.tool_choice == "auto" and choice == "required" and len(tools) == 1:
                # "required" with one tool is that function, forced: every server takes this form, and
                # llama-cpp-python's then honours max_tokens (its "auto" path generates up to the context's end).
                out["tool_choice"] = {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
            else:
                out["tool_choice"] = options.tool_choice
    fmt = out.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" and options.response_format != "json_schema":
        if options.response_format == "none":
            out.pop("response_format")
        else:
            schema = (fmt.get("json_schema") or {}).get("schema")
            # Bounded strings: a server that decodes under the schema (llama-cpp-python) then always reaches its
            # last field (a judge's verdict after its reasoning) within the generation cap.
            out["response_format"] = (
                {"type": "json_object"}
                if profile == "openai" or schema is None
                else {
                    "type": "json_object",
                    "schema": bounded_schema(schema, max_chars=SCHEMA_STRING_CHARS, max_items=SCHEMA_ARRAY_ITEMS),
                }
            )
    cap = "max_completion_tokens" if profile == "openai" else "max_tokens"
    out.setdefault(cap, options.max_tokens)
    return out


class _Compat:
    """The shared part of both API models (a mixin before the smolagents class)."""

    options: ModelOptions
    profile: Profile

    def _setup(self, options: ModelOptions, profile: Profile) -> None:
        self.options, self.profile = options, profile
        # Replaces smolagents' 429 retryer (3 attempts, 60 s waits): the one policy, which sets each attempt's timeout.
        self.retryer = RetryPolicy(options)

    def _prepare_completion_kwargs(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        prepared: dict[str, Any] = super()._prepare_completion_kwargs(*args, **kwargs)  # type: ignore[misc]
        return adapt_request(prepared, self.options, self.profile)


class _TimedClient:
    """The openai client as smolagents calls it (``client.chat.completions.create``), each HTTP attempt timed, and
    streamed where the ``stream`` option says so (:mod:`madqa.agents.models.streaming`)."""

    def __init__(self, client: Any, options: ModelOptions) -> None:
        self._client = client
        self._options = options
        self.chat = self
        self.completions = self
        self.call_seconds: list[float] = []  # wall time of each HTTP attempt (`madqa bench provider`)

    def create(self, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            if should_stream(kwargs, self._options):
                cap = kwargs.get("max_tokens") or kwargs.get("max_completion_tokens") or self._options.max_tokens
                return streamed_completion(self._client.chat.completions.create, kwargs, int(cap))
            return self._client.chat.completions.create(**kwargs)
        finally:
            self.call_seconds.append(time.perf_counter() - start)

    def close(self) -> None:
        self._client.close()


class CompatOpenAIModel(_Compat, OpenAIServerModel):
    """``OpenAIServerModel`` with :func:`adapt_request` and the retry policy (``openai:`` specs)."""

    def __init__(self, model_id: str, options: ModelOptions, profile: Profile, api_key: str) -> None:
        """Build the client with the options' timeout and no retries of its own (the policy's are counted)."""
        super().__init__(
            model_id=model_id,
            api_base=options.api_base,
            api_key=api_key,
            client_kwargs={"timeout": options.timeout, "max_retries": 0},
            flatten_messages_as_text=options.content == "text",
            **options.sampling(),
        )
        self._setup(options, profile)
        self.client = _TimedClient(self.client, options)


class CompatLiteLLMModel(_Compat, LiteLLMModel):
    """``LiteLLMModel`` with :func:`adapt_request` and the retry policy (``litellm:`` specs)."""

    def __init__(self, model_id: str, options: ModelOptions, profile: Profile, api_key: str | None) -> None:
        """Keep the options (the policy gives LiteLLM each attempt's timeout)."""
        super().__init__(
            model_id=model_id,
            api_base=options.api_base,
            api_key=api_key,
            flatten_messages_as_text=options.content == "text",
            **options.sampling(),
        )
        self._setup(options, profile)

    def _prepare_completion_kwargs(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        out = super()._prepare_completion_kwargs(*args, **kwargs)
        # LiteLLM retries on its own twice over (its num_retries, and its openai client's max_retries, 2 by default):
        # both off, so the policy's attempts are all there are.
        out["num_retries"] = out["max_retries"] = 0
        return out
