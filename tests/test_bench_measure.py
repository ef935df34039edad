"""The benchmarks' timing helper that compares two sides: it times them in turn, so load falls on both alike."""

from __future__ import annotations

from madqa.bench.measure import best_of_alternating


def test_two_sides_are_timed_in_turn() -> None:
    order: list[str] = []
    a_s, b_s, result = best_of_alternating(3, lambda: order.append("raw") or 7, lambda: order.append("ours"))
    assert order == ["raw", "ours"] * 3  # never all of one side, then all of the other
    assert result == 7 and a_s >= 0 and b_s >= 0
