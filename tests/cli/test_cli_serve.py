"""The serving commands (`madqa space`, `human`, `view`): the port rule, a busy port and Ctrl+C, as a user sees them.

The subprocess tests wait on the command's ready line (never a sleep), then send SIGINT to the whole process group,
as a terminal's Ctrl+C does, and read what reached stderr.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.signal_support import ignores_sigint

from madqa.cli.errors import UserError
from madqa.cli.serve import INTERRUPTED, busy_message, check_free, resolve_port, serve

pytest.importorskip("gradio")

READY_S = 240.0  # a loaded 2-core machine: start-up can take minutes; the wait ends as soon as the line is there


def test_port_precedence_flag_then_env_then_default() -> None:
    assert resolve_port(9001, 7860, {"GRADIO_SERVER_PORT": "9002"}) == 9001
    assert resolve_port(None, 7860, {"GRADIO_SERVER_PORT": "9002"}) == 9002
    assert resolve_port(None, 7860, {"GRADIO_SERVER_PORT": " "}) == 7860
    assert resolve_port(None, 7860, {}) == 7860
    with pytest.raises(UserError, match="GRADIO_SERVER_PORT='http'"):
        resolve_port(None, 7860, {"GRADIO_SERVER_PORT": "http"})


def test_space_does_not_pass_its_default_port_over_the_env_var(monkeypatch) -> None:
    from madqa.cli import build_parser

    args = build_parser().parse_args(["space"])
    assert args.port is None  # an explicit 7860 here is what made GRADIO_SERVER_PORT useless
    monkeypatch.setenv("GRADIO_SERVER_PORT", "7999")
    assert resolve_port(args.port, 7860) == 7999


@pytest.fixture(name="taken")
def taken_fixture() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_check_free_names_the_port_and_both_ways_to_change_it(taken: int) -> None:
    with pytest.raises(UserError) as info:
        check_free("127.0.0.1", taken)
    assert str(info.value) == busy_message(taken, "127.0.0.1")
    assert f"port {taken}" in str(info.value) and "--port" in str(info.value)
    assert "GRADIO_SERVER_PORT" in str(info.value)


def test_a_port_taken_at_bind_time_is_the_same_one_line() -> None:
    def launch() -> None:
        raise OSError("Cannot find empty port in range: 7861-7861. You can specify a different port by setting ...")

    with pytest.raises(UserError, match="port 7861 on 127.0.0.1 is already in use"):
        serve(launch, host="127.0.0.1", port=7861, what="x")


def test_serve_closes_the_server_when_stopped() -> None:
    closed = threading.Event()

    class Server:
        def close(self) -> None:
            closed.set()

    stop = threading.Event()
    stop.set()
    assert serve(Server, host="h", port=1, what="x", stop=stop) == 0 and closed.is_set()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GRADIO_SERVER_PORT"}
    return {**env, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **extra}


def _madqa(*argv: str, **popen: object) -> subprocess.Popen[str]:
    """Start ``madqa ARGV`` (Ctrl+C is not ignored: see conftest's ``_ctrl_c_not_ignored``)."""
    cmd = [sys.executable, "-m", "madqa.cli", *argv]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)  # type: ignore
    _started.append(proc)
    return proc


_started: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_server_outlives_its_test() -> Iterator[None]:
    """A failed wait must not leave a server running beside the rest of the suite (it holds a port and CPU)."""
    yield
    while _started:
        proc = _started.pop()
        if proc.poll() is None:
            try:  # a command started in its own session takes its scoring workers along
                if os.getpgid(proc.pid) == proc.pid:
                    os.killpg(proc.pid, signal.SIGKILL)
                else:
                    proc.kill()
            except ProcessLookupError:
                pass
            proc.wait(timeout=60)


def _view_files(tmp_path: Path) -> list[str]:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps(
            {"id": "q1", "question": "Q?", "answer_variants": [["a"]], "evidence": [{"document": "d.pdf", "page": 1}]}
        )
        + "\n"
    )
    results = tmp_path / "run.jsonl"
    results.write_text(json.dumps({"id": "q1", "answer": ["a"], "citations": [], "steps": 1}) + "\n")
    return [str(results), "--gold", str(gold), "--no-thumbnails", "--resamples", "10"]


@pytest.mark.parametrize("command", ["space", "human", "view"])
def test_busy_port_is_one_line_and_exit_2(command: str, taken: int, tmp_path: Path) -> None:
    argv = {"space": ["space", "--no-seed"], "human": ["human"], "view": ["view", *_view_files(tmp_path)]}[command]
    proc = _madqa(*argv, "--port", str(taken), env=_env(MADQA_HOME=str(tmp_path / "home")))
    out, err = proc.communicate(timeout=READY_S)
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"port {taken}" in lines[0] and "--port" in lines[0], err
    assert "GRADIO_SERVER_PORT" in lines[0]


def _wait_for_line(stream, needle: str, timeout: float) -> list[str]:
    """Lines of ``stream`` up to the first containing ``needle`` (read in a thread; fails after ``timeout``)."""
    seen: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in stream:
            seen.append(line)
            if needle in line:
                found.set()
                return

    threading.Thread(target=read, daemon=True).start()
    assert found.wait(timeout), f"no {needle!r} line in {timeout} s: {''.join(seen)}"
    return seen


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _ctrl_c(proc: subprocess.Popen[str], ready: str, *, children: int = 0) -> tuple[int, str]:
    """Wait for ``ready`` on stderr (and ``children`` child processes ignoring SIGINT), Ctrl+C, return (rc, rest)."""
    assert proc.stderr is not None
    _wait_for_line(proc.stderr, ready, READY_S)
    deadline = time.monotonic() + READY_S  # a condition, polled: the workers have reached their SIGINT setting
    while children and sum(map(ignores_sigint, _children(proc.pid))) < children:
        assert time.monotonic() < deadline, "the scoring workers never started"
        time.sleep(0.05)
    assert not ignores_sigint(proc.pid), "the command was started with Ctrl+C ignored"
    os.killpg(proc.pid, signal.SIGINT)
    _, rest = proc.communicate(timeout=READY_S)
    return proc.returncode, rest


@pytest.mark.slow
def test_ctrl_c_on_view_is_one_line_and_130(tmp_path: Path) -> None:
    port = _free_port()
    proc = _madqa("view", *_view_files(tmp_path), "--port", str(port), env=_env(), start_new_session=True)
    rc, rest = _ctrl_c(proc, f"serving the explorer on http://127.0.0.1:{port}/")
    assert rc == INTERRUPTED and "Traceback" not in rest
    assert rest.strip().splitlines() == ["INFO madqa.cli.serve: stopped the explorer (Ctrl+C)"], rest


@pytest.mark.slow
def test_ctrl_c_on_the_space_stops_its_scoring_workers_quietly(built_home: Path, tmp_path: Path) -> None:
    port = _free_port()
    env = _env(
        MADQA_HOME=str(built_home),
        MADQA_SPACE_DB=str(tmp_path / "board.sqlite"),
        MADQA_SPACE_SCORE_WORKERS="1",
        GRADIO_SERVER_PORT=str(port),
    )
    proc = _madqa("space", "--no-seed", env=env, start_new_session=True)
    rc, rest = _ctrl_c(proc, f"serving the MADQA Space on http://127.0.0.1:{port}/", children=1)
    assert rc == INTERRUPTED and "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
    assert rest.strip().splitlines() == ["INFO madqa.cli.serve: stopped the MADQA Space (Ctrl+C)"], rest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
