"""Expected events leave no traceback in the Space's log: a server killed (-9) while a scoring worker is mid-file,
and clients that go away mid-request.

The kill is real: the "server" (:func:`scoring_gate.drive`) runs in its own process and session, its scoring
worker holds the file at a gate until the server is gone, then finishes and sends its reply into a dead pipe.
Everything both processes write goes to one log file, as the Space's does.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import TESTS
from helpers.polling import wait_until

from madqa.space.scoring_pool import STOPPING_MESSAGE, PoolClosed

pytestmark = pytest.mark.server

#: This file's folder: subprocesses import its model factories (``py:test_…``) by name.
HERE = Path(__file__).resolve().parent
#: A generous limit on each wait (a safety net against a hang; a loaded machine starts a Space slowly).
QUIET_LIMIT_S = 300.0


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its new parent, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_worker_mid_file_when_the_server_is_killed_exits_without_a_traceback(tmp_path: Path) -> None:
    log_path, pid_file = tmp_path / "server.log", tmp_path / "scoring.pid"
    env = {
        **os.environ,
        "MADQA_TEST_GATE_DIR": str(tmp_path),
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join(p for p in (str(HERE), str(TESTS), os.environ.get("PYTHONPATH")) if p),
    }
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-c", "import helpers.scoring_gate as scoring_gate; scoring_gate.drive()"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker = None
    try:
        wait_until(
            lambda: pid_file.is_file() or server.poll() is not None,
            "the worker to take the file",
            limit_s=QUIET_LIMIT_S,
        )
        assert server.poll() is None, log_path.read_text(errors="replace")
        worker = int(pid_file.read_text())
        assert _alive(worker)
        os.kill(server.pid, signal.SIGKILL)  # the server only, as `kill -9` or the OOM killer: its worker is mid-file
        server.wait(timeout=60)
        wait_until(lambda: not _alive(worker), "the orphaned worker to end", limit_s=QUIET_LIMIT_S)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=60)
        if worker is not None and _alive(worker):
            os.kill(worker, signal.SIGKILL)
    text = log_path.read_text(errors="replace")
    assert "Traceback" not in text and "Error:" not in text, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines == [
        f"scoring process {worker}: the server went away before the result was sent (BrokenPipeError); exiting"
    ], text


#: The "server" of the exit test: its own atexit handler, registered before multiprocessing's and the pool's (so it
#: runs after both), waits for the scoring thread and writes what ``evaluate`` raised.
EXIT_DRIVER = """
import atexit, os
from pathlib import Path
outcome = {}
def report():
    outcome["thread"].join(300)
    (Path(os.environ["MADQA_TEST_GATE_DIR"]) / "outcome.txt").write_text(str(outcome.get("error", "running")))
atexit.register(report)
import helpers.scoring_gate as scoring_gate
scoring_gate.drive_exit(outcome)
"""


@pytest.mark.parametrize("paused", [False, True], ids=["running", "paused"])
def test_a_server_that_stops_mid_file_leaves_it_undecided_and_spawns_nothing(paused: bool, tmp_path: Path) -> None:
    """An ordinary exit (after Ctrl+C) with a file mid-scoring: multiprocessing ends the worker at exit. That is not a
    lost worker (no warning, no replacement started while the interpreter stops) and not a verdict on the file
    (:class:`PoolClosed`, so the private part stays queued instead of being recorded as over budget). A worker paused
    (SIGSTOP) at that moment, as the private part's is while an answer is at work, is continued so that it can end:
    a stopped process holds the SIGTERM and the exit would wait for it forever."""
    env = {
        **os.environ,
        "MADQA_TEST_GATE_DIR": str(tmp_path),
        "PYTHONUNBUFFERED": "1",
        "MADQA_TEST_PAUSE": "x" if paused else "",
        "PYTHONPATH": os.pathsep.join(p for p in (str(HERE), str(TESTS), os.environ.get("PYTHONPATH")) if p),
    }
    pid_file = tmp_path / "scoring.pid"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", EXIT_DRIVER], env=env, capture_output=True, text=True, timeout=300
        )
    finally:  # a failed exit must not leave its worker (stopped, perhaps) beside the rest of the suite
        if pid_file.is_file() and _alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert proc.returncode == 0, proc.stderr
    assert pid_file.is_file()  # the worker had the file when the server stopped
    assert (tmp_path / "outcome.txt").read_text() == f"PoolClosed: {STOPPING_MESSAGE}"
    assert proc.stderr == "", proc.stderr  # no "scoring process lost; replacing it", no traceback


def test_the_private_part_cut_short_by_a_stop_stays_queued(tmp_path: Path) -> None:
    from helpers.private_part import FORM, _scorer, _text

    scorer, refs = _scorer(tmp_path)

    def stopping(text: str) -> Any:  # what the private pool's evaluate raises when the Space stops mid-file
        raise PoolClosed(STOPPING_MESSAGE)

    scorer.private._evaluate = stopping
    text = _text(refs, {r.id for r in refs})
    acc = scorer.submit_text(text, FORM)
    assert scorer.private.drain(60)
    scores = scorer.private.scores
    assert scores.results() == [] and [job[0] for job in scores.pending()] == [acc.id]  # the next start scores it


def _half_request(port: int, head: str, length: int, sent: bytes) -> None:
    """Send a request's head and the first bytes of a body of ``length``, then go away (the client is gone)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(f"{head}\r\nHost: 127.0.0.1\r\nContent-Length: {length}\r\n\r\n".encode() + sent)


