"""Expected events leave no traceback in the Space's log: a server killed (-9) while a scoring worker is mid-file.

The kill is real: the "server" (:func:`scoring_gate.drive`) runs in its own process and session, its scoring
worker holds the file at a gate until the server is gone, then finishes and sends its reply into a dead pipe.
Everything both processes write goes to one log file, as the Space's does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

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
