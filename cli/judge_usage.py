"""What ``madqa evaluate --mode judge`` spent on its judge, per scored run: calls, tokens and their price.

The judge's tokens are its own (:meth:`madqa.metric.judge.Judge.usage`), reported beside the run's report and never
added to the agents' tokens in the results lines. Verdicts read from the judge cache and the short-cuts (exact
matches, empty or overlong answers) make no call. The price comes from the shipped price table
(``agents/harness/prices.yaml``): a judge model the table lacks, or calls without token counts, leave ``usd`` empty
with the reason, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The counts subtracted between two snapshots of a judge's usage.
COUNTS = ("calls", "input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")
COUNTS_ALWAYS = ("calls_without_tokens", "cache_hits")


def judge_usage_delta(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """The judge's usage between two snapshots (keys reported only where the later snapshot has them).

    >>> delta = judge_usage_delta({"calls": 2, "input_tokens": 10, "output_tokens": 1, "calls_without_tokens": 0,
    ...                    "cache_hits": 1}, {"calls": 5, "input_tokens": 40, "output_tokens": 4,
    ...                    "reasoning_tokens": 2, "calls_without_tokens": 0, "cache_hits": 3})
    >>> delta["calls"], delta["input_tokens"], delta["reasoning_tokens"], delta["cache_hits"]
    (3, 30, 2, 2)
    """
    return {k: int(after[k]) - int(before.get(k, 0)) for k in (*COUNTS, *COUNTS_ALWAYS) if k in after}


def judge_section(spec: str, usage: Mapping[str, int], prices: Any) -> dict[str, Any]:
    """The report's ``judge_usage``: the judge model, its usage on this run and its cost (``prices``: a
    :class:`~madqa.metric.cost.PriceTable`, ``None`` when none could be read).

    >>> from madqa.metric.cost import Price, PriceTable
    >>> u = {"calls": 2, "input_tokens": 2_000_000, "output_tokens": 0, "calls_without_tokens": 0, "cache_hits": 0}
    >>> judge_section("openai:gpt-4.1", u, PriceTable({"gpt-4.1": Price(2.0, 8.0)}, "t"))["usd"]
    4.0
    >>> judge_section("x", u, PriceTable({}, "t"))["usd_reason"]
    'no price for model x in t'
    """
    from madqa.metric.cost import Usage, usage_cost

    section: dict[str, Any] = {"model": spec, **usage, "usd": None, "usd_reason": None, "prices": None}
    price = None if prices is None else prices.lookup(spec)
    if prices is None:
        section["usd_reason"] = "no price table could be read"
        return section
    section["prices"] = prices.source
    if not usage.get("calls"):
        section["usd"] = 0.0  # no call was made: the verdicts came from the cache or the short-cuts
    elif price is None:
        section["usd_reason"] = f"no price for model {spec} in {prices.source}"
    elif usage.get("calls_without_tokens"):
        section["usd_reason"] = f"{usage['calls_without_tokens']} judge call(s) reported no token counts"
    else:
        cached = int(usage.get("cached_input_tokens") or 0)
        tokens = Usage(spec, int(usage["input_tokens"]), int(usage["output_tokens"]), cached, role="judge")
        section["usd"] = usage_cost(tokens, price)
    return section


def shipped_prices() -> Any:
    """The shipped price table, ``None`` when the agents package (which ships it) is not installed or it is bad."""
    try:
        from madqa.agents.harness.prices import load_prices
        from madqa.metric.cost import PriceError
    except ImportError:
        return None
    try:
        return load_prices()
    except PriceError:
        return None


def judge_text(section: Mapping[str, Any]) -> str:
    """One line for the text report.

    >>> judge_text({"model": "m", "calls": 3, "input_tokens": 900, "output_tokens": 30, "cache_hits": 1,
    ...             "usd": 0.0012, "usd_reason": None})
    "judge m: 3 calls, 900 in, 30 out, 1 cached verdict(s), $0.0012 (not in the agents' tokens)"
    """
    cost = (
        f"${section['usd']:.4f}" if section.get("usd") is not None else f"cost unknown ({section.get('usd_reason')})"
    )
    return (
        f"judge {section['model']}: {section.get('calls', 0):,} calls, {section.get('input_tokens', 0):,} in, "
        f"{section.get('output_tokens', 0):,} out, {section.get('cache_hits', 0)} cached verdict(s), {cost} "
        "(not in the agents' tokens)"
    )
