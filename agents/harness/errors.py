"""Why a question failed: the kind of a results line's ``error``, and its short message.

A line's ``error_kind`` is one of :data:`ERROR_KINDS`, or ``None`` when the line has no error:

* ``provider``: the model server answered with an error (an HTTP error status: openai's ``APIStatusError``,
  litellm's and huggingface_hub's errors, an ``httpx.HTTPStatusError``), or the model call raised something not
  recognised here (the model's own mistakes never raise: they end as ``model``);
* ``transport``: the call did not get through (connection refused or reset, dropped connection, truncated body, a
  read timeout of one call);
* ``timeout``: the question's wall-clock budget ran out (``--question-timeout``, :class:`QuestionTimeoutError`);
* ``worker``: the code agent's worker crashed or could not start, or the Ray cluster gave up on the question;
* ``search``: a search ran past its wall-clock safety net (``--search-timeout``,
  :class:`madqa.agents.corpus.search.SearchTimeoutError`): the machine or the engine failed, not the query (queries are
  bounded by work limits that do not depend on the machine's speed, and the model never sees this);
* ``model``: the model's own failure, no final answer by the last step or a malformed one (``final_state ==
  "no_answer"``), and a conversation that outgrew the model's context window (the server refuses it with "maximum
  context length"): that is the system under test running out of room, and a rerun that happens to take a shorter
  path would be the same best-of-N.

All but ``model`` are infrastructure failures (:data:`RETRYABLE`), which ``--retry-errors`` runs again: rerunning a
model's own failure would be a best-of-N for the failed items and bias the scores.

:func:`classify` walks the exception chain (``__cause__`` and ``__context__``: smolagents wraps a failed model call
in ``AgentGenerationError``) and matches every class of each exception's MRO by module and name against
:data:`TABLE`, so the optional SDKs (openai, litellm, httpx, huggingface_hub, ray) are never imported here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = [
    "ERROR_KINDS",
    "MAX_ERROR_CHARS",
    "RETRYABLE",
    "TABLE",
    "QuestionTimeoutError",
    "RetryBudgetError",
    "chain",
    "classify",
    "http_status",
    "kind_of_line",
    "server_reason",
    "short_error",
]

ERROR_KINDS: tuple[str, ...] = ("provider", "transport", "timeout", "worker", "search", "model")
RETRYABLE: frozenset[str] = frozenset({"provider", "transport", "timeout", "worker", "search"})
#: Characters of an exception's message kept in a line's ``error`` (providers send 18-19 k character bodies).
MAX_ERROR_CHARS = 300
#: Characters of a server's own error body kept in a line's ``error`` when the SDK's message leaves it out.
MAX_REASON_CHARS = 200


class QuestionTimeoutError(TimeoutError):
    """The question's wall-clock budget (``--question-timeout``) ran out; kind ``timeout``."""

    def __init__(self, seconds: float) -> None:
        """``seconds``: the budget that ran out."""
        super().__init__(f"question took longer than {seconds:g} s")
        self.seconds = seconds


class RetryBudgetError(RuntimeError):
    """A transient failure worth a retry, but the wait before it (backoff or ``Retry-After``) plus a useful attempt
    does not fit in what is left of the question's budget; kind ``provider`` (the server asked for the wait)."""


