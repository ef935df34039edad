"""`madqa compare` on constructed runs: accuracy, κ, only-A/only-B counts and budget curves equal hand-computed
values; human runs are labelled; -o writes a PNG; user mistakes are one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.runs import GOLD, line, write

from madqa.cli import main
from madqa.cli.compare_cmd import budget_table, is_human, pair_counts, table_budgets


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    # human: g1 ✓ (1 search), g2 ✓ (2), g3 ✗ (1), g4 ✗ (3); cites every evidence page.
    human = [line(1, True, 1, True), line(2, True, 2, True), line(3, False, 1, True), line(4, False, 3, True)]
    # agent: g1 ✓ (2), g2 ✗ (1), g3 ✗ (4), g4 ✗ (1); cites nothing.
    agent = [line(1, True, 2, False), line(2, False, 1, False), line(3, False, 4, False), line(4, False, 1, False)]
    return {
        "gold": write(tmp_path / "gold.jsonl", GOLD),
        "human": write(tmp_path / "h.jsonl", [{**r, "system_type": "human", "annotator": "me"} for r in human]),
        "agent": write(tmp_path / "a.jsonl", agent),
    }


def _compare(files: dict[str, Path], *flags: str) -> int:
    """``madqa compare`` of the human run and the agent run against the gold, with ``flags``."""
    return main(["compare", str(files["human"]), str(files["agent"]), "--gold", str(files["gold"]), *flags])


def test_pure_parts_by_hand() -> None:
    assert pair_counts([True, True, False, False], [True, False, False, False]) == {
        "both": 1,
        "only_a": 1,
        "only_b": 0,
        "neither": 2,
        "skipped": 0,
    }
    with pytest.raises(ValueError):
        pair_counts([True], [])
    assert table_budgets(25)[-3:] == [15, 20, 25]
    assert budget_table({"a": [], "b": [{"budget": 2, "accuracy": 0.5}]}, [1, 2]) == [
        {"budget": 1, "a": None, "b": 0.0},
        {"budget": 2, "a": None, "b": 0.5},
    ]
    assert is_human([{"system_type": "agent"}, {"system_type": "human"}]) and not is_human([])


def test_compare_json_equals_hand_computed(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    rc = _compare(files, "--names", "H", "M", "--json", "--resamples", "50")
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    h, m = out["systems"]
    assert (h["name"], h["human"], m["human"]) == ("H", True, False)
    assert (h["accuracy"], m["accuracy"]) == (0.5, 0.25)
    assert (h["page_f1"], m["page_f1"]) == (1.0, 0.0)
    # po = 3/4, p_H = 1/2, p_M = 1/4, pe = 1/2*1/4 + 1/2*3/4 = 1/2, kappa = (3/4 - 1/2) / (1 - 1/2) = 1/2
    assert out["kappa"]["H"]["M"] == pytest.approx(0.5) and out["kappa"]["H"]["H"] == pytest.approx(1.0)
    assert out["pairs"] == [
        {
            "a": "H",
            "b": "M",
            "kappa": pytest.approx(0.5),
            "both": 1,
            "only_a": 1,
            "only_b": 0,
            "neither": 2,
            "skipped": 0,
            # paired on the 4 shared items: 1 discordant item, McNemar p = min(1, 2 * 1 / 2) = 1
            "n_shared": 4,
            "difference": 0.25,
            "difference_ci": [0.0, pytest.approx(out["pairs"][0]["difference_ci"][1])],
            "p_value": 1.0,
            "test": "mcnemar-exact",
            "significant": False,
        }
    ]
    assert 0.25 < out["pairs"][0]["difference_ci"][1] <= 1.0
    # largest effort over both runs is 4; H solves at 1 and 2 searches, M at 2.
    assert out["max_budget"] == 4
    assert [(r["budget"], r["H"], r["M"]) for r in out["budget_table"]] == [
        (1, 0.25, 0.0),
        (2, 0.5, 0.25),
        (3, 0.5, 0.25),
        (4, 0.5, 0.25),
    ]
    assert [p["accuracy"] for p in h["budget_curve"]] == [0.25, 0.5, 0.5, 0.5]


def test_compare_text_plot_and_mistakes(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "curves.png"
    rc = _compare(files, "--output", str(png), "--resamples", "50")
    text = capsys.readouterr().out
    assert rc == 0 and "h (human)" in text and "A=h  B=a: 1 / 1 / 0 / 2" in text
    assert "Cohen's kappa" in text and "within a step budget" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a name that matplotlib would parse as math ("$\\undefinedcmd$" raised) is drawn as written
    assert _compare(files, "--names", "$\\undefinedcmd$", "b", "--output", str(png), "--resamples", "20") == 0
    assert main(["compare", str(files["human"]), "--gold", str(files["gold"])]) == 2
    assert _compare(files, "--names", "only-one") == 2
    assert main(["compare", str(files["human"]), str(tmp_path / "missing.jsonl"), "--gold", str(files["gold"])]) == 2
