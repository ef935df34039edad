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


def test_alternate_runs_every_side_on_each_item_in_turn_and_reports_spreads() -> None:
    """Issue 47: for each repeat, for each item, A then B (ABAB...), each call timed on its own; per-repeat
    quantiles across the items, ratios taken within a repeat (same load), and the load average around it all."""
    from madqa.bench.measure import Spread, alternate

    clock = FakeClock()
    # harness: 10, 20, 30 ms per item in repeat 1, twice that in repeat 2; ours: 1, 2, 3 ms, then 1, 2, 3 ms again
    harness = clock.side("harness", [0.010, 0.020, 0.030, 0.020, 0.040, 0.060])
    ours = clock.side("ours", [0.001, 0.002, 0.003, 0.001, 0.002, 0.003])
    loads = iter([(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)])
    seen: list[tuple[str, str]] = []

    def side(name: str, run):  # type: ignore[no-untyped-def]
        return lambda item: seen.append((name, item)) or run()

    timed = alternate(
        {"harness": side("harness", harness), "ours": side("ours", ours)},
        ["q1", "q2", "q3"],
        repeats=2,
        clock=clock,
        load=lambda: next(loads),
    )
    assert seen == [(s, q) for q in ("q1", "q2", "q3") for s in ("harness", "ours")] * 2
    assert [c for c in clock.reads if c != "clock"] == ["harness", "ours"] * 6
    assert clock.reads[:6] == ["clock", "harness", "clock", "clock", "ours", "clock"]
    assert timed.order[:4] == [("harness", 0, 0), ("ours", 0, 0), ("harness", 0, 1), ("ours", 0, 1)]
    assert [pytest.approx(rep) for rep in ([0.01, 0.02, 0.03], [0.02, 0.04, 0.06])] == timed.seconds["harness"]

    def spread(s: Spread) -> list[float]:
        return [s.n, s.min, s.median, s.max]

    assert spread(timed.quantile("harness", 0.5)) == pytest.approx([2, 0.02, 0.03, 0.04])
    assert spread(timed.totals("ours")) == pytest.approx([2, 0.006, 0.006, 0.006])
    assert spread(timed.ratio("harness", "ours", 0.95)) == pytest.approx([2, 10.0, 15.0, 20.0])  # 30/3 and 60/3
    assert spread(timed.ratio("harness", "ours")) == pytest.approx([2, 10.0, 15.0, 20.0])
    assert timed.best_per_item("harness") == pytest.approx([0.01, 0.02, 0.03])
    assert timed.load_text() == "load average (1/5/15 min) 1.00/2.00/3.00 before, 4.00/5.00/6.00 after"
    summary = timed.summary()
    assert summary["repeats"] == 2 and summary["first_calls"] == ["harness", "ours", "harness", "ours"]
    assert summary["sides"]["ours"]["p95_s"]["median"] == pytest.approx(0.003)


def test_spread_text_and_empty_input() -> None:
    from madqa.bench.measure import Spread

    assert Spread.of([3.0, 1.0, 2.0]).text("x", digits=1) == "2.0x (1.0x-3.0x)"
    assert Spread.of([0.004]).text(" ms", 1000) == "4.00 ms (4.00 ms-4.00 ms)"
    assert Spread.of([]).n == 0


def test_bench_search_checks_the_side_by_side_p95_against_4x() -> None:
    """The pass/fail lines use the alternated ratios (median over passes), not the separate processes' figures."""
    from madqa.bench.search import TARGET_P95_SPEEDUP, _targets

    def spread(median: float) -> dict[str, float]:
        return {"n": 3, "min": median - 0.5, "median": median, "max": median + 0.5}

    setups = {"whoosh": {"agreement": {"identical": 1.0}, "query_p50_ms": 1.0, "query_p95_ms": 1.0}}
    side = {"speedup_vs_harness": {"whoosh": {"p50": spread(40.0), "p95": spread(3.9)}}}
    lines = _targets(setups, side, None)
    assert TARGET_P95_SPEEDUP == 4.0
    assert "  [MISS] whoosh p95 3.9x lower side by side (target >= 4x)" in lines
    side["speedup_vs_harness"]["whoosh"]["p95"] = spread(4.2)
    assert "  [ok] whoosh p95 4.2x lower side by side (target >= 4x)" in _targets(setups, side, None)
