"""API models that speak to real servers: request shapes a server accepts, one retry policy, per-call time limits.

smolagents' ``OpenAIServerModel`` and ``LiteLLMModel`` send what OpenAI's own API accepts. Self-hosted servers are
stricter (llama-cpp-python's server refuses list content in a system message, asserts on ``tool_choice:
"required"`` and refuses a ``json_schema`` response format), so :func:`adapt_request` rewrites each request to the
:class:`~madqa.agents.models.options.ModelOptions` of the endpoint. Everything else is the libraries' own machinery:

* **Retries** are the SDKs': the openai client's ``max_retries`` (exponential backoff with jitter, ``Retry-After``
  honoured, on 408/409/429/5xx, dropped connections and timeouts) and LiteLLM's ``num_retries``. smolagents' own
  rate-limit retryer (3 attempts, 60 s waits, on top of the SDK's) is replaced by one that retries only what the
  SDKs do not: a 200 reply whose body is cut short or not JSON (:func:`is_truncated_reply`).
* **Time**: each attempt has the ``timeout`` option as its HTTP timeout, shortened to what is left of the question's
  wall-clock budget (:func:`madqa.agents.harness.deadline.remaining`), with no more retries than fit in it
  (:func:`attempt_budget`); when nothing is left the call is not sent. On a
  timeout the client closes the connection, so an abandoned call stops costing this process anything. A server may
  finish a non-streamed generation anyway (llama-cpp-python's does): the ``max_tokens`` cap bounds that.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from smolagents import LiteLLMModel, OpenAIServerModel
from smolagents.utils import Retrying

from madqa.agents.harness.deadline import check, remaining
from madqa.agents.harness.errors import chain
from madqa.agents.models.llamacpp import bounded_schema
from madqa.agents.models.options import ModelOptions, Profile

logger = logging.getLogger(__name__)

#: Longest string and array a structured reply may hold when a schema goes to a server as ``json_object``.
SCHEMA_STRING_CHARS = 1000
SCHEMA_ARRAY_ITEMS = 50

__all__ = ["CompatLiteLLMModel", "CompatOpenAIModel", "adapt_request", "attempt_budget", "is_truncated_reply"]


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


def is_truncated_reply(exc: BaseException) -> bool:
    """A reply that arrived but cannot be read (body cut short, not JSON): worth another attempt.

    The SDKs retry statuses and connection errors themselves; this is the case they leave out.
    """
    for err in chain(exc):
        if isinstance(err, json.JSONDecodeError) or type(err).__name__ in (
            "APIResponseValidationError",
            "RemoteProtocolError",
            "IncompleteRead",
            "JSONDecodeError",
        ):
            return True
    return False


def attempt_budget(options: ModelOptions) -> tuple[float, int]:
    """``(timeout per attempt, retries)`` for the next call, within what is left of the question's budget.

    Without a budget: the options'. With one, no attempt outlives it and no retry is planned that could not start
    before it ends (the SDK would otherwise retry a timed-out attempt with a fresh timeout); a spent budget raises
    :class:`~madqa.agents.harness.errors.QuestionTimeoutError`, so the call is not sent.
    """
    left = remaining()
    if left is None:
        return options.timeout, options.retries
    check()
    timeout = max(0.5, min(options.timeout, left))
    return timeout, min(options.retries, int(left // timeout) - 1) if left > timeout else 0


class _Compat:
    """The shared part of both API models (a mixin before the smolagents class)."""

    options: ModelOptions
    profile: Profile

    def _setup(self, options: ModelOptions, profile: Profile) -> None:
        self.options, self.profile = options, profile
        # Replaces smolagents' 429 retryer: statuses and connections are the SDK's to retry (see module docstring).
        self.retryer = Retrying(
            max_attempts=options.retries + 1,
            wait_seconds=1.0,
            exponential_base=2.0,
            jitter=True,
            retry_predicate=is_truncated_reply,
            reraise=True,
            before_sleep_logger=(logger, logging.WARNING),
        )

    def _prepare_completion_kwargs(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        prepared: dict[str, Any] = super()._prepare_completion_kwargs(*args, **kwargs)  # type: ignore[misc]
        return adapt_request(prepared, self.options, self.profile)


class _BudgetedClient:
    """The openai client as smolagents calls it (``client.chat.completions.create``), each call within its budget."""

    def __init__(self, client: Any, options: ModelOptions) -> None:
        self._client, self._options = client, options
        self.chat = self
        self.completions = self
        self.call_seconds: list[float] = []  # wall time of each call, retries included (`madqa bench provider`)

    def create(self, **kwargs: Any) -> Any:
        timeout, retries = attempt_budget(self._options)
        start = time.perf_counter()
        try:
            return self._client.with_options(timeout=timeout, max_retries=retries).chat.completions.create(**kwargs)
        finally:
            self.call_seconds.append(time.perf_counter() - start)

    def close(self) -> None:
        self._client.close()


class CompatOpenAIModel(_Compat, OpenAIServerModel):
    """``OpenAIServerModel`` with :func:`adapt_request`, the SDK's retries and timeouts (``openai:`` specs)."""

    def __init__(self, model_id: str, options: ModelOptions, profile: Profile, api_key: str) -> None:
        """Build the client with the options' timeout and retry count."""
        super().__init__(
            model_id=model_id,
            api_base=options.api_base,
            api_key=api_key,
            client_kwargs={"timeout": options.timeout, "max_retries": options.retries},
            flatten_messages_as_text=options.content == "text",
            **options.sampling(),
        )
        self._setup(options, profile)
        self.client = _BudgetedClient(self.client, options)


class CompatLiteLLMModel(_Compat, LiteLLMModel):
    """``LiteLLMModel`` with :func:`adapt_request`, LiteLLM's retries and timeouts (``litellm:`` specs)."""

    def __init__(self, model_id: str, options: ModelOptions, profile: Profile, api_key: str | None) -> None:
        """Keep the options (LiteLLM gets the timeout and retry count with each call)."""
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
        out["timeout"], out["num_retries"] = attempt_budget(self.options)
        return out
