"""``madqa evaluate`` on a hand-made file of repeated runs (:mod:`madqa.cli.evaluate_repeats`): the ``repeats``
entry equals hand-computed values; such a file is refused, in one line, where only ordinary runs are taken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.runs import GOLD, line, write

from madqa.cli import main
from madqa.cli.evaluate_cmd import evaluate

# Per repeat, which of g1..g4 is right: r0 g1 g2; r1 g1; r2 g1 g2 g4 -> per item 3, 2, 0, 1 of 3 repeats right.
RIGHT = {0: {1, 2}, 1: {1}, 2: {1, 2, 4}}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    rows = [
        {**line(i, i in right, 1, True), "repeat": r, "seed": 7 + r} for r, right in RIGHT.items() for i in range(1, 5)
    ]
    return {
        "gold": write(tmp_path / "gold.jsonl", GOLD),
        "repeats": write(tmp_path / "rep.jsonl", rows),
        "plain": write(tmp_path / "plain.jsonl", [line(i, True, 1, True) for i in range(1, 5)]),
    }


def test_the_repeats_entry_by_hand(files: dict[str, Path]) -> None:
    report = evaluate(files["repeats"], gold=files["gold"])
    rep = report["repeats"]
    assert rep["accuracy"] == [0.5, 0.25, 0.75] and [p["seed"] for p in rep["per_repeat"]] == [7, 8, 9]
    assert rep["mean"] == 0.5 and rep["sd"] == pytest.approx(0.25) and (rep["min"], rep["max"]) == (0.25, 0.75)
    assert (rep["pass_at_k"], rep["pass_hat_k"], rep["consistency"]) == (0.75, 0.25, 0.5)
    assert report["accuracy"] == 0.5 and rep["report_of_repeat"] == 0  # the report itself is repeat 0's
    assert "repeats" not in evaluate(files["plain"], gold=files["gold"])


def test_repeats_files_are_refused_where_runs_are_compared(
    files: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    rc = main(["evaluate", str(files["plain"]), "--gold", str(files["gold"]), "--compare", str(files["repeats"])])
    assert rc == 2 and "rep.jsonl: holds repeated runs (madqa run --repeats); evaluate it alone" in caplog.text
    rc = main(["compare", str(files["plain"]), str(files["repeats"]), "--gold", str(files["gold"])])
    assert (
        rc == 2 and "rep.jsonl: holds repeated runs (madqa run --repeats); compare takes ordinary runs" in caplog.text
    )
    mixed = files["repeats"].read_text(encoding="utf-8") + json.dumps(line(1, True, 1, True)) + "\n"
    files["repeats"].write_text(mixed, encoding="utf-8")
    rc = main(["evaluate", str(files["repeats"]), "--gold", str(files["gold"])])
    assert rc == 2 and "rep.jsonl line 13: the line has no 'repeat' while other lines do" in caplog.text
    assert "Traceback" not in caplog.text


def test_repeats_with_a_gap_are_scored_with_a_warning(
    files: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [json.loads(raw) for raw in files["repeats"].read_text(encoding="utf-8").splitlines()]
    gapped = write(tmp_path / "gap.jsonl", [{**row, "repeat": 5} if row["repeat"] == 2 else row for row in rows])
    rep = evaluate(gapped, gold=files["gold"])["repeats"]
    assert rep["accuracy"] == [0.5, 0.25, 0.75] and rep["pass_hat_k"] == 0.25  # scored as the 3 repeats present
    assert "gap.jsonl: repeats 0, 1, 5 are not 0..2; missing 2, 3, 4; k is the 3 repeat(s) present" in caplog.text
    caplog.clear()
    evaluate(files["repeats"], gold=files["gold"])
    assert "are not 0.." not in caplog.text