@pytest.mark.slow
def test_clients_gone_mid_request_leave_no_traceback_in_the_space_log(layout, tmp_path: Path) -> None:
    """``madqa space`` for real, its log in a file: an upload and a queue request cut short, and a visitor whose
    client process is killed while the Space scores the file. Gradio alone logs a ``ClientDisconnect`` traceback
    for the first (its upload route reads the body itself); the Space's upload gate reads it first and lets a
    client that went away go. The Space then stores the left submission, serves on and stops cleanly."""
    import httpx
    from helpers.ports import free_port
    from helpers.space_fixtures import gold as gold_rows

    port, log_path, db = free_port(), tmp_path / "space.log", tmp_path / "board.sqlite"
    env = {k: v for k, v in os.environ.items() if k != "GRADIO_SERVER_PORT"}
    env.update(
        MADQA_HOME=str(layout.root),
        MADQA_SPACE_DB=str(db),
        MADQA_SPACE_SCORE_WORKERS="1",
        GRADIO_SERVER_PORT=str(port),
        GRADIO_ANALYTICS_ENABLED="False",
        PYTHONUNBUFFERED="1",
        MADQA_SPACE_RESAMPLES="10",
    )
    with log_path.open("wb") as log:
        space = subprocess.Popen(
            [sys.executable, "-m", "madqa.cli", "space", "--no-seed"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    client = None
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_until(
            lambda: (
                f"serving the MADQA Space on {url}" in log_path.read_text(errors="replace") or space.poll() is not None
            ),
            "the Space to serve",
            limit_s=QUIET_LIMIT_S,
        )
        assert space.poll() is None, log_path.read_text(errors="replace")
        # 1. an upload cut short: the gate is reading its body when the client goes
        _half_request(
            port,
            "POST /gradio_api/upload HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=B",
            100_000,
            b'--B\r\nContent-Disposition: form-data; name="files"; filename="r.jsonl"\r\n\r\n{',
        )
        # 2. a queue request cut short (not an upload: gradio reads it)
        _half_request(port, "POST /gradio_api/queue/join HTTP/1.1\r\nContent-Type: application/json", 500, b'{"da')
        # 3. a submission whose visitor leaves while it is scored (the client process is killed)
        rows = gold_rows(layout)
        results = tmp_path / "r.jsonl"
        results.write_text(
            "".join(json.dumps({"id": r["id"], "answer": r["answer_variants"][0], "steps": 1}) + "\n" for r in rows),
            encoding="utf-8",
        )
        argv = [sys.executable, str(TESTS / "helpers" / "gone_client.py"), url, str(results)]
        client = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            text=True,
            env={**env, "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS)])},
        )
        assert client.stdout is not None and client.stdout.readline().strip() == "processing"
        client.kill()
        client.wait(timeout=60)
        stored = "INFO madqa.space.submission: accepted submission 1 (gone sys)"
        wait_until(
            lambda: stored in log_path.read_text(errors="replace"),
            "the left submission to be stored",
            limit_s=QUIET_LIMIT_S,
        )
        assert httpx.get(url, timeout=60).status_code == 200  # the Space serves on
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        if space.poll() is None:
            os.killpg(space.pid, signal.SIGINT)
            try:
                space.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(space.pid, signal.SIGKILL)
                space.wait(timeout=60)
    text = log_path.read_text(errors="replace")
    assert "Traceback" not in text and "Exception in ASGI application" not in text, text
    assert "INFO madqa.cli.serve: stopped the MADQA Space (Ctrl+C)" in text, text
