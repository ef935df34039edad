"""``madqa run --repeats K`` (:mod:`madqa.agents.harness.repeats`): every question K times with its own seed, one
line per ``(id, repeat)``; resuming (also after a kill) runs only the missing pairs; a file of repeats is never mixed
with an ordinary run; ``madqa evaluate`` reports the spread and pass^k of a seeded scripted model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_cli import kill_9_once_written, madqa, madqa_env
from helpers.fake_runs import FAKE, FAKE_SEEDED

from madqa.agents.harness.config import RunConfig, RunError
from madqa.agents.harness.record import ResultsFileError, read_lines
from madqa.agents.harness.repeats import run_repeats
from madqa.agents.harness.runner import run_benchmark

HERE = Path(__file__).resolve().parent


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def keys(path: Path) -> list[tuple[str, int]]:
    return [(r["id"], r["repeat"]) for r in lines(path)]


def first_gold(tmp_path: Path, n: int) -> Path:
    """The first ``n`` dev questions as a gold file (the run's ``--limit n`` answers exactly these)."""
    from madqa.loading_script.load import load_gold

    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in load_gold("dev")[:n]), encoding="utf-8")
    return gold


def test_repeats_record_seeds_and_evaluate_reports_spread_and_pass_k(layout, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    env = madqa_env(HERE)
    done = madqa(
        ["run", "--model", FAKE_SEEDED, "--limit", "3", "--repeats", "3", "-o", str(out), "--no-progress"], env
    )
    assert done.returncode == 0, done.stderr
    rows = lines(out)
    assert len(rows) == 9 and len(set(keys(out))) == 9 and {r for _, r in keys(out)} == {0, 1, 2}
    assert all(r["seed"] == r["repeat"] and r["config"]["model_options"]["seed"] == r["seed"] for r in rows)
    scored = madqa(["evaluate", str(out), "--gold", str(first_gold(tmp_path, 3)), "--json"], env)
    assert scored.returncode == 0, scored.stderr
    rep = json.loads(scored.stdout)["repeats"]
    # The seeded fake gets question i right when seed > i: seeds 0, 1, 2 get 0, 1, 2 of the three right.
    assert rep["accuracy"] == pytest.approx([0, 1 / 3, 2 / 3]) and [p["seed"] for p in rep["per_repeat"]] == [0, 1, 2]
    assert rep["mean"] == pytest.approx(1 / 3) and rep["sd"] == pytest.approx(1 / 3)
    assert (rep["min"], rep["max"]) == pytest.approx((0, 2 / 3))
    assert rep["pass_at_k"] == pytest.approx(2 / 3)  # questions 0 and 1 are right in some repeat
    assert rep["pass_hat_k"] == 0  # none is right in all three
    assert rep["consistency"] == pytest.approx(1 / 3)  # question 2: wrong every time
    text = madqa(["evaluate", str(out), "--gold", str(first_gold(tmp_path, 3))], env)
    assert text.returncode == 0, text.stderr
    assert "pass^3 0.0" in text.stdout and "33.3 ± 33.3" in text.stdout and "pass@3 66.7" in text.stdout


def test_resume_runs_only_the_missing_pairs_after_a_torn_write(layout, tmp_path: Path, monkeypatch) -> None:
    out, calls = tmp_path / "r.jsonl", tmp_path / "calls.txt"
    monkeypatch.setenv("MADQA_FAKE_CALLS_FILE", str(calls))
    config = RunConfig(model=FAKE_SEEDED, limit=3)
    run_repeats(config, out, repeats=2, model_options={"seed": 10})
    assert sorted(keys(out)) == sorted((r["id"], k) for r in lines(out) for k in (0, 1) if r["repeat"] == 0)
    assert {r["seed"] for r in lines(out)} == {10, 11}
    kept = out.read_bytes().splitlines(keepends=True)[:4]  # repeat 0 whole, one line of repeat 1
    out.write_bytes(b"".join(kept) + b'{"id": "x", "repeat": 1, "que')  # what a kill during a write leaves
    calls.unlink()
    summary = run_repeats(config, out, repeats=3, resume=True, model_options={"seed": 10})
    assert (summary.skipped, summary.written) == (4, 5)
    assert out.read_bytes().startswith(b"".join(kept))  # the finished lines are kept as they were
    assert len(keys(out)) == len(set(keys(out))) == 9
    # Two calls (a search, then the answer) per question run again: 2 of repeat 1 (seed 11), 3 of repeat 2 (seed 12).
    assert sorted(calls.read_text().split()) == ["11"] * 4 + ["12"] * 6
    again = run_repeats(config, out, repeats=3, resume=True, model_options={"seed": 10})
    assert (again.skipped, again.written) == (9, 0)


def test_repeats_and_ordinary_runs_do_not_mix(layout, tmp_path: Path) -> None:
    plain, repeated = tmp_path / "plain.jsonl", tmp_path / "rep.jsonl"
    run_benchmark(RunConfig(model=FAKE, limit=1), plain)
    with pytest.raises(RunError, match="run without --repeats"):
        run_repeats(RunConfig(model=FAKE, limit=2), plain, repeats=2, resume=True)
    run_repeats(RunConfig(model=FAKE, limit=1), repeated, repeats=2)
    with pytest.raises(RunError, match="resume it with --repeats 2"):
        run_benchmark(RunConfig(model=FAKE, limit=2), repeated, resume=True)
    with pytest.raises(RunError, match="at least 1"):
        run_repeats(RunConfig(model=FAKE, limit=1), tmp_path / "zero.jsonl", repeats=0)
    with pytest.raises(RunError, match="integer seed"):
        run_repeats(RunConfig(model=FAKE, limit=1), tmp_path / "s.jsonl", repeats=2, model_options={"seed": "a"})
    first = repeated.read_text(encoding="utf-8").splitlines()[0]
    repeated.write_text(f"{first}\n{first}\n", encoding="utf-8")
    with pytest.raises(ResultsFileError, match="line 2: id .* of repeat 0 appears twice"):
        read_lines(repeated)
    repeated.write_text(first.replace('"repeat": 0', '"repeat": -1') + "\n", encoding="utf-8")
    with pytest.raises(ResultsFileError, match="line 1: 'repeat' must be a non-negative integer"):
        read_lines(repeated)
    bad = madqa(["run", "--model", FAKE, "--repeats", "0", "-o", str(tmp_path / "z.jsonl")], madqa_env(HERE))
    assert bad.returncode == 2 and "--repeats must be at least 1" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.slow
def test_kill_9_during_repeats_then_resume_completes_every_pair(layout, tmp_path: Path) -> None:
    out = tmp_path / "k.jsonl"
    env = madqa_env(HERE, MADQA_FAKE_DELAY="0.2")
    cmd = [sys.executable, "-m", "madqa.cli", "-q", "run", "--model", FAKE_SEEDED, "--limit", "3", "--repeats", "2"]
    cmd += ["-o", str(out), "--no-progress"]
    kill_9_once_written(cmd, env, out, 4, timeout=300)
    before = keys(out)
    assert 4 <= len(before) < 6 and {r for _, r in before} == {0, 1}
    result = subprocess.run(
        [*cmd, "--resume"], env={**env, "MADQA_FAKE_DELAY": "0"}, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    after = keys(out)
    assert after[: len(before)] == before and len(after) == len(set(after)) == 6
