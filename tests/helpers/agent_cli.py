"""An agent run as a user starts it: ``madqa run`` and ``madqa evaluate`` in a subprocess, and the prepared agent
in this process, as the agent tests drive them.

The subprocess finds the test's model factories (``--model py:<test module>:<factory>``) because the test's own
folder and ``tests/`` come first on its ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from helpers.paths import TESTS


def madqa_env(test_folder: Path, **extra: str) -> dict[str, str]:
    """This process's environment with ``extra`` set, and ``test_folder`` and ``tests/`` first on ``PYTHONPATH``."""
    path = os.pathsep.join([str(test_folder), str(TESTS), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, **extra, "PYTHONPATH": path}


def madqa(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``madqa ARGS`` in a subprocess, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "madqa.cli", *args], env=env, capture_output=True, text=True, timeout=600
    )


def kill_9_once_written(cmd: list[str], env: dict[str, str], output: Path, n_lines: int, timeout: float) -> None:
    """Start ``cmd`` and ``kill -9`` it as soon as ``output`` holds ``n_lines`` lines (within ``timeout`` s): a run
    stopped mid-way, as a crash or an out-of-memory kill leaves it."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (not output.exists() or output.read_bytes().count(b"\n") < n_lines):
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def run_agent(agent: str, output: Path, flags: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``madqa run --agent AGENT FLAGS -o OUTPUT --no-progress``."""
    return madqa(["run", "--agent", agent, *flags, "-o", str(output), "--no-progress"], env)


def results_lines(output: Path) -> list[dict[str, Any]]:
    """The results lines a run wrote."""
    return [json.loads(x) for x in output.read_text(encoding="utf-8").splitlines()]


def run_agent_lines(agent: str, output: Path, flags: list[str], env: dict[str, str]) -> list[dict[str, Any]]:
    """The results lines of :func:`run_agent`, which must succeed."""
    done = run_agent(agent, output, flags, env)
    assert done.returncode == 0, done.stderr
    return results_lines(output)


def evaluate_json(output: Path, env: dict[str, str]) -> dict[str, Any]:
    """The report of ``madqa evaluate OUTPUT --split dev --json``, which must succeed."""
    scored = madqa(["evaluate", str(output), "--split", "dev", "--json"], env)
    assert scored.returncode == 0, scored.stderr
    return json.loads(scored.stdout)


def prepare_agent(agent: str, **fields: Any) -> Any:
    """The prepared agent for ``fields``: ``model`` and ``max_steps`` go to the runner, the rest are the agent's
    options; the run is checked as ``madqa run`` checks it first."""
    from madqa.agents.harness.config import RunConfig
    from madqa.agents.harness.registry import check_config, get_agent

    entry = get_agent(agent)
    runner = {k: fields.pop(k) for k in ("model", "max_steps") if k in fields}
    config = RunConfig(agent=agent, **runner, options=fields)
    check_config(config)
    sys.path.insert(0, str(TESTS))  # where the model factories' ``helpers`` imports come from
    return entry.prepare(config)
