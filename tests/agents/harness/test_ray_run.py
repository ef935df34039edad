"""``madqa run --ray``: the same records as the local run on a local 2-node Ray cluster, a worker node killed mid-run
(nothing lost or duplicated, resume completes), and the error without Ray naming the extra.

The cluster is :func:`ray_fixtures.cluster` (a head and a worker node, started once for this module).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import helpers.ray_fixtures as ray_fixtures
import pytest
from helpers.ray_fixtures import TESTS, needs_ray

from madqa.agents.harness.runner import RunConfig, run_benchmark

#: This file's folder: subprocesses import its model factories (``py:test_…``) by name.
HERE = Path(__file__).resolve().parent

FAKE = "py:helpers.fake_runs:fake_model"
cluster = ray_fixtures.cluster  # this module's cluster
#: Keys that hold wall times (they differ between any two runs).
TIMING_KEYS = {"elapsed_s", "seconds", "duration", "duration_s", "start_time", "end_time", "timing"}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def without_timings(value: Any) -> Any:
    """``value`` with every wall-time field removed, at any depth, and the scripted model's call counter (its
    ``step N`` text counts the calls of one model object, so it depends on which slot got which question)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return re.sub(r"^step \d+$", "step N", value) if isinstance(value, str) else value


@pytest.mark.slow
@needs_ray
def test_ray_run_writes_the_local_runs_records(cluster, tmp_path: Path) -> None:
    from madqa.agents.harness.ray_run import RayBackend

    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    run_benchmark(RunConfig(model=FAKE, limit=6), local, workers=2)
    summary = run_benchmark(RunConfig(model=FAKE, limit=6), remote, workers=3, backend=RayBackend())
    assert summary.written == 6 and summary.errors == 0
    ours = sorted((without_timings(r) for r in lines(remote)), key=lambda r: r["id"])
    theirs = sorted((without_timings(r) for r in lines(local)), key=lambda r: r["id"])
    assert ours == theirs
    assert ours[0]["trajectory"] and ours[0]["config"]["observe"] == "text"  # the comparison compared something


@pytest.mark.slow
@needs_ray
def test_cli_run_ray_then_resume(cluster, tmp_path: Path, caplog) -> None:
    from madqa.cli import main

    out = tmp_path / "cli.jsonl"
    with caplog.at_level("INFO"):
        assert (
            main(["run", "--ray", "--model", FAKE, "--limit", "3", "-o", str(out), "--no-progress", "--workers", "2"])
            == 0
        )
    assert "running accuracy 1/3" in caplog.text
    assert main(["run", "--ray", "--model", FAKE, "--limit", "5", "-o", str(out), "--no-progress", "--resume"]) == 0
    ids = [r["id"] for r in lines(out)]
    assert len(ids) == 5 == len(set(ids))


@pytest.mark.slow
@needs_ray
def test_killed_worker_node_loses_and_duplicates_nothing(cluster, tmp_path: Path, monkeypatch) -> None:
    """A third node joins, gets an actor, and is killed while questions are in flight on it."""
    from madqa.agents.harness.ray_run import RayBackend

    monkeypatch.setenv("MADQA_FAKE_DELAY", "0.4")  # forwarded to the actors (MADQA_*): the run takes seconds
    victim = cluster.add_node(num_cpus=1, object_store_memory=80 * 2**20)
    cluster.wait_for_nodes()
    out, limit = tmp_path / "kill.jsonl", 10
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["summary"] = run_benchmark(
                RunConfig(model=FAKE, limit=limit), out, workers=3, backend=RayBackend()
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=work)
    thread.start()
    # Wait on the condition: on a loaded machine the actors take minutes to start (a load test saw over 120 s).
    # The deadline is only a safety net against a hang.
    deadline = time.monotonic() + 1200
    while thread.is_alive() and time.monotonic() < deadline and (not out.exists() or len(lines(out)) < 2):
        time.sleep(0.1)
    assert thread.is_alive(), f"the run ended before the node could be killed: {outcome}"
    assert out.exists() and 2 <= len(lines(out)) < limit, "no two lines written after 1200 s"
    cluster.remove_node(victim, allow_graceful=False)
    thread.join(timeout=1200)  # a safety net: the resent questions wait for a new actor, minutes on a busy machine
    assert not thread.is_alive() and "error" not in outcome, outcome.get("error")
    rows = lines(out)
    assert len(rows) == limit == len({r["id"] for r in rows})  # every question once: none lost, none written twice
    assert outcome["summary"].errors == 0, [r["error"] for r in rows if r["error"]]  # in-flight ones were resent
    monkeypatch.setenv("MADQA_FAKE_DELAY", "0")
    again = run_benchmark(
        RunConfig(model=FAKE, limit=limit + 2), out, resume=True, retry_errors=True, workers=2, backend=RayBackend()
    )
    rows = lines(out)
    assert again.written == 2 + outcome["summary"].errors and len(rows) == limit + 2 == len({r["id"] for r in rows})
    assert all(r["error"] is None for r in rows)


def test_without_ray_the_error_names_the_extra(layout, tmp_path: Path, monkeypatch, caplog) -> None:
    import importlib.util

    from madqa.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    assert main(["run", "--ray", "--model", FAKE, "--limit", "1", "-o", str(tmp_path / "x.jsonl")]) == 2
    assert "pip install 'madqa[ray]'" in caplog.text
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.slow
def test_a_local_run_never_imports_ray(layout, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    code = (
        "import sys; from madqa.cli import main; "
        f"rc = main(['-q', 'run', '--model', {FAKE!r}, '--limit', '1', '-o', {str(tmp_path / 'l.jsonl')!r}, "
        "'--no-progress']); print(rc, 'ray' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["0", "False"], done.stderr