#: (kind, top-level module, class names): an exception whose MRO has a class of that module and name has that kind.
#: Rows are tried in order, so a more specific row comes first (a timeout of one call before its SDK's base error).
TABLE: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("timeout", "madqa", frozenset({"QuestionTimeoutError"})),
    ("provider", "madqa", frozenset({"RetryBudgetError"})),
    ("worker", "madqa", frozenset({"ReplWorkerError"})),
    ("search", "madqa", frozenset({"SearchTimeoutError"})),
    ("worker", "ray", frozenset({"RayError"})),  # the cluster gave up: actor died, node lost, object lost
    # openai (litellm's exceptions subclass these): a status error, or no response at all (APITimeoutError too).
    ("transport", "openai", frozenset({"APIConnectionError"})),
    ("provider", "openai", frozenset({"APIStatusError", "APIResponseValidationError"})),
    # httpx (openai, litellm) and httpx2 (huggingface_hub): RequestError covers connect/read/protocol/decoding.
    ("transport", "httpx", frozenset({"RequestError", "StreamError"})),
    ("provider", "httpx", frozenset({"HTTPStatusError"})),
    ("transport", "httpx2", frozenset({"RequestError", "StreamError"})),
    ("provider", "httpx2", frozenset({"HTTPStatusError"})),
    ("transport", "huggingface_hub", frozenset({"InferenceTimeoutError"})),
    ("provider", "huggingface_hub", frozenset({"HfHubHTTPError", "TextGenerationError", "OverloadedError"})),
    ("transport", "litellm", frozenset({"APIConnectionError", "Timeout"})),
    ("provider", "litellm", frozenset({"APIError"})),
    (
        "transport",
        "requests",
        frozenset({"ConnectionError", "Timeout", "ChunkedEncodingError", "ContentDecodingError"}),
    ),
    ("provider", "requests", frozenset({"HTTPError"})),
    ("transport", "urllib3", frozenset({"HTTPError"})),  # ProtocolError, ReadTimeoutError, NewConnectionError, …
    ("transport", "aiohttp", frozenset({"ClientConnectionError", "ClientPayloadError", "ServerTimeoutError"})),
    ("provider", "aiohttp", frozenset({"ClientResponseError"})),
    ("transport", "http", frozenset({"HTTPException"})),  # http.client: IncompleteRead, RemoteDisconnected
    ("transport", "builtins", frozenset({"ConnectionError", "TimeoutError"})),  # refused/reset/broken pipe, socket
)
#: The kind of an exception escaping the agent that nothing in :data:`TABLE` recognises (see the module docstring).
FALLBACK = "provider"


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then its causes and contexts (outermost first, each once)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def _row(exc: BaseException) -> int | None:
    """The index of the first :data:`TABLE` row that matches ``exc``, else ``None``."""
    classes = [(c.__module__.split(".")[0], c.__name__) for c in type(exc).__mro__]
    for index, (_, module, names) in enumerate(TABLE):
        if any(m == module and n in names for m, n in classes):
            return index
    return None


def http_status(exc: BaseException) -> int | None:
    """An HTTP status carried by an exception of an SDK not in the table (``status_code``, ``response``)."""
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool) and 400 <= status < 600:
            return status
    return None


#: How servers word a request that does not fit the model's context (OpenAI, vLLM, llama-cpp-python, llama.cpp's
#: server, LiteLLM's ContextWindowExceededError).
CONTEXT_OVERFLOW = re.compile(
    r"maximum context length|context_length_exceeded|exceeds? (the )?context window|"
    r"ContextWindowExceeded|context size has been exceeded",
    re.IGNORECASE,
)


def culprit(exc: BaseException) -> tuple[str, BaseException]:
    """The kind of ``exc`` and the exception of its chain that decided it (the one worth showing).

    A timeout anywhere in the chain wins (the budget is why the call was cut), then a context-window overflow
    (``model``); otherwise the outermost exception that
    the table or an HTTP status recognises; otherwise :data:`FALLBACK` and the innermost cause (the original error
    under smolagents' wrapper).
    """
    links = list(chain(exc))
    rows = [_row(e) for e in links]
    for e, row in zip(links, rows, strict=True):
        if row is not None and TABLE[row][0] == "timeout":
            return "timeout", e
    for e in links:
        if CONTEXT_OVERFLOW.search(f"{type(e).__name__}: {e}"):
            return "model", e
    for e, row in zip(links, rows, strict=True):
        if row is not None:
            return TABLE[row][0], e
        if http_status(e) is not None:
            return "provider", e
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    return FALLBACK, root


def recognised_kind(exc: BaseException) -> str | None:
    """The kind of ``exc`` when its chain holds a recognised infrastructure failure (the table or an HTTP status),
    else ``None``: e.g. why an agent's forced last call failed (a provider error is infrastructure, a malformed
    reply is the model's).

    >>> recognised_kind(ValueError("the model called [] instead of final_answer")) is None
    True
    """
    links = list(chain(exc))
    if any(_row(e) is not None or http_status(e) is not None for e in links):
        return culprit(exc)[0]
    return None


def classify(exc: BaseException) -> str:
    """The ``error_kind`` of an exception that ended a question (one of :data:`ERROR_KINDS`; ``model`` only for a
    context-window overflow).

    >>> classify(ConnectionRefusedError(111, "Connection refused"))
    'transport'
    >>> classify(QuestionTimeoutError(60))
    'timeout'
    """
    return culprit(exc)[0]


