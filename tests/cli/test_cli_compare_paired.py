"""`madqa compare`'s paired differences (McNemar exact, paired bootstrap CI), rank intervals and Kuiper n/a."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.runs import gold_rows, line, write

from madqa.cli import main

GOLD30 = gold_rows(30)


def test_pairwise_matrix_rank_intervals_and_flat_kuiper(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write(tmp_path / "gold.jsonl", GOLD30)
    # a: all 30 right, 1 step each (flat effort: Kuiper n/a). b: items 1-20 right; c: items 1-19 right (steps vary).
    a = write(tmp_path / "a.jsonl", [line(i, True, 1, True) for i in range(1, 31)])
    b = write(tmp_path / "b.jsonl", [line(i, i <= 20, 1 + i % 3, True) for i in range(1, 31)])
    c = write(tmp_path / "c.jsonl", [line(i, i <= 19, 1 + i % 3, True) for i in range(1, 31)])
    args = ["compare", str(a), str(b), str(c), "--gold", str(gold), "--resamples", "200"]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    pairs = {(p["a"], p["b"]): p for p in result["pairs"]}
    # McNemar by hand: a-b has 10 discordant items all for a: p = 2 / 2^10; a-c: 11, p = 2 / 2^11; b-c: 1, p = 1.
    assert pairs[("a", "b")]["p_value"] == pytest.approx(2 / 1024) and pairs[("a", "c")]["p_value"] == 2 / 2048
    assert pairs[("b", "c")]["p_value"] == 1.0 and pairs[("b", "c")]["n_shared"] == 30
    assert pairs[("a", "b")]["difference"] == pytest.approx(10 / 30) and pairs[("a", "b")]["test"] == "mcnemar-exact"
    low, high = pairs[("a", "b")]["difference_ci"]
    assert 0 < low <= 10 / 30 <= high <= 1
    # Holm (m = 3): 2/2048 <= .05/3 and 2/1024 <= .05/2 significant, 1.0 not. a ranks 1; b and c share 2-3.
    assert [pairs[k]["significant"] for k in (("a", "b"), ("a", "c"), ("b", "c"))] == [True, True, False]
    assert {n: (r["text"], r["tie_group"]) for n, r in result["ranks"].items()} == {
        "a": ("1", 1),
        "b": ("2–3", 2),
        "c": ("2–3", 2),
    }
    system = {s["name"]: s for s in result["systems"]}
    assert system["a"]["kuiper"] is None and system["a"]["kuiper_applicable"] is False
    assert system["b"]["kuiper_applicable"] is True and system["b"]["kuiper"] is not None
    assert main(args) == 0
    text = capsys.readouterr().out
    header = next(i for i, x in enumerate(text.splitlines()) if x.startswith("system"))
    rows = {x.split()[0]: x for x in text.splitlines()[header + 1 : header + 4]}
    assert "n/a" in rows["a"].split() and "n/a" not in rows["b"].split() and "Kuiper n/a: fixed effort" in text
    assert "paired difference in accuracy, row − column" in text and "Holm across pairs" in text
    matrix = text.splitlines()[text.splitlines().index(next(x for x in text.splitlines() if "row − column" in x)) + 2]
    assert matrix.startswith("a ") and "+33.3 p=0.002" in matrix and "+36.7 p<0.001" in matrix and "*" in matrix
    assert "A=a  B=b: +33.3 [" in text and "(30 shared items)" in text
    assert [x.split()[:3] for x in text.splitlines() if x.endswith(("group 1", "group 2"))] == [
        ["a", "1", "group"],
        ["b", "2–3", "group"],
        ["c", "2–3", "group"],
    ]
