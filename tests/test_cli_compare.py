"""`madqa compare` shows each run's coverage (answered of the gold items), in the table and in the JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_compare import GOLD, line, write

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
