"""A Hub dataset spec that `madqa setup --dataset` never prepared: one line naming that command, exit status 2.

Every command that reads a dataset (``info``, ``evaluate``, ``run``) is run in a fresh process, as a user would run
it: with ``HF_HUB_OFFLINE=1`` it must open no connection at all, and with the flag unset but the Hub out of reach
it must still end in one clean line (no traceback). The Hub is made unreachable without relying on this machine's
network: ``HF_ENDPOINT`` points at a loopback port that is bound but never listens (connections are refused), and
the child's socket guard refuses every other host. The Hub client's retry back-off (about 23 s) is skipped in the
child so the test stays quick; its retries still happen.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.paths import TESTS
from helpers.refused_hub import refused_hub_env, refusing_port
from helpers.socket_guard import recorded_attempts

#: This file's folder: subprocesses import its model factories (``py:test_…``) by name.
HERE = Path(__file__).resolve().parent

SPEC = "OxRML/MADQA"
FIX = f"madqa setup --dataset {SPEC}"

CHILD = r"""
import json, os, sys, types
from helpers.socket_guard import install_logging_to
install_logging_to(os.environ["MADQA_GUARD_LOG"], record_loopback=True)  # every attempt, loopback included
import huggingface_hub.utils._http as hub_http
hub_http.time = types.SimpleNamespace(sleep=lambda seconds: None)  # keep the retries, skip their waits
from madqa.cli import main
sys.exit(main(json.loads(sys.argv[1])))
"""


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that is bound but not listening: a connection to it is refused at once."""
    with refusing_port() as port:
        yield port


def _env(tmp_path: Path, port: int, *, offline: bool) -> dict[str, str]:
    env = refused_hub_env(tmp_path, port, [HERE, TESTS], MADQA_GUARD_LOG=str(tmp_path / "connections.jsonl"))
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return env


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"id": "q1", "answer": ["x"], "citations": []}) + "\n", encoding="utf-8")
    return {
        "info": ["info", "--dataset", SPEC],
        "evaluate": ["evaluate", str(results), "--dataset", SPEC, "--split", "dev"],
        "run": [
            "run",
            "--dataset",
            SPEC,
            "--split",
            "dev",
            "--limit",
            "1",
            "--model",
            "py:helpers.fake_runs:fake_model",
            "-o",
            str(tmp_path / "out.jsonl"),
            "--no-progress",
        ],
    }


def _madqa(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(argv)], env=env, capture_output=True, text=True, timeout=300
    )


def _connections(env: dict[str, str]) -> list[str]:
    return [attempt["address"] for attempt in recorded_attempts(env["MADQA_GUARD_LOG"])]


def _assert_one_line(proc: subprocess.CompletedProcess[str], *, reason: str) -> None:
    # `madqa run` says what it starts before any slow stage (its INFO status lines, issue 44 item 23); the error
    # itself is one line
    lines = [
        line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("INFO madqa.cli.run_cmd: ")
    ]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("ERROR madqa: ") and FIX in lines[0] and reason in lines[0], lines[0]


@pytest.mark.parametrize("command", ["info", "evaluate", "run"])
def test_unprepared_hub_spec_offline_is_one_line_and_no_connection(
    command: str, tmp_path: Path, closed_port: int
) -> None:
    env = _env(tmp_path, closed_port, offline=True)
    proc = _madqa(_commands(tmp_path)[command], env)
    _assert_one_line(proc, reason="HF_HUB_OFFLINE")
    assert _connections(env) == []
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("command", ["info", "evaluate", "run"])
def test_unprepared_hub_spec_unreachable_is_one_line(command: str, tmp_path: Path, closed_port: int) -> None:
    env = _env(tmp_path, closed_port, offline=False)
    proc = _madqa(_commands(tmp_path)[command], env)
    _assert_one_line(proc, reason="the Hub cannot be read")
    assert any(f"'127.0.0.1', {closed_port})" in t for t in _connections(env))  # the Hub was really tried
    assert not (tmp_path / "out.jsonl").exists()
