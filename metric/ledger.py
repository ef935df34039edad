"""The token ledger of a results line: model calls and tokens per role, read from what the provider reported.

A line's ``usage`` keeps its totals (``input_tokens``, ``output_tokens``, optional ``cached_input_tokens``: what
older readers use) and adds ``by_role``: ``{role: {input_tokens, output_tokens, calls[, cached_input_tokens]
[, reasoning_tokens][, model]}}`` with the roles of :data:`ROLES`:

- ``agent``: the agent's own model calls (steps, a forced final answer, the code agent's extraction calls);
- ``sub_model``: the code agent's ``llm_query`` calls (priced at ``config.sub_model``, else at the line's model);
- ``embedder``: query embeddings of a retriever that embeds (``model``: the embedder); counted in ``calls`` only
  when the embedder gives no token count (the retrievers of this project do not: see ``docs/results-lines.md``);
- ``judge``: a judge's calls, when a line is judged at run time (no agent does today; ``madqa evaluate --judge``
  reports its judge's tokens in its own report, not in the lines).

Cached and reasoning tokens are kept only where the provider reported them (OpenAI-compatible replies:
``usage.prompt_tokens_details.cached_tokens`` and ``usage.completion_tokens_details.reasoning_tokens``, which
LiteLLM also fills; Anthropic's ``cache_read_input_tokens`` through LiteLLM): a call that did not report one adds
nothing to it, and a role none of whose calls reported it has no such key, never an invented 0. Cached tokens are
part of ``input_tokens``, reasoning tokens part of ``output_tokens``.

Reading a line back for pricing: :func:`role_usage` (one :class:`Usage` per role, at its own model) and
:func:`role_split` (a run's calls, tokens and USD per role), used by :mod:`.cost`.

Pure and duck-typed (a smolagents ``ChatMessage``, an OpenAI ``ChatCompletion``, a LiteLLM ``ModelResponse`` or
their dict forms), so the metric imports nothing of the project.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The roles of a ledger, in report order.
ROLES = ("agent", "sub_model", "embedder", "judge")
#: The counts of one role; the optional ones are present only where reported.
COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens", "calls")
OPTIONAL_COUNTS = ("cached_input_tokens", "reasoning_tokens")


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


#: More tokens than this in one count is not a run's (10 billion: a million-token context called 10,000 times);
#: such a count is read as none, so a results file cannot claim an absurd cost that squashes the board's cost axis.
MAX_TOKEN_COUNT = 10**10


def token_count(value: Any) -> int | None:
    """A token count as read from a line or a reply: a non-negative int up to :data:`MAX_TOKEN_COUNT`, else ``None``.

    >>> token_count(12), token_count(-1), token_count(True), token_count(1.5), token_count(10**11)
    (12, None, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        return None
    return value


def reported_details(raw: Any) -> dict[str, int]:
    """The cached and reasoning tokens a provider's raw reply reports (only those it reports).

    >>> reported_details({"usage": {"prompt_tokens_details": {"cached_tokens": 64},
    ...                             "completion_tokens_details": {"reasoning_tokens": 5}}})
    {'cached_input_tokens': 64, 'reasoning_tokens': 5}
    >>> reported_details({"usage": {"prompt_tokens": 9, "completion_tokens": 1}}), reported_details(None)
    ({}, {})
    """
    usage = _get(raw, "usage")
    out: dict[str, int] = {}
    cached = token_count(_get(_get(usage, "prompt_tokens_details"), "cached_tokens"))
    if cached is None:
        cached = token_count(_get(usage, "cache_read_input_tokens"))
    if cached is not None:
        out["cached_input_tokens"] = cached
    reasoning = token_count(_get(_get(usage, "completion_tokens_details"), "reasoning_tokens"))
    if reasoning is not None:
        out["reasoning_tokens"] = reasoning
    return out


def message_usage(message: Any) -> dict[str, int] | None:
    """One model call's counts from its reply (``None`` when it carries no token usage).

    ``input_tokens``/``output_tokens`` from ``token_usage``, plus what :func:`reported_details` finds in ``raw``.

    >>> class Usage: input_tokens, output_tokens = 100, 7
    >>> class Reply: token_usage, raw = Usage(), {"usage": {"prompt_tokens_details": {"cached_tokens": 40}}}
    >>> message_usage(Reply())
    {'input_tokens': 100, 'output_tokens': 7, 'cached_input_tokens': 40}
    """
    usage = _get(message, "token_usage")
    tokens_in, tokens_out = token_count(_get(usage, "input_tokens")), token_count(_get(usage, "output_tokens"))
    if tokens_in is None or tokens_out is None:
        return None
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, **reported_details(_get(message, "raw"))}


