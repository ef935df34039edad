"""A submission's inference cost as one board cell: USD per question, or why there is none (issue 43, item 2).

Built on :mod:`.cost` (its public functions only): every line of the submitted file is priced with the price table
by the model the line names and its ``usage`` token counts. The cell holds a number only when *every* line is
priced: a run with a model the table does not list, or with lines without token counts, shows why instead, never
0 (a partial average would make a run look cheaper than it was). A human run (every line ``system_type:
"human"``) has no model tokens.

The cost is a function of the submitted file alone (its lines' models and token counts), never of a gold answer:
it says nothing about the test labels, and it is the same whichever part of the labels a line's item is in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .cost import PriceTable, run_cost

#: ``status`` of a :func:`submission_cost`: a number, or why not.
PRICED, HUMAN, NOT_PRICED, NO_TOKENS = "priced", "human", "model not priced", "no token counts"
#: What the board writes for each status without a number.
NOT_AVAILABLE = {HUMAN: "n/a (human run)", NOT_PRICED: "n/a (model not priced)", NO_TOKENS: "n/a (no tokens)"}


def submission_cost(lines: Sequence[Mapping[str, Any]], table: PriceTable) -> dict[str, Any]:
    """The JSON-ready cost of a submitted file.

    ``usd_per_question`` (``None`` unless every line is priced), ``status`` (:data:`PRICED`, :data:`HUMAN`,
    :data:`NOT_PRICED` or :data:`NO_TOKENS`), ``n_lines``, ``n_priced``, the
    ``unknown_models`` and the table's ``prices_as_of`` and ``prices`` (its source).

    A model the table lacks wins over missing token counts (it is the reason a priced run would still be n/a).

    >>> from madqa.metric.cost import Price
    >>> t = PriceTable({"m": Price(1.0, 2.0)}, "p.yaml", "2025-09-29")
    >>> line = {"model": "openai:m", "usage": {"input_tokens": 1000, "output_tokens": 500}}
    >>> c = submission_cost([line, line], t)
    >>> c["usd_per_question"], c["status"], c["prices_as_of"]
    (0.002, 'priced', '2025-09-29')
    >>> submission_cost([line, {**line, "model": "z"}], t)["status"], submission_cost([{"id": "a"}], t)["status"]
    ('model not priced', 'no token counts')
    """
    cost = run_cost(lines, table)
    if cost.complete:
        status = PRICED
    elif cost.n_lines and cost.n_human == cost.n_lines:
        status = HUMAN
    elif cost.n_unknown_model:
        status = NOT_PRICED
    else:
        status = NO_TOKENS
    return {
        "usd_per_question": cost.per_question_usd if status == PRICED else None,
        "status": status,
        "n_lines": cost.n_lines,
        "n_priced": cost.n_priced,
        "unknown_models": sorted(cost.unknown_models),
        "prices_as_of": table.as_of,
        "prices": table.source,
    }


def cost_note(cost: Mapping[str, Any] | None) -> str:
    """What the board writes instead of a number.

    ``""`` when there is one, ``n/a (…)`` otherwise (a row stored before costs were: ``n/a (not recorded)``).

    >>> cost_note({"status": "priced", "usd_per_question": 0.01}), cost_note({"status": "human"}), cost_note(None)
    ('', 'n/a (human run)', 'n/a (not recorded)')
    """
    if not cost:
        return "n/a (not recorded)"
    if cost.get("status") == PRICED and cost.get("usd_per_question") is not None:
        return ""
    return NOT_AVAILABLE.get(str(cost.get("status")), "n/a (not recorded)")
