"""``madqa bench first-run``'s arithmetic and report: which steps make each figure, the verdict against the target,
and a failed step named instead of a figure. (The measurement itself clones and installs: run by hand, not here.)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from madqa.bench import BenchError
from madqa.bench.first_run import FIRST_SCORED_RUN, SERVED_DEMO, Step, configure, report_lines, run, summarise

#: A run as measured: clone 2 s, venv 4 s, install 84 s, setup 42 s, Space up 30 s, run 141 s, evaluate 5 s.
MEASURED = [
    Step("clone", 2.0),
    Step("venv", 4.0),
    Step("install", 84.0),
    Step("setup", 42.0),
    Step("space", 30.0),
    Step("run", 141.0),
    Step("evaluate", 5.0),
]


def test_each_figure_sums_its_own_steps() -> None:
    figures = summarise(MEASURED)
    assert figures["served_demo_min"] == round((2 + 4 + 84 + 42 + 30) / 60, 2)  # no run, no evaluate
    assert figures["first_scored_run_min"] == round((2 + 4 + 84 + 42 + 141 + 5) / 60, 2)  # no Space
    assert figures["served_demo_within_target"] is True and figures["first_scored_run_within_target"] is True
    assert figures["failed_step"] is None
    assert [s["name"] for s in figures["steps"]] == ["clone", "venv", "install", "setup", "space", "run", "evaluate"]
    assert "space" not in FIRST_SCORED_RUN and "run" not in SERVED_DEMO
    json.dumps(figures)  # what --json prints


def test_over_the_target_is_said_and_the_target_is_a_parameter() -> None:
    figures = summarise(MEASURED, target_min=3.0)
    assert figures["served_demo_within_target"] is True  # 2.7 min
    assert figures["first_scored_run_within_target"] is False  # 4.6 min
    lines = report_lines(figures)
    assert lines[-2] == "served demo: 2.7 min (within the target of <= 3 min)"
    assert lines[-1] == "first scored run: 4.6 min (OVER the target of <= 3 min)"
    assert "  install      84.0 s" in lines


def test_a_failed_step_gives_no_figure_and_names_the_step() -> None:
    steps = [*MEASURED[:4], Step("space", 600.0, 124)]
    figures = summarise(steps)
    assert figures["failed_step"] == "space"
    assert figures["served_demo_min"] is None and figures["first_scored_run_min"] is None
    lines = report_lines(figures)
    assert "  space       600.0 s  FAILED (exit 124)" in lines
    assert lines[-1] == "first scored run: not measured (step space did not complete)"
    # A failed run still leaves the served demo's figure when its own steps all worked.
    partial = summarise([*MEASURED[:5], Step("run", 10.0, 1)])
    assert partial["served_demo_min"] is not None and partial["first_scored_run_min"] is None


def test_a_bad_limit_is_refused_before_anything_is_cloned(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(["--limit", "0", "--keep", str(tmp_path / "work")])
    with pytest.raises(BenchError, match="--limit must be positive"):
        run(args)
    assert not (tmp_path / "work").exists()
