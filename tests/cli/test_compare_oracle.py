"""``madqa compare``'s accuracy at fixed step budgets and the Oracle Gap (:mod:`madqa.cli.compare_oracle`) on small
hand-made runs, against hand-computed values."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.runs import GOLD, line, write

from madqa.cli import main
from madqa.cli.compare_cmd import compare
from madqa.cli.compare_oracle import is_oracle, system_of
from madqa.metric.aggregate import accuracy_at_budgets
from madqa.metric.paired import paired_bootstrap_ci
from madqa.metric.schema import ItemScore


def _system(agent: str, oracle: bool) -> dict:
    return {"agent": agent, "model": "m", "config": {"agent": agent, "oracle": oracle}}


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    # oracle (bm25 shown the gold pages): every item right in 1 step -> 100%.
    oracle = [line(i, True, 1, True, **_system("bm25", True)) for i in range(1, 5)]
    # bm25 searching: g1 right in 1 step, g2 in 3, g3 in 12, g4 wrong -> 75%; within 1/3/10 steps: 25/50/50%.
    agent = [line(1, True, 1, True), line(2, True, 3, True), line(3, True, 12, True), line(4, False, 2, True)]
    # another system, repl: g1 right only (2 steps) -> 25%.
    other = [line(1, True, 2, False), line(2, False, 2, False), line(3, False, 2, False), line(4, False, 2, False)]
    return {
        "gold": write(tmp_path / "gold.jsonl", GOLD),
        "oracle": write(tmp_path / "oracle.jsonl", oracle),
        "agent": write(tmp_path / "bm25.jsonl", [{**r, **_system("bm25", False)} for r in agent]),
        "other": write(tmp_path / "repl.jsonl", [{**r, **_system("repl", False)} for r in other]),
    }


def test_accuracy_at_budgets_by_hand() -> None:
    def item(correct: bool, steps: int | None) -> ItemScore:
        return ItemScore("x", float(correct), correct, 0, 0, 0, steps, None if correct else "retrieval", "anls")

    items = [item(True, 1), item(True, 3), item(True, 12), item(False, 2), item(True, None)]
    assert accuracy_at_budgets(items, [1, 3, 10, 12]) == {1: 0.2, 3: 0.4, 10: 0.4, 12: 0.6}
    assert accuracy_at_budgets([], [1]) == {1: None}


def test_budgets_and_oracle_gap_in_compare_json(runs: dict[str, Path]) -> None:
    result = compare(
        [runs["oracle"], runs["agent"], runs["other"]], gold=runs["gold"], resamples=400, seed=3, budgets=[10, 1, 3]
    )
    assert result["fixed_budgets"] == [1, 3, 10]
    at = {s["name"]: [p["accuracy"] for p in s["accuracy_at_budgets"]] for s in result["systems"]}
    assert at == {"oracle": [1.0, 1.0, 1.0], "bm25": [0.25, 0.5, 0.5], "repl": [0.0, 0.25, 0.25]}
    gaps = {g["run"]: g for g in result["oracle_gaps"]}
    assert [g["oracle"] for g in result["oracle_gaps"]] == ["oracle", "oracle"]  # only the oracle run is one
    same = gaps["bm25"]
    assert same["same_system"] is True and gaps["repl"]["same_system"] is False
    assert (same["oracle_accuracy"], same["run_accuracy"], same["gap"], same["n_shared"]) == (1.0, 0.75, 0.25, 4)
    assert same["p_value"] == 1.0  # McNemar exact, one discordant item: 2 * C(1, 0) / 2^1 capped at 1
    assert same["gap_ci"] == list(paired_bootstrap_ci([0, 0, 0, 1], n_resamples=400, seed=3))  # d = oracle - run
    assert 0.0 <= same["gap_ci"][0] <= 0.25 <= same["gap_ci"][1] <= 1.0
    assert gaps["repl"]["gap"] == 0.75 and gaps["repl"]["p_value"] == 0.25  # 3 discordant, all one way: 2/8


def test_no_oracle_run_no_gap_and_the_text_tables(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    plain = compare([runs["agent"], runs["other"]], gold=runs["gold"], resamples=50)
    assert plain["oracle_gaps"] == [] and plain["fixed_budgets"] == [1, 3, 10]
    rc = main(["compare", str(runs["oracle"]), str(runs["agent"]), "--gold", str(runs["gold"]), "--resamples", "50"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "accuracy (%) within a fixed step budget" in out
    assert "bm25" in out and "25.0" in out and "50.0" in out
    assert "oracle − bm25: +25.0 [" in out and "p=1.000 (4 shared items; same agent and model)" in out
    rc = main(["compare", str(runs["agent"]), str(runs["other"]), "--gold", str(runs["gold"]), "--budgets", "0"])
    assert rc == 2 and "--budgets must be one or more positive step counts" in caplog.text


def test_what_counts_as_an_oracle_run() -> None:
    assert is_oracle([{"config": {"oracle": True}}] * 2)
    assert not is_oracle([{"config": {"oracle": True}}, {"config": {"oracle": False}}])
    assert not is_oracle([{"config": {"oracle": "yes"}}]) and not is_oracle([{}]) and not is_oracle([])
    assert is_oracle([{"mode": "oracle", "system_type": "human"}])  # madqa human --oracle: the paper's human oracle
    assert not is_oracle([{"mode": "search", "system_type": "human"}, {"mode": "oracle"}])
    assert system_of([{"agent": "a", "model": "m"}, {"agent": "a", "model": "m"}]) == ("a", "m")
    assert system_of([{"agent": "a"}]) is None