def cut(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters (then `` …``)."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[:limit].rstrip() + " …"


def _body_text(body: Any) -> str | None:
    """The human part of an error body: ``error.message``, ``message``, ``detail`` or ``error`` when it has one."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        for holder in (inner, body):
            if isinstance(holder, Mapping):
                for key in ("message", "detail", "error"):
                    if isinstance(holder.get(key), str) and holder[key].strip():
                        return str(holder[key])
            elif isinstance(holder, str) and holder.strip():
                return holder
        return str(body) if body else None
    return str(body) if isinstance(body, (str, bytes)) and body else None


def server_reason(exc: BaseException) -> str | None:
    """The server's own words in an HTTP error of ``exc``'s chain: its body's message, cut to
    :data:`MAX_REASON_CHARS` (the openai SDK keeps only an OpenAI-shaped ``error.message`` in its text, so e.g.
    ``{"detail": "Server is pinned to …"}`` would otherwise be lost).

    >>> class Refused(Exception):
    ...     body = {"detail": "Server is pinned to 'a'; requested 'b'"}
    >>> server_reason(Refused("Error code: 400"))
    "Server is pinned to 'a'; requested 'b'"
    """
    for err in chain(exc):
        body = getattr(err, "body", None)
        text = _body_text(body.decode("utf-8", "replace") if isinstance(body, bytes) else body)
        if text is None and http_status(err) is not None:
            try:  # an httpx response that was read; a streamed one that was not cannot be read now
                raw = getattr(getattr(err, "response", None), "text", None)
            except Exception:  # noqa: BLE001 - no body to show is fine
                raw = None
            if isinstance(raw, str) and raw.strip():
                try:
                    text = _body_text(json.loads(raw))
                except ValueError:
                    text = raw
        if text:
            return cut(text, MAX_REASON_CHARS)
    return None


def short_error(exc: BaseException) -> str:
    """``Type: message`` of the exception that explains ``exc`` (:func:`culprit`), the message cut to
    :data:`MAX_ERROR_CHARS`, then the server's reason (:func:`server_reason`) when the message does not hold it.

    >>> short_error(ValueError("x" * 500))[-5:]
    'xxx …'
    """
    shown = culprit(exc)[1]
    text = f"{type(shown).__name__}: {cut(str(shown))}"
    reason = server_reason(shown)
    if reason and reason.rstrip(" …") not in cut(str(shown)):
        text += f" (server said: {reason})"
    return text


#: Type names, as written at the start of an old line's ``error`` text, and the kind they mean (lines written before
#: ``error_kind`` existed). Anything else with an error is a failed call (``provider``).
_TEXT_KINDS = {name: kind for kind, _, names in TABLE for name in names} | {
    "ReadTimeout": "transport",
    "ConnectTimeout": "transport",
    "ConnectError": "transport",
    "RemoteProtocolError": "transport",
    "APITimeoutError": "transport",
    "ConnectionRefusedError": "transport",
    "ConnectionResetError": "transport",
    "RemoteDisconnected": "transport",
    "IncompleteRead": "transport",
}


def kind_of_line(record: Mapping[str, Any]) -> str | None:
    """A results line's ``error_kind``: the recorded one, or for a line written before it existed, read
    conservatively from ``final_state`` and ``error`` (a missing final answer is always ``model``, never retried).

    >>> kind_of_line({"error": "no final answer after 10 steps: ValueError: x", "final_state": "no_answer"})
    'model'
    >>> kind_of_line({"error": "AgentGenerationError: Error while generating output: Connection error.",
    ...               "final_state": "error"})
    'provider'
    """
    if "error_kind" in record:
        kind = record["error_kind"]
        return kind if kind in ERROR_KINDS else (None if not record.get("error") else "model")
    error = str(record.get("error") or "")
    if record.get("final_state") == "no_answer" or error.startswith("no final answer"):
        return "model"
    if not error:
        return None
    if error.startswith("ray:"):
        return "worker"
    if CONTEXT_OVERFLOW.search(error):
        return "model"
    names = re.findall(r"\b([A-Z]\w*(?:Error|Exception|Timeout|Disconnected|Read))\b", error)
    known = [_TEXT_KINDS[n] for n in names if n in _TEXT_KINDS]
    return known[-1] if known else FALLBACK  # the innermost type named decides (wrappers are named first)
