"""``madqa run`` / :func:`madqa.agents.harness.runner.run_benchmark`: results lines, resume, kill -9 and resume, Ctrl+C
once
(questions in flight finish, exit 130 with the resume command) and twice (exit at once, also with the local model),
item errors, and one smoke run of the bundled local model."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_cli import kill_9_once_written
from helpers.fake_runs import FAKE
from helpers.paths import TESTS

from madqa.agents.harness.runner import RunConfig, RunError, run_benchmark
from madqa.metric.inputs import parse_results_text

#: This file's folder: subprocesses import its model factories (``py:test_…``) by name.
HERE = Path(__file__).resolve().parent


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_run_writes_metric_ready_lines_and_resume_skips_done(layout, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    summary = run_benchmark(RunConfig(model=FAKE, limit=3), out)
    assert summary.written == 3 and summary.errors == 0
    rows = lines(out)
    assert all(r["steps"] == 1 and r["answer"] == ["17.85"] and r["citations"] for r in rows)
    assert rows[0]["config"]["observe"] == "text" and rows[0]["agent"] == "bm25" and rows[0]["model"] == FAKE
    preds = parse_results_text(out.read_text(encoding="utf-8"), str(out))
    assert [p.steps for p in preds] == [1, 1, 1]
    with pytest.raises(RunError, match="--resume"):
        run_benchmark(RunConfig(model=FAKE, limit=3), out)
    again = run_benchmark(RunConfig(model=FAKE, limit=5), out, resume=True)
    assert (again.skipped, again.written) == (3, 2)
    assert len({r["id"] for r in lines(out)}) == 5 == len(lines(out))
    with pytest.raises(RunError, match="same --agent and --model"):
        run_benchmark(RunConfig(model="py:helpers.fake_runs:other", limit=6), out, resume=True)


def test_one_failing_question_is_recorded_and_the_run_goes_on(layout, tmp_path: Path, monkeypatch) -> None:
    from madqa.loading_script.load import load_questions

    victim = load_questions("dev")[1]
    monkeypatch.setenv("MADQA_FAKE_FAIL", victim["question"][:30])
    out = tmp_path / "r.jsonl"
    summary = run_benchmark(RunConfig(model=FAKE, limit=3), out, workers=2)
    rows = {r["id"]: r for r in lines(out)}
    assert summary.errors == 1 and len(rows) == 3
    assert "provider exploded" in rows[victim["id"]]["error"] and rows[victim["id"]]["answer"] == []
    assert rows[victim["id"]]["final_state"] == "error"
    monkeypatch.delenv("MADQA_FAKE_FAIL")
    retry = run_benchmark(RunConfig(model=FAKE, limit=3), out, resume=True, retry_errors=True)
    assert retry.written == 1 and all(r["error"] is None for r in lines(out)) and len(lines(out)) == 3


def test_every_results_line_is_fsynced_before_the_next_is_written(layout, tmp_path: Path, monkeypatch) -> None:
    """Crash safety needs an fsync after each line, on the results file itself (a kill or power loss must not
    lose an acknowledged line). The fake fsync counts the file's complete lines at each call."""
    out = tmp_path / "f.jsonl"
    real_fsync, seen = os.fsync, []

    def counting_fsync(fd: int) -> None:
        if out.exists() and os.fstat(fd).st_ino == out.stat().st_ino:
            seen.append(out.read_bytes().count(b"\n"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    summary = run_benchmark(RunConfig(model=FAKE, limit=4), out, workers=2)
    assert summary.written == 4 and len(lines(out)) == 4
    assert sorted(set(seen)) == [1, 2, 3, 4]  # one fsync after line 1, after line 2, ... on this file
    assert len(seen) == 4


def test_bad_settings_are_refused(layout, tmp_path: Path) -> None:
    with pytest.raises(RunError, match="test split hides"):
        run_benchmark(RunConfig(model=FAKE, split="test", options={"oracle": True}), tmp_path / "x.jsonl")
    with pytest.raises(RunError, match="unknown agent"):
        run_benchmark(RunConfig(model=FAKE, agent="nope"), tmp_path / "x.jsonl")
    with pytest.raises(RunError, match="text only"):
        run_benchmark(RunConfig(model=FAKE, limit=1, options={"observe": "image"}), tmp_path / "x.jsonl")


def test_oracle_run_uses_no_search(layout, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    run_benchmark(RunConfig(model=FAKE, limit=2, options={"oracle": True}), out)
    rows = lines(out)
    assert all(r["steps"] == 0 and r["search_history"] == [] and r["citations"] for r in rows)
    assert rows[0]["config"]["oracle"] is True


@pytest.mark.slow
def test_kill_9_then_resume_gives_every_id_exactly_once(layout, tmp_path: Path) -> None:
    out = tmp_path / "k.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "MADQA_FAKE_DELAY": "0.1",
    }
    cmd = [
        sys.executable,
        "-m",
        "madqa.cli",
        "-q",
        "run",
        "--model",
        FAKE,
        "--limit",
        "12",
        "-o",
        str(out),
        "--no-progress",
    ]
    kill_9_once_written(cmd, env, out, 3, timeout=60)
    done_before = {r["id"] for r in lines(out)}
    assert 3 <= len(done_before) < 12
    with open(out, "ab") as fh:  # what a kill in the middle of a write leaves behind
        fh.write(b'{"id": "q9999", "question": "torn')
    result = subprocess.run(
        [*cmd, "--resume"], env={**env, "MADQA_FAKE_DELAY": "0"}, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "torn last line" in result.stderr
    ids = [r["id"] for r in lines(out)]
    assert len(ids) == len(set(ids)) == 12 and done_before <= set(ids)
    assert len(parse_results_text(out.read_text(encoding="utf-8"), str(out))) == 12


@pytest.mark.slow
def test_local_model_smoke_run(layout, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'madqa[local]'")
    out = tmp_path / "local.jsonl"
    summary = run_benchmark(RunConfig(model="local", limit=2, max_steps=2, options={"top_k": 1}), out)
    rows = lines(out)
    assert summary.written == 2 and [r["error"] for r in rows] == [None, None], rows
    preds = parse_results_text(out.read_text(encoding="utf-8"), str(out))
    assert len(preds) == 2
    for row in rows:
        assert row["model"] == "local" and row["final_state"] in ("answered", "forced")
        assert isinstance(row["answer"], list) and all(isinstance(a, str) for a in row["answer"])
        assert 1 <= len(row["trajectory"]) <= 3 and row["steps"] == 1  # the local model must search once
        assert row["config"]["min_searches"] == 1 and row["config"]["observe"] == "text"
        assert row["usage"]["input_tokens"] > 0 and row["usage"]["output_tokens"] > 0


def test_cli_run_then_evaluate(layout, tmp_path: Path, caplog, capsys) -> None:
    from madqa.cli import main

    out = tmp_path / "cli.jsonl"
    with caplog.at_level("INFO"):
        assert main(["run", "--model", FAKE, "--limit", "2", "-o", str(out), "--no-progress"]) == 0
    assert "running accuracy 1/2" in caplog.text  # the fake's "17.85" is the first dev question's answer
    assert main(["evaluate", str(out), "--split", "dev", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_predicted"] == 2 and report["mean_steps"] == 1.0 and report["accuracy"] > 0
    assert main(["run", "--model", FAKE, "--limit", "2", "-o", str(out)]) == 2  # exists: needs --resume


# --- Ctrl+C (real signals to a real `madqa run`) ----------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def _start(out: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "madqa.cli", "run", "-o", str(out), "--no-progress", *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _start_slowable(out: Path, slower: Path, delay_s: str, *args: str) -> subprocess.Popen[str]:
    """A run of the fake model taking ``delay_s`` seconds a call; seconds written to ``slower`` later replace them
    (so that the calls in flight at a Ctrl+C outlast the wait)."""
    env = _env(MADQA_FAKE_DELAY=delay_s, MADQA_FAKE_DELAY_FILE=str(slower), MADQA_FAKE_CALLS_FILE=f"{slower}.calls")
    return _start(out, "--model", FAKE, *args, env=env)


def _slow_call_in_flight(proc: subprocess.Popen[str], slower: Path, delay_s: str, timeout: float = 120) -> None:
    """Slow every later call to ``delay_s`` seconds and wait until one such call has started: a question is then in
    flight for that long, whatever the machine's load (a load run saw the gap between two questions outlast a
    fixed pause, and the Ctrl+C then found none in flight)."""
    slower.write_text(delay_s)
    calls = Path(f"{slower}.calls")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if calls.is_file() and float(delay_s) in [float(x) for x in calls.read_text().split()]:
            return
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.02)
    raise AssertionError(f"no call slowed to {delay_s} s started within {timeout} s")


def _wait_for_lines(proc: subprocess.Popen[str], out: Path, n: int, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        count = out.read_bytes().count(b"\n") if out.exists() else 0
        if count >= n:
            return count
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.02)
    raise AssertionError(f"fewer than {n} line(s) after {timeout} s")


def _ctrl_c_once_slowed(
    proc: subprocess.Popen[str], out: Path, slower: Path, lines: int, pauses_s: tuple[float, ...]
) -> tuple[str, float]:
    """Once ``lines`` lines are written, make every later call a minute long, then press Ctrl+C after each pause;
    the run's stderr and the seconds it took to stop after the last press."""
    _wait_for_lines(proc, out, lines)
    _slow_call_in_flight(proc, slower, "60")
    for pause_s in pauses_s:
        time.sleep(pause_s)
        proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, stderr = proc.communicate(timeout=120)
    return stderr, time.monotonic() - start


def _valid(out: Path) -> list[dict[str, Any]]:
    rows = lines(out)
    assert len(parse_results_text(out.read_text(encoding="utf-8"), str(out))) == len(rows)
    assert len({r["id"] for r in rows}) == len(rows)
    return rows


@pytest.mark.slow
def test_first_ctrl_c_finishes_what_is_in_flight_then_resume_completes(layout, tmp_path: Path) -> None:
    out = tmp_path / "i.jsonl"
    slower = tmp_path / "delay"
    proc = _start_slowable(out, slower, "0.4", "--limit", "8", "--workers", "2")
    _wait_for_lines(proc, out, 1)
    # From now on every call takes 5 s, and the Ctrl+C waits for one of them to be in flight: the questions in flight
    # are still in flight when the runner reads it, however late a busy machine delivers it (with 0.4 s calls a load
    # run saw both finish first), and they end well inside the 30 s wait (two calls each).
    _slow_call_in_flight(proc, slower, "5")
    at_signal = _wait_for_lines(proc, out, 1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert re.search(r"interrupted: waiting up to 30 s for [12] question\(s\) in flight; press Ctrl\+C again", stderr)
    assert "Traceback" not in stderr
    rows = _valid(out)
    assert at_signal < len(rows) <= at_signal + 2 < 8  # the questions in flight kept, no new one started
    resume = re.search(r"resume with: (madqa .*)", stderr).group(1)
    assert resume.endswith(f"run -o {out} --no-progress --model {FAKE} --limit 8 --workers 2 --resume")
    again = subprocess.run(
        [sys.executable, "-m", "madqa.cli", *resume.split()[1:]],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert len(_valid(out)) == 8


@pytest.mark.slow
@pytest.mark.parametrize(
    ("run_args", "in_flight", "pauses_s", "limit_s", "said", "unsaid", "written"),
    [
        # the question in flight needs a minute more (waiting for it would show); Ctrl+C inside its first call: the
        # wait is bounded (0.5 s asked, 60 s if unbounded)
        (
            ("1.5", "--limit", "4", "--interrupt-wait", "0.5"),
            1,
            (0.3,),
            30,
            ("gave up waiting for 1 question(s)", "resume with: madqa"),
            (),
            (1, 1),
        ),
        # the two questions in flight need a minute more (the first Ctrl+C waits 30 s); Ctrl+C twice in their first
        # call: the second stops at once, not after the 30 s wait, and the file stays intact
        (("0.5", "--limit", "6", "--workers", "2"), 2, (0.2, 0.2), 20, ("stopped at once",), ("Traceback",), (2, 5)),
    ],
    ids=["the-wait-for-questions-in-flight-is-bounded", "second-ctrl-c-stops-at-once-with-the-file-intact"],
)
def test_ctrl_c_while_the_calls_in_flight_outlast_the_wait(
    layout,
    tmp_path: Path,
    run_args: tuple[str, ...],
    in_flight: int,
    pauses_s: tuple[float, ...],
    limit_s: float,
    said: tuple[str, ...],
    unsaid: tuple[str, ...],
    written: tuple[int, int],
) -> None:
    out = tmp_path / "results.jsonl"
    slower = tmp_path / "delay"
    proc = _start_slowable(out, slower, *run_args)
    stderr, took_s = _ctrl_c_once_slowed(proc, out, slower, lines=in_flight, pauses_s=pauses_s)
    assert proc.returncode == 130 and took_s < limit_s, stderr
    assert all(text in stderr for text in said) and not any(text in stderr for text in unsaid), stderr
    assert written[0] <= len(_valid(out)) <= written[1]


@pytest.mark.slow
def test_second_ctrl_c_during_a_local_model_call_exits_cleanly(layout, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'madqa[local]'")
    out = tmp_path / "l.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "madqa.cli",
        "-v",
        "run",
        "--model",
        "local",
        "--limit",
        "2",
        "--max-steps",
        "2",
        "--top-k",
        "1",
        "-o",
        str(out),
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    called = threading.Event()

    def read() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            seen.append(line)
            if "local model call 1:" in line:  # the first call is done: the agent is in its next one
                called.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert called.wait(240), "".join(seen[-20:])
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    reader.join(10)
    stderr = "".join(seen)
    assert proc.returncode == 130, stderr[-3000:]  # not -11 (the segmentation fault at interpreter shutdown)
    assert "stopped at once" in stderr and "Traceback" not in stderr
    data = out.read_bytes() if out.exists() else b""
    assert not data or data.endswith(b"\n")  # no half-written line
    if data:
        _valid(out)