class Tally:
    """Calls and tokens of one role, summed as they come (thread-safe: the code agent's batched sub-calls)."""

    def __init__(self) -> None:
        """An empty tally."""
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "calls": 0}
        self._unreported = 0

    @property
    def unreported(self) -> int:
        """Calls counted without a token count (their tokens are not in the sums)."""
        with self._lock:
            return self._unreported

    def add(self, usage: Mapping[str, int] | None, calls: int = 1) -> None:
        """Count ``calls`` call(s) with ``usage`` (:func:`message_usage`; ``None``: calls without a token count)."""
        with self._lock:
            self._counts["calls"] += calls
            self._unreported += calls if usage is None else 0
            for key, value in (usage or {}).items():
                if key in COUNTS and key != "calls" and token_count(value) is not None:
                    self._counts[key] = self._counts.get(key, 0) + value

    def add_message(self, message: Any) -> None:
        """Count one call from its reply (see :func:`message_usage`)."""
        self.add(message_usage(message))

    def as_dict(self) -> dict[str, int]:
        """The role's entry: input, output and calls always; cached and reasoning where some call reported them.

        >>> t = Tally(); t.add({"input_tokens": 10, "output_tokens": 2, "reasoning_tokens": 1}); t.add(None)
        >>> t.as_dict()
        {'input_tokens': 10, 'output_tokens': 2, 'calls': 2, 'reasoning_tokens': 1}
        """
        with self._lock:
            return dict(self._counts)


def tally_of(usages: Iterable[Mapping[str, int] | None]) -> dict[str, int]:
    """One role's entry from its calls' counts (``None``: a call without a token count).

    >>> tally_of([{"input_tokens": 5, "output_tokens": 1}, {"input_tokens": 3, "output_tokens": 2}])
    {'input_tokens': 8, 'output_tokens': 3, 'calls': 2}
    """
    tally = Tally()
    for usage in usages:
        tally.add(usage)
    return tally.as_dict()


def totals(by_role: Mapping[str, Mapping[str, Any]], roles: Iterable[str] = ("agent", "sub_model")) -> dict[str, int]:
    """The line's top-level ``usage`` from its ledger.

    The generation roles' input and output tokens summed, and ``cached_input_tokens`` where one of them reported it
    (an embedder's tokens are not model generation tokens).

    >>> totals({"agent": {"input_tokens": 9, "output_tokens": 2, "calls": 1, "cached_input_tokens": 4},
    ...         "sub_model": {"input_tokens": 1, "output_tokens": 1, "calls": 1}})
    {'input_tokens': 10, 'output_tokens': 3, 'cached_input_tokens': 4}
    """
    entries = [by_role[r] for r in roles if isinstance(by_role.get(r), Mapping)]
    out = {
        "input_tokens": sum(int(e.get("input_tokens") or 0) for e in entries),
        "output_tokens": sum(int(e.get("output_tokens") or 0) for e in entries),
    }
    if any("cached_input_tokens" in e for e in entries):
        out["cached_input_tokens"] = sum(int(e.get("cached_input_tokens") or 0) for e in entries)
    return out


@dataclass(frozen=True)
class Usage:
    """Tokens of one model within one line.

    Attributes:
        model: the model spec.
        input_tokens: input tokens (cached ones included).
        output_tokens: output tokens.
        cached_input_tokens: the part of ``input_tokens`` read from a prompt cache.
        role: the ledger role (:data:`ROLES`).
        reasoning_tokens: the part of ``output_tokens`` spent reasoning, where reported (not priced apart).
        calls: the role's model calls (0 when the line does not say).
        tokens_known: ``False`` for a role with calls but no token counts (an embedder): priced only at a price
            of 0.
    """

    model: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    role: str = "agent"
    reasoning_tokens: int | None = None
    calls: int = 0
    tokens_known: bool = True


def _role_model(role: str, entry: Mapping[str, Any], line: Mapping[str, Any], model: str) -> str | None:
    named = entry.get("model")
    if isinstance(named, str) and named:
        return named
    if role == "agent":
        return model
    if role == "sub_model":
        config = line.get("config")
        sub = config.get("sub_model") if isinstance(config, Mapping) else None
        return sub if isinstance(sub, str) and sub else model
    return None  # an embedder or judge without its model: unpriced


