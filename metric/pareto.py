"""Cost–accuracy (and effort–accuracy) Pareto frontiers: the systems no other system beats on both at once.

A system is on the frontier when no other system costs at most as much and is at least as accurate, and strictly
better on one of the two (issue 43; HAL's cost-aware leaderboard, Kapoor et al. 2024). Two systems at the same
point are both on it. Systems without a known cost (or effort) are left out and named by the caller; the frontier
is a statement about the point estimates, not a test: neighbours on it may be statistically tied.
"""

from __future__ import annotations

import math
from collections.abc import Mapping


def pareto_front(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Names of the points ``name -> (cost, accuracy)`` on the frontier, ordered by cost.

    Lower cost and higher accuracy are better; ties in cost are ordered by accuracy (highest first), then name.
    Points with a NaN coordinate are left out.

    >>> pareto_front({"a": (0.10, 0.50), "b": (0.20, 0.40), "c": (0.30, 0.70), "d": (0.05, 0.20)})
    ['d', 'a', 'c']
    >>> pareto_front({"x": (1.0, 0.5), "y": (1.0, 0.5), "z": (1.0, 0.4)})
    ['x', 'y']
    >>> pareto_front({})
    []
    """
    valid = {n: (float(c), float(a)) for n, (c, a) in points.items() if not (math.isnan(c) or math.isnan(a))}
    front = [
        name
        for name, (cost, acc) in valid.items()
        if not any(
            c <= cost and a >= acc and (c < cost or a > acc) for other, (c, a) in valid.items() if other != name
        )
    ]
    return sorted(front, key=lambda n: (valid[n][0], -valid[n][1], n))
