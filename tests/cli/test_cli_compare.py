"""`madqa compare` shows each run's coverage (answered of the gold items), in the table and in the JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.runs import GOLD, line, write

from madqa.cli import main


def test_coverage_per_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write(tmp_path / "gold.jsonl", GOLD)
    whole = write(tmp_path / "whole.jsonl", [line(i, True, 1, True) for i in range(1, 5)])
    part = write(tmp_path / "part.jsonl", [line(1, True, 1, True), line(3, False, 2, False)])
    args = ["compare", str(whole), str(part), "--gold", str(gold), "--resamples", "20"]
    assert main([*args, "--json"]) == 0
    systems = json.loads(capsys.readouterr().out)["systems"]
    assert [s["coverage"] for s in systems] == [1.0, 0.5]
    assert main(args) == 0
    table = capsys.readouterr().out.splitlines()
    header = next(x for x in table if x.startswith("system"))
    assert header.endswith("coverage")
    first = table.index(header)
    rows = {x.split()[0]: x for x in table[first + 1 : first + 3]}
    assert rows["whole"].endswith("4/4 (100%)") and rows["part"].endswith("2/4 (50%)")


def test_kuiper_order_is_the_one_asked_for_and_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write(tmp_path / "gold.jsonl", GOLD)
    # (effort, correct) in file order: (1, 1) (1, 0) (2, 1) (2, 0), mean 1/2. Blocks: D = 0 after effort 1 and
    # after effort 2 -> K = 0. Every k (paper F.3, ties in file order): D = 1/2, 0, 1/2, 0 -> K = 1/2.
    run = write(
        tmp_path / "run.jsonl",
        [line(1, True, 1, True), line(2, False, 1, True), line(3, True, 2, True), line(4, False, 2, True)],
    )
    other = write(tmp_path / "other.jsonl", [line(1, True, 1, True)])
    args = ["compare", str(run), str(other), "--gold", str(gold), "--resamples", "20"]
    for order, expected in (("block", 0.0), ("file", 0.5)):
        assert main([*args, "--kuiper-order", order, "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert (result["kuiper_order"], result["systems"][0]["kuiper"]) == (order, expected)
        assert main([*args, "--kuiper-order", order]) == 0
        assert capsys.readouterr().out.splitlines()[0] == f"4 gold items · Kuiper in {order} order"
    assert main(args + ["--json"]) == 0  # the default is evaluate's: blocks
    assert json.loads(capsys.readouterr().out)["kuiper_order"] == "block"