def role_usage(line: Mapping[str, Any], model: str) -> list[Usage] | None:
    """The tokens of a line's ledger, one :class:`Usage` per role.

    ``None``: no ledger, or one that cannot be read (e.g. a count that is not a whole number >= 0): the line's
    totals are used instead.

    Each role is priced at its own model: ``agent`` at the line's ``model``; ``sub_model`` at its entry's ``model``,
    else ``config.sub_model``, else the line's model; ``embedder`` and ``judge`` at their entry's ``model`` (none:
    unpriced). A role with ``calls`` but no token counts (an embedder that gives none) is priced only at a price of 0.

    >>> line = {"model": "m", "config": {"sub_model": "s"}, "usage": {"by_role": {
    ...     "agent": {"input_tokens": 9, "output_tokens": 2, "calls": 2, "cached_input_tokens": 4},
    ...     "sub_model": {"input_tokens": 5, "output_tokens": 1, "calls": 1}, "embedder": {"calls": 2, "model": "e"}}}}
    >>> [(u.role, u.model, u.input_tokens, u.cached_input_tokens, u.tokens_known) for u in role_usage(line, "m")]
    [('agent', 'm', 9, 4, True), ('sub_model', 's', 5, 0, True), ('embedder', 'e', 0, 0, False)]
    """
    usage = line.get("usage")
    by_role = usage.get("by_role") if isinstance(usage, Mapping) else None
    if not isinstance(by_role, Mapping) or not by_role:
        return None
    parts = []
    for role, entry in by_role.items():
        if not isinstance(entry, Mapping):
            return None
        counts = {k: entry.get(k) for k in COUNTS if k in entry}
        if any(token_count(v) is None for v in counts.values()):
            return None
        tokens_in, tokens_out = counts.get("input_tokens"), counts.get("output_tokens")
        known = tokens_in is not None or tokens_out is not None
        cached = min(counts.get("cached_input_tokens") or 0, tokens_in or 0)
        role_model = _role_model(str(role), entry, line, model)
        parts.append(
            Usage(
                role_model or f"({role}: no model named)",
                tokens_in or 0,
                tokens_out or 0,
                cached,
                role=str(role),
                reasoning_tokens=counts.get("reasoning_tokens"),
                calls=counts.get("calls") or 0,
                tokens_known=known,
            )
        )
    return parts


def role_split(costs: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Calls, tokens, models and USD per ledger role over a run's lines.

    ``costs`` are the lines' costs (:class:`.cost.LineCost`): each with ``parts`` (its ``(Usage, usd)`` pairs,
    ``usd`` ``None`` where not priced) and ``usd`` (the line's, ``None`` when the line is not priced). A line without
    a ledger counts as ``agent`` (or ``agent`` and ``sub_model`` from ``effort``). Cached and reasoning tokens appear
    where some line reported them; ``usd`` sums the priced lines only, like the run's total.

    >>> from types import SimpleNamespace as Line
    >>> agent, sub = Usage("m", 10**6, 0, calls=3), Usage("s", 10**6, 10**6, role="sub_model", calls=2)
    >>> split = role_split([Line(parts=((agent, 1.0), (sub, 1.0)), usd=2.0), Line(parts=((agent, None),), usd=None)])
    >>> split["agent"]["usd"], split["agent"]["calls"], split["sub_model"]["models"], split["agent"]["models"]
    (1.0, 6, {'s': 1}, {'m': 2})
    """
    roles: dict[str, dict[str, Any]] = {}
    for cost in costs:
        for usage, usd in cost.parts:
            entry = roles.setdefault(
                usage.role, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "models": {}, "usd": None}
            )
            entry["calls"] += usage.calls
            entry["input_tokens"] += usage.input_tokens
            entry["output_tokens"] += usage.output_tokens
            if usage.cached_input_tokens:
                entry["cached_input_tokens"] = entry.get("cached_input_tokens", 0) + usage.cached_input_tokens
            if usage.reasoning_tokens is not None:
                entry["reasoning_tokens"] = entry.get("reasoning_tokens", 0) + usage.reasoning_tokens
            if not usage.tokens_known:
                entry["lines_without_tokens"] = entry.get("lines_without_tokens", 0) + 1
            entry["models"][usage.model] = entry["models"].get(usage.model, 0) + 1
            if cost.usd is not None and usd is not None:
                entry["usd"] = (entry["usd"] or 0.0) + usd
    order = {role: i for i, role in enumerate(ROLES)}
    return dict(sorted(roles.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
