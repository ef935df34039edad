"""`madqa compare`'s Pareto frontiers (issue 43): accuracy against USD per question and against mean steps, the
members named, the runs without a cost left out and named (metric/pareto.py)."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest
from helpers.runs import gold_rows, line, write

from madqa.cli import main
from madqa.metric import pareto
from madqa.metric.pareto import pareto_front

GOLD = gold_rows(10)


def test_the_frontier_by_hand() -> None:
    assert doctest.testmod(pareto).failed == 0
    # b is dominated by a (cheaper and more accurate); d is the cheapest; e equals c: both stay
    points = {"a": (1.0, 0.6), "b": (2.0, 0.5), "c": (3.0, 0.9), "d": (0.5, 0.1), "e": (3.0, 0.9), "f": (4.0, 0.9)}
    assert pareto_front(points) == ["d", "a", "c", "e"]
    assert pareto_front({"x": (float("nan"), 1.0), "y": (2.0, 0.0)}) == ["y"]


def _run(path: Path, model: str, right: int, steps: int, tokens: int) -> Path:
    usage = {"input_tokens": tokens, "output_tokens": tokens // 10}
    return write(path, [line(i, i <= right, steps, True, model=model, usage=usage) for i in range(1, 11)])


def test_compare_names_both_frontiers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write(tmp_path / "gold.jsonl", GOLD)
    # cost per question: big 2.00/M in + 8.00/M out; mini 0.15 and 0.60. Accuracy: big 9/10, mini 6/10, dear 5/10.
    big = _run(tmp_path / "big.jsonl", "openai:gpt-4.1", 9, 3, 10_000)  # $0.028 a question, 3 steps
    mini = _run(tmp_path / "mini.jsonl", "openai:gpt-4o-mini", 6, 1, 10_000)  # $0.0021, 1 step
    dear = _run(tmp_path / "dear.jsonl", "openai:gpt-4.1", 5, 2, 20_000)  # dearer than big, less accurate
    unpriced = _run(tmp_path / "odd.jsonl", "openai:no-such-model", 10, 5, 1_000)
    args = ["compare", str(big), str(mini), str(dear), str(unpriced), "--gold", str(gold), "--resamples", "50"]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    pareto_json = result["pareto"]
    assert result["prices_as_of"] == "2025-09-29"  # the shipped table's date, with its source
    assert pareto_json["cost"] == {"frontier": ["mini", "big"], "left_out": ["odd"]}
    # steps: mini (1 step, 0.6), big (3, 0.9), odd (5, 1.0); dear (2, 0.5) is beaten by mini
    assert pareto_json["steps"] == {"frontier": ["mini", "big", "odd"], "left_out": []}
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "Pareto frontier, accuracy vs USD per question: mini, big (left out, no USD per question: odd)" in text
    assert "Pareto frontier, accuracy vs mean steps: mini, big, odd" in text
    assert "inference cost (prices: built-in prices.yaml, as of 2025-09-29)" in text
