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
import time
from collections.abc import Callable
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its new parent, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_for(condition: Callable[[], bool], what: str, limit_s: float = 300.0) -> None:
    """Return as soon as ``condition()`` holds; fail naming ``what`` after a generous ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_worker_mid_file_when_the_server_is_killed_exits_without_a_traceback(tmp_path: Path) -> None:
    log_path, pid_file = tmp_path / "server.log", tmp_path / "scoring.pid"
    env = {**os.environ, "MADQA_TEST_GATE_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)}  # fmt: skip
    with log_path.open("wb") as log:
        server = subprocess.Popen([sys.executable, "-c", "import scoring_gate; scoring_gate.drive()"], env=env,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    worker = None
    try:
        _wait_for(lambda: pid_file.is_file() or server.poll() is not None, "the worker to take the file")
        assert server.poll() is None, log_path.read_text(errors="replace")
        worker = int(pid_file.read_text())
        assert _alive(worker)
        os.kill(server.pid, signal.SIGKILL)  # the server only, as `kill -9` or the OOM killer: its worker is mid-file
        server.wait(timeout=60)
        _wait_for(lambda: not _alive(worker), "the orphaned worker to end")
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=60)
        if worker is not None and _alive(worker):
            os.kill(worker, signal.SIGKILL)
    text = log_path.read_text(errors="replace")
    assert "Traceback" not in text and "Error:" not in text, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines == [f"scoring process {worker}: the server went away before the result was sent (BrokenPipeError); "
                     "exiting"], text  # fmt: skip


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
    from test_space_app import free_port, gold_rows

    port, log_path, db = free_port(), tmp_path / "space.log", tmp_path / "board.sqlite"
    env = {k: v for k, v in os.environ.items() if k != "GRADIO_SERVER_PORT"}
    env.update(MADQA_HOME=str(layout.root), MADQA_SPACE_DB=str(db), MADQA_SPACE_SCORE_WORKERS="1",
               GRADIO_SERVER_PORT=str(port), GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1",
               MADQA_SPACE_RESAMPLES="10")  # fmt: skip
    with log_path.open("wb") as log:
        space = subprocess.Popen([sys.executable, "-m", "madqa.cli", "space", "--no-seed"], env=env, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    client = None
    try:
        url = f"http://127.0.0.1:{port}/"
        _wait_for(lambda: f"serving the MADQA Space on {url}" in log_path.read_text(errors="replace")
                  or space.poll() is not None, "the Space to serve")  # fmt: skip
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
        results.write_text("".join(json.dumps({"id": r["id"], "answer": r["answer_variants"][0], "steps": 1}) + "\n"
                                   for r in rows), encoding="utf-8")  # fmt: skip
        argv = [sys.executable, str(TESTS / "gone_client.py"), url, str(results)]
        client = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env={**env, "PYTHONPATH": str(TESTS)})
        assert client.stdout is not None and client.stdout.readline().strip() == "processing"
        client.kill()
        client.wait(timeout=60)
        stored = "INFO madqa.space.submission: accepted submission 1 (gone sys)"
        _wait_for(lambda: stored in log_path.read_text(errors="replace"), "the left submission to be stored")
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
