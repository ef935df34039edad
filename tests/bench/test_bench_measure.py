"""The benchmarks' timing helper that compares two sides: it times them in turn, so load falls on both alike; and
`madqa bench extract` uses it for raw PyMuPDF vs the project's text layer (issue 28, item 10). Timers and sides are
injected: no wall-clock figure is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from madqa.bench import extract as bench
from madqa.bench.measure import best_of_alternating


class FakeClock:
    """A clock that only moves when a side "works": each call of a side adds its cost to the time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads: list[str] = []

    def __call__(self) -> float:
        self.reads.append("clock")
        return self.now

    def side(self, name: str, costs: list[float]):
        def run() -> str:
            self.reads.append(name)
            self.now += costs.pop(0)
            return name

        return run


def test_two_sides_are_timed_in_turn() -> None:
    order: list[str] = []
    a_s, b_s, result = best_of_alternating(3, lambda: order.append("raw") or 7, lambda: order.append("ours"))
    assert order == ["raw", "ours"] * 3  # never all of one side, then all of the other
    assert result == 7 and a_s >= 0 and b_s >= 0


def test_each_call_is_timed_on_its_own_and_the_fastest_of_each_side_wins() -> None:
    clock = FakeClock()
    raw = clock.side("raw", [3.0, 1.0, 2.0])
    ours = clock.side("ours", [5.0, 4.0, 6.0])
    a_s, b_s, result = best_of_alternating(3, raw, ours, clock=clock)
    assert (a_s, b_s, result) == (1.0, 4.0, "raw")
    # every call is bracketed by two clock reads, and the sides alternate: ABABAB, not AAABBB
    assert clock.reads == ["clock", "raw", "clock", "clock", "ours", "clock"] * 3


def test_bench_extract_alternates_raw_pymupdf_and_the_text_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    monkeypatch.setattr(bench, "_raw_get_text", lambda pdfs: order.append("raw") or 10)
    monkeypatch.setattr(bench, "_ours_text_layer", lambda pdfs: order.append("ours") or 10)
    monkeypatch.setattr(bench, "bench_ocr", lambda *a, **k: None)

    class Corpus:
        pages = [{}] * 10

    monkeypatch.setattr(bench, "extract_corpus", lambda *a, **k: order.append("pool") or Corpus())
    figures = bench.bench_extract([Path("a.pdf")], repeats=4, a0=False)
    assert order == ["raw", "ours"] * 4 + ["pool"]
    assert figures["pages"] == 10 and figures["text_layer_vs_raw_time_ratio"] > 0
