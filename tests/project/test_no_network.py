"""No network at run time: the offline commands and the local Space open no socket to any other host.

The suite sets ``HF_HUB_OFFLINE=1`` (conftest), which hides calls that a user without that flag would make — e.g.
`datasets`' download-count HEAD to S3 on every local ``load_dataset``. This test removes the flags and runs the
commands in a subprocess whose ``socket`` refuses (and records) every non-loopback connection.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from helpers.paths import TESTS
from helpers.socket_guard import recorded_attempts

#: This file's folder: subprocesses import its model factories (``py:test_…``) by name.
HERE = Path(__file__).resolve().parent

GUARD = r"""
import json, os, sys
from helpers.socket_guard import install_logging_to
install_logging_to(os.environ["MADQA_GUARD_LOG"])
from madqa.cli import main
sys.exit(max(main(argv) for argv in json.loads(sys.argv[1])))
"""


def _env(tmp_path: Path) -> dict[str, str]:
    offline_flags = ("HF_HUB_OFFLINE", "HF_EVALUATE_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    env = {k: v for k, v in os.environ.items() if k not in offline_flags}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(TESTS), env.get("PYTHONPATH", "")])
    env["MADQA_GUARD_LOG"] = str(tmp_path / "attempts.jsonl")
    return env


def _attempts(env: dict[str, str]) -> list[dict[str, str]]:
    return recorded_attempts(env["MADQA_GUARD_LOG"])


@pytest.mark.slow
def test_offline_commands_open_no_socket(built_home: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    results = tmp_path / "r.jsonl"
    commands = [
        ["info"],
        [
            "run",
            "--model",
            "py:helpers.fake_runs:fake_model",
            "--split",
            "dev",
            "--limit",
            "2",
            "-o",
            str(results),
            "--no-progress",
        ],
        ["evaluate", str(results), "--split", "dev", "--json"],
    ]
    proc = subprocess.run(
        [sys.executable, "-c", GUARD, json.dumps(commands)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    attempts = _attempts(env)
    assert attempts == [], attempts[0]["stack"]
    assert len(results.read_text(encoding="utf-8").splitlines()) == 2


@pytest.mark.slow
def test_local_space_opens_no_socket(built_home: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    env["MADQA_SPACE_DB"] = str(tmp_path / "board.sqlite")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-c", GUARD, json.dumps([["space", "--port", str(port)]])],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        page = ""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None and "MADQA" not in page:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
                    page = reply.read().decode("utf-8", "replace")
            except OSError:
                time.sleep(1)
        assert "MADQA" in page, proc.stderr.read() if proc.poll() is not None else "the Space did not answer"
        assert "configuration error" not in page.lower(), "the Space served its configuration-error page"
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    attempts = _attempts(env)
    assert attempts == [], attempts[0]["stack"]


@pytest.mark.slow
def test_litellm_route_opens_no_socket_with_the_offline_flags(built_home: Path, tmp_path: Path) -> None:
    """Importing LiteLLM fetches its model-cost map from the network unless told not to: with the offline flags set
    (as a user would), a `litellm:` run against a loopback server makes no other connection (issue 22)."""
    env = {**_env(tmp_path), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}
    env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
    results = tmp_path / "r.jsonl"
    with socket.socket() as closed:  # a loopback port with nothing behind it: each call fails fast
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    commands = [
        [
            "run",
            "--model",
            "litellm:openai/served",
            "--api-base",
            f"http://127.0.0.1:{port}/v1",
            "--model-option",
            "retries=0",
            "--split",
            "dev",
            "--limit",
            "1",
            "-o",
            str(results),
            "--no-progress",
        ]
    ]
    proc = subprocess.run(
        [sys.executable, "-c", GUARD, json.dumps(commands)], env=env, capture_output=True, text=True, timeout=600
    )
    assert results.exists(), proc.stderr[-3000:]
    attempts = _attempts(env)
    assert attempts == [], attempts[0]["stack"]
