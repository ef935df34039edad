"""``madqa compare``'s inference-cost table: each run's cost, then its calls, tokens and USD per ledger role.

The numbers are :func:`madqa.metric.cost.run_cost`'s (``cost.by_role``: :func:`madqa.metric.cost.role_split`);
this module only lays them out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def cost_text(cost: Mapping[str, Any] | None) -> str:
    """A run's cost as shown: ``$total ($per question/q)``, or why there is none.

    >>> cost_text({"complete": True, "total_usd": 0.5, "per_question_usd": 0.125})
    '$0.5000 ($0.1250/q)'
    >>> cost_text({"complete": False, "reason": "human run: no model tokens"})
    '— (human run: no model tokens)'
    """
    if not cost:
        return "—"
    if not cost.get("complete"):
        return f"— ({cost.get('reason')})"
    return f"${cost['total_usd']:.4f} (${cost['per_question_usd']:.4f}/q)"


def role_text(role: str, entry: Mapping[str, Any]) -> str:
    """One role of a run's cost as shown.

    >>> role_text("sub_model", {"calls": 3, "input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 40,
    ...                         "reasoning_tokens": 8, "models": {"cheap": 2}, "usd": 0.0012})
    'sub_model (cheap): 3 calls, 1,200 in (200 cached), 40 out (8 reasoning), $0.0012'
    >>> role_text("embedder", {"calls": 2, "input_tokens": 0, "output_tokens": 0, "lines_without_tokens": 2,
    ...                        "models": {"wordllama": 2}, "usd": None})
    'embedder (wordllama): 2 calls, tokens not counted, not priced'
    """
    models = ", ".join(entry.get("models") or {}) or "?"
    parts = [f"{entry['calls']:,} calls"] if entry.get("calls") else []
    if entry.get("lines_without_tokens") and not (entry.get("input_tokens") or entry.get("output_tokens")):
        parts.append("tokens not counted")
    else:
        cached = f" ({entry['cached_input_tokens']:,} cached)" if "cached_input_tokens" in entry else ""
        reasoning = f" ({entry['reasoning_tokens']:,} reasoning)" if "reasoning_tokens" in entry else ""
        parts += [f"{entry['input_tokens']:,} in{cached}", f"{entry['output_tokens']:,} out{reasoning}"]
    parts.append("not priced" if entry.get("usd") is None else f"${entry['usd']:.4f}")
    return f"{role} ({models}): " + ", ".join(parts)


def cost_lines(
    systems: Sequence[Mapping[str, Any]], prices: str | None, width: int, as_of: str | None = None
) -> list[str]:
    """The cost table's lines: a run per line (:func:`cost_text`), its roles indented below it; the header names
    the price table and the date its prices were read (``?`` when the table gives none)."""
    lines = ["", f"inference cost (prices: {prices}, as of {as_of or '?'})"]
    for system in systems:
        name = f"{system['name']} (human)" if system.get("human") else str(system["name"])
        cost = system.get("cost")
        lines.append(f"{name:<{width}}  {cost_text(cost)}")
        for role, entry in ((cost or {}).get("by_role") or {}).items():
            lines.append(f"{'':<{width}}    {role_text(role, entry)}")
    return lines
