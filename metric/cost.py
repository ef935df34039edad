"""Inference cost of results files: a price table (USD per million tokens per model id) applied to token counts.

Where the tokens are: every line ``madqa run`` writes carries ``model`` (the model spec, e.g. ``openai:gpt-4.1``,
``litellm:anthropic/claude-sonnet-4-5``, ``local``) and ``usage`` = ``{input_tokens, output_tokens}`` summed over
all the question's model calls (``agents/harness/record.py``); each ``trajectory`` entry also holds its own
``input_tokens``/``output_tokens``, which are used only when a line (from another harness) has no ``usage``. The
code agent's lines add ``effort`` with ``sub_input_tokens``/``sub_output_tokens``: when ``config.sub_model`` names
another model, those tokens are priced at the sub-model's price and the rest at the root model's. An optional
``usage.cached_input_tokens`` (part of ``input_tokens``) is charged at the model's ``cached_input`` price when the
table has one, else at the input price.

Lines with a token ledger (``usage.by_role``, :mod:`.ledger`) are priced per role instead, each role at its own
model's price: ``agent`` at ``model``, ``sub_model`` at ``config.sub_model`` (else ``model``), ``embedder`` and
``judge`` at the model their entry names. A role with calls but no token counts (an embedder) is priced only when
its model's price is 0 (a local model), else the line is unpriced (``uncounted_role``). :func:`role_split` gives a
run's calls, tokens and USD per role (``madqa compare``'s cost table). Lines without a ledger are priced as before.

A model the table does not price is never counted as free: its lines are left out of the total, counted in
``n_unknown_model`` and named in ``unknown_models``; lines without a model or token counts are in ``n_no_tokens``;
human lines (``system_type: "human"``) have no model tokens and are counted in ``n_human``.

Model lookup: the exact spec first, then the id after the provider prefix (``openai:gpt-4.1`` → ``gpt-4.1``), then
its last path part (``litellm:anthropic/claude-sonnet-4-5`` → ``claude-sonnet-4-5``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .ledger import Usage, role_split, role_usage, token_count

#: Fields of one model's entry in a price table.
PRICE_FIELDS = ("input", "output", "cached_input")
#: Tokens per priced unit (prices are USD per million tokens).
PER = 1_000_000


class PriceError(ValueError):
    """A price table that cannot be used; the message names the source, the model id and the field."""


@dataclass(frozen=True)
class Price:
    """One model's prices.

    Attributes:
        input: USD per million input tokens.
        output: USD per million output tokens.
        cached_input: USD per million cached input tokens (``None``: charged as input).
    """

    input: float
    output: float
    cached_input: float | None = None


@dataclass(frozen=True)
class PriceTable:
    """Prices by model id, and where they came from.

    Attributes:
        prices: model id → :class:`Price`.
        source: the file (or ``"built-in"``) the prices were read from.
        as_of: when the listed prices were read (``YYYY-MM-DD``, the file's top-level ``as_of``), ``None`` if not
            stated.
    """

    prices: Mapping[str, Price]
    source: str = ""
    as_of: str | None = None

    def lookup(self, model: str) -> Price | None:
        """The price of a model spec (see the module docstring), ``None`` when the table has none.

        >>> t = PriceTable({"gpt-4.1": Price(2.0, 8.0)})
        >>> t.lookup("openai:gpt-4.1"), t.lookup("litellm:openai/gpt-4.1") == t.lookup("gpt-4.1"), t.lookup("x")
        (Price(input=2.0, output=8.0, cached_input=None), True, None)
        """
        for key in model_keys(model):
            if key in self.prices:
                return self.prices[key]
        return None


def model_keys(model: str) -> list[str]:
    """The ids a model spec is looked up by, most specific first.

    >>> model_keys("litellm:anthropic/claude-sonnet-4-5")
    ['litellm:anthropic/claude-sonnet-4-5', 'anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5']
    """
    keys = [model]
    if ":" in model:
        keys.append(model.split(":", 1)[1])
    if "/" in keys[-1]:
        keys.append(keys[-1].rsplit("/", 1)[1])
    return [k for i, k in enumerate(keys) if k and k not in keys[:i]]


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise PriceError(f"{where}: must be a number >= 0 (USD per million tokens), got {value!r}")
    return float(value)


def parse_prices(data: Any, source: str, lines: Mapping[str, int] | None = None) -> PriceTable:
    """A price table from a mapping ``{model id: {input, output[, cached_input]}}`` (a parsed YAML file).

    Args:
        data: the mapping.
        source: its file name, for messages.
        lines: model id → line number in the file, for messages (optional).

    Raises:
        PriceError: not a mapping, an entry that is not a mapping, a missing or unknown field, a value that is not
            a number >= 0. The message names the source, line, model id and field.

    >>> parse_prices({"m": {"input": 1, "output": 2}}, "p.yaml").prices["m"]
    Price(input=1.0, output=2.0, cached_input=None)
    >>> parse_prices({"m": {"input": 1}}, "p.yaml", {"m": 3})
    Traceback (most recent call last):
    ...
    madqa.metric.cost.PriceError: p.yaml line 3: model 'm': field 'output' is missing
    """
    if not isinstance(data, Mapping) or not data:
        raise PriceError(
            f"{source}: a price table is a mapping of model id to {{input, output}} prices, got {type(data).__name__}"
        )
    prices: dict[str, Price] = {}
    for model, entry in data.items():
        at = f"{source} line {lines[str(model)]}" if lines and str(model) in lines else source
        where = f"{at}: model {str(model)!r}"
        if not isinstance(entry, Mapping):
            raise PriceError(f"{where}: expected a mapping with 'input' and 'output', got {entry!r}")
        unknown = [str(k) for k in entry if k not in PRICE_FIELDS]
        if unknown:
            raise PriceError(f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(PRICE_FIELDS)})")
        for required in ("input", "output"):
            if required not in entry:
                raise PriceError(f"{where}: field {required!r} is missing")
        cached = entry.get("cached_input")
        prices[str(model)] = Price(
            _number(entry["input"], f"{where}: field 'input'"),
            _number(entry["output"], f"{where}: field 'output'"),
            None if cached is None else _number(cached, f"{where}: field 'cached_input'"),
        )
    return PriceTable(prices, source)


def line_usage(line: Mapping[str, Any]) -> list[Usage] | None:
    """The tokens of a results line, split by model; ``None`` when it has no model or no token counts.

    A line with a ledger (``usage.by_role``) is read per role (:func:`role_usage`); one without (older lines,
    other harnesses) from its totals, as before.

    >>> [(u.model, u.input_tokens, u.output_tokens) for u in line_usage(
    ...     {"model": "m", "usage": {"input_tokens": 10, "output_tokens": 2}})]
    [('m', 10, 2)]
    >>> [(u.model, u.input_tokens, u.output_tokens) for u in line_usage(
    ...     {"model": "m", "trajectory": [{"input_tokens": 3, "output_tokens": 1}, {"input_tokens": 4}]})]
    [('m', 7, 1)]
    """
    model = line.get("model")
    if not isinstance(model, str) or not model:
        return None
    usage = line.get("usage")
    roles = role_usage(line, model)
    if roles is not None:
        return roles
    tokens_in = tokens_out = None
    cached = 0
    if isinstance(usage, Mapping):
        tokens_in, tokens_out = token_count(usage.get("input_tokens")), token_count(usage.get("output_tokens"))
        cached = min(token_count(usage.get("cached_input_tokens")) or 0, tokens_in or 0)
    if tokens_in is None or tokens_out is None:
        steps = [s for s in line.get("trajectory") or [] if isinstance(s, Mapping)]
        ins = [token_count(s.get("input_tokens")) for s in steps]
        outs = [token_count(s.get("output_tokens")) for s in steps]
        if not any(v is not None for v in ins + outs):
            return None
        tokens_in, tokens_out, cached = sum(v or 0 for v in ins), sum(v or 0 for v in outs), 0
    config, effort = line.get("config"), line.get("effort")
    sub = config.get("sub_model") if isinstance(config, Mapping) else None
    if isinstance(sub, str) and sub and sub != model and isinstance(effort, Mapping):
        sub_in, sub_out = token_count(effort.get("sub_input_tokens")), token_count(effort.get("sub_output_tokens"))
        if sub_in is not None and sub_out is not None and sub_in <= tokens_in and sub_out <= tokens_out:
            root = Usage(model, tokens_in - sub_in, tokens_out - sub_out, min(cached, tokens_in - sub_in))
            return [root, Usage(sub, sub_in, sub_out, role="sub_model")]
    return [Usage(model, tokens_in, tokens_out, cached)]


def usage_cost(usage: Usage, price: Price) -> float:
    """USD of one model's tokens.

    >>> usage_cost(Usage("m", 2_000_000, 500_000, 1_000_000), Price(1.0, 4.0, 0.25))
    3.25
    """
    fresh = usage.input_tokens - usage.cached_input_tokens
    cached_price = price.input if price.cached_input is None else price.cached_input
    return (fresh * price.input + usage.cached_input_tokens * cached_price + usage.output_tokens * price.output) / PER


@dataclass(frozen=True)
class LineCost:
    """The cost of one results line.

    Attributes:
        id: the line's id (``""`` when it has none).
        usd: its cost, ``None`` when not priced (no tokens, a human line, or a model the table lacks).
        input_tokens: its input tokens (0 without token counts).
        output_tokens: its output tokens.
        status: ``priced``, ``human``, ``no_tokens``, ``unknown_model`` or ``uncounted_role`` (a role with calls
            but no token counts whose model has a price above 0).
        unknown_models: the models of the line the table has no price for.
        parts: its tokens per role and model (:func:`line_usage`), each with its cost (``None``: not priced).
    """

    id: str
    usd: float | None
    input_tokens: int
    output_tokens: int
    status: str
    unknown_models: tuple[str, ...] = ()
    parts: tuple[tuple[Usage, float | None], ...] = field(default=(), repr=False)
    uncounted_roles: tuple[str, ...] = ()


def _part_cost(usage: Usage, table: PriceTable) -> float | None:
    price = table.lookup(usage.model)
    if price is None:
        return None
    if not usage.tokens_known:  # calls without token counts: only a price of 0 prices them
        return 0.0 if price.input == 0 and price.output == 0 else None
    return usage_cost(usage, price)


def line_cost(line: Mapping[str, Any], table: PriceTable) -> LineCost:
    """Price one results line (see :class:`LineCost`); each ledger role at its own model's price.

    >>> t = PriceTable({"m": Price(1.0, 2.0)})
    >>> line_cost({"id": "a", "model": "m", "usage": {"input_tokens": 1000, "output_tokens": 500}}, t).usd
    0.002
    >>> line_cost({"id": "b", "model": "z", "usage": {"input_tokens": 1, "output_tokens": 1}}, t).status
    'unknown_model'
    """
    rid = str(line.get("id", ""))
    if line.get("system_type") == "human":
        return LineCost(rid, None, 0, 0, "human")
    parts = line_usage(line)
    if parts is None:
        return LineCost(rid, None, 0, 0, "no_tokens")
    tokens_in, tokens_out = sum(u.input_tokens for u in parts), sum(u.output_tokens for u in parts)
    priced = tuple((u, _part_cost(u, table)) for u in parts)
    unknown = tuple(u.model for u in parts if table.lookup(u.model) is None)
    if unknown:
        return LineCost(rid, None, tokens_in, tokens_out, "unknown_model", unknown, priced)
    uncounted = tuple(f"{u.role} ({u.model})" for u, usd in priced if usd is None)
    if uncounted:
        return LineCost(rid, None, tokens_in, tokens_out, "uncounted_role", (), priced, uncounted)
    usd = sum(usd or 0.0 for _, usd in priced)
    return LineCost(rid, usd, tokens_in, tokens_out, "priced", (), priced)


@dataclass(frozen=True)
class RunCost:
    """The cost of a run (its lines).

    Attributes:
        n_lines: lines priced or not.
        n_priced: lines with a cost.
        n_human: human lines (no model tokens).
        n_no_tokens: lines without a model id or token counts.
        n_unknown_model: lines with a model the table has no price for.
        unknown_models: model spec → its lines left unpriced.
        input_tokens: input tokens over every line that has counts (priced or not).
        output_tokens: output tokens over the same lines.
        total_usd: the sum over priced lines, ``None`` when none is priced.
        per_question_usd: ``total_usd / n_priced``, ``None`` when none is priced.
        complete: every line is priced.
        by_role: role → its calls and tokens over every line that has counts, the models it used (model → lines)
            and ``usd`` over the priced lines (``None`` when none is priced): :func:`role_split`.
        n_uncounted_role: lines with a role that has calls but no token counts at a price above 0.
        lines: each line's cost, in input order.
    """

    n_lines: int
    n_priced: int
    n_human: int
    n_no_tokens: int
    n_unknown_model: int
    unknown_models: dict[str, int]
    input_tokens: int
    output_tokens: int
    total_usd: float | None
    per_question_usd: float | None
    complete: bool
    by_role: dict[str, dict[str, Any]] = field(default_factory=dict)
    n_uncounted_role: int = 0
    lines: tuple[LineCost, ...] = field(default=(), repr=False)

    def summary(self) -> dict[str, Any]:
        """The JSON-ready numbers (without the per-line list)."""
        return {k: v for k, v in vars(self).items() if k != "lines"}


def run_cost(lines: Sequence[Mapping[str, Any]], table: PriceTable) -> RunCost:
    """Price every line of a run and total the priced ones (see the module docstring).

    >>> t = PriceTable({"m": Price(1.0, 2.0)})
    >>> rows = [{"id": "a", "model": "m", "usage": {"input_tokens": 10**6, "output_tokens": 0}},
    ...         {"id": "b", "model": "z", "usage": {"input_tokens": 5, "output_tokens": 5}}, {"id": "c"}]
    >>> c = run_cost(rows, t)
    >>> c.total_usd, c.n_priced, c.n_unknown_model, c.unknown_models, c.n_no_tokens, c.complete
    (1.0, 1, 1, {'z': 1}, 1, False)
    """
    costs = tuple(line_cost(line, table) for line in lines)
    unknown: dict[str, int] = {}
    for c in costs:
        for model in dict.fromkeys(c.unknown_models):
            unknown[model] = unknown.get(model, 0) + 1
    priced = [c.usd for c in costs if c.usd is not None]
    total = float(sum(priced)) if priced else None
    return RunCost(
        n_lines=len(costs),
        n_priced=len(priced),
        n_human=sum(1 for c in costs if c.status == "human"),
        n_no_tokens=sum(1 for c in costs if c.status == "no_tokens"),
        n_unknown_model=sum(1 for c in costs if c.status == "unknown_model"),
        unknown_models=dict(sorted(unknown.items())),
        input_tokens=sum(c.input_tokens for c in costs),
        output_tokens=sum(c.output_tokens for c in costs),
        total_usd=total,
        per_question_usd=None if total is None else total / len(priced),
        complete=bool(costs) and len(priced) == len(costs),
        by_role=role_split(costs),
        n_uncounted_role=sum(1 for c in costs if c.status == "uncounted_role"),
        lines=costs,
    )


def unpriced_reason(cost: RunCost) -> str | None:
    """Why a run has no complete cost (``None`` when every line is priced).

    >>> unpriced_reason(run_cost([{"id": "a", "system_type": "human"}], PriceTable({})))
    'human run: no model tokens'
    """
    if cost.complete:
        return None
    if cost.n_lines == 0:
        return "no lines"
    if cost.n_human == cost.n_lines:
        return "human run: no model tokens"
    parts = []
    if cost.n_unknown_model:
        names = ", ".join(f"{m} ({n} line(s))" for m, n in cost.unknown_models.items())
        parts.append(f"no price for model {names}")
    if cost.n_no_tokens:
        parts.append(f"{cost.n_no_tokens} line(s) without a model id or token counts")
    if cost.n_uncounted_role:
        roles = sorted({r for c in cost.lines for r in c.uncounted_roles})
        parts.append(f"{cost.n_uncounted_role} line(s) with calls but no token counts of {', '.join(roles)}")
    if cost.n_human:
        parts.append(f"{cost.n_human} human line(s)")
    return f"{cost.n_priced} of {cost.n_lines} lines priced: " + "; ".join(parts)
