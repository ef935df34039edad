"""How the Space writes a number for people: the board, its row detail and the explorer share one style.

One mark for a value that is missing or withheld (:data:`NONE`), ``%`` on percentages, and a fixed number of
decimals per place (the board one, the explorer's summary three for unbounded numbers). Values are rounded once,
here, from the stored unrounded number.

>>> share(0.4567), percent(45.67), number(1.23456, 3), interval([0.1, 0.25]), share(None), spread(4.21)
('45.7%', '45.7%', '1.235', '[10.0%, 25.0%]', '—', '±4.2')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: Shown for a value that is missing, not reported, or withheld.
NONE = "—"


def missing(value: Any) -> bool:
    """Whether ``value`` is no number to show (``None``, ``""`` or NaN)."""
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def percent(value: Any, digits: int = 1) -> str:
    """A value already in percent: ``45.67`` → ``45.7%``."""
    return NONE if missing(value) else f"{float(value):.{digits}f}%"


def share(value: Any, digits: int = 1) -> str:
    """A share of 1 as a percentage: ``0.4567`` → ``45.7%``."""
    return NONE if missing(value) else percent(100 * float(value), digits)


def number(value: Any, digits: int = 1) -> str:
    """A plain number with ``digits`` decimals."""
    return NONE if missing(value) else f"{float(value):.{digits}f}"


def spread(points: Any, digits: int = 1) -> str:
    """A standard error in percentage points, written as the paper's ``±``: ``4.21`` → ``±4.2``."""
    return NONE if missing(points) else f"±{number(points, digits)}"


def interval(pair: Any, *, shares: bool = True, digits: int = 1) -> str:
    """A confidence interval ``[low, high]``: of shares as percentages (``shares``), else of plain numbers; empty
    when there is none (an interval is shown beside its estimate)."""
    if not isinstance(pair, Sequence) or len(pair) != 2 or any(missing(v) for v in pair):
        return ""
    show = share if shares else number
    return f"[{show(pair[0], digits)}, {show(pair[1], digits)}]"


def usd(value: Any) -> str:
    """Dollars per question: four decimals (``$0.0123``), ``<$0.0001`` for less but not nothing.

    >>> usd(0.01234), usd(0.0), usd(0.00001), usd(None)
    ('$0.0123', '$0.0000', '<$0.0001', '—')
    """
    if missing(value):
        return NONE
    value = float(value)
    return "<$0.0001" if 0 < value < 0.00005 else f"${value:.4f}"
