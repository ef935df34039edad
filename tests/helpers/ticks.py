"""A clock for deadline tests: the machine's speed made explicit, so a deadline trips at a known reading."""

from __future__ import annotations


class Ticks:
    """A clock that jumps ``step`` seconds per reading (the first reading starts the deadline); counts readings."""

    def __init__(self, step: float) -> None:
        self.now, self.step, self.calls = 0.0, step, 0

    def __call__(self) -> float:
        self.now += self.step
        self.calls += 1
        return self.now
