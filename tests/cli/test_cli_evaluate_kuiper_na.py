"""`madqa evaluate` on a run whose steps do not vary: no Kuiper value in the JSON, "n/a" in the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.runs import GOLD, line, write

from madqa.cli import main


def test_flat_steps_give_kuiper_na(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write(tmp_path / "gold.jsonl", GOLD)
    flat = write(tmp_path / "flat.jsonl", [line(i, i % 2 == 0, 2, True) for i in range(1, 5)])  # 2 searches each
    assert main(["evaluate", str(flat), "--gold", str(gold), "--json", "--resamples", "20"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["kuiper"], report["kuiper_ci"], report["kuiper_applicable"], report["kuiper_n"]) == (
        None,
        None,
        False,
        4,
    )
    assert report["accuracy"] == 0.5 and report["mean_steps"] == 2.0
    assert main(["evaluate", str(flat), "--gold", str(gold), "--resamples", "20"]) == 0
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("Kuiper"))
    assert row.split()[1] == "n/a" and "fixed effort: the steps do not vary" in row
    varied = write(tmp_path / "varied.jsonl", [line(i, i % 2 == 0, i, True) for i in range(1, 5)])
    assert main(["evaluate", str(varied), "--gold", str(gold), "--json", "--resamples", "20"]) == 0
    report = json.loads(capsys.readouterr().out)
    # efforts 1..4 with outcomes 0, 1, 0, 1 (mean 1/2): D = -1/2, 0, -1/2, 0 and D_0 = 0, so K = 0 - (-1/2)
    assert report["kuiper_applicable"] is True and report["kuiper"] == pytest.approx(0.5)
