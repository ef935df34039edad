"""``madqa bench first-run``: minutes from a clean clone to a served demo and to a first scored run.

What a newcomer does, timed step by step on this machine, in a temporary folder (own ``MADQA_HOME`` and
``HF_HOME``, so nothing already set up here is reused; pip's wheel cache is, as the target assumes):

1. ``git clone`` of ``--repo`` (default: the checkout this module is in) at ``--commit`` (default: its ``HEAD``);
2. ``python3 -m venv .venv`` and ``pip install -e '.[demo]'``;
3. ``madqa setup`` (the sample: generated, extracted, indexed);
4. **served demo**: ``madqa space`` until it answers HTTP 200 (then stopped);
5. **first scored run**: ``madqa run --agent bm25 --model local --limit 3`` and ``madqa evaluate``.

The served demo is steps 1-4; the first scored run is steps 1-3 and 5 (the README's quick start, which does not
start the Space first). Each is printed against the target of 5 minutes with cached wheels. Needs git and a
Python >= 3.11 (``--python``); the network only where pip's cache lacks a wheel.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import BenchError
from .measure import emit

logger = logging.getLogger(__name__)

TARGET_MIN = 5.0
#: Steps of each figure (by name; see the module docstring).
SERVED_DEMO = ("clone", "venv", "install", "setup", "space")
FIRST_SCORED_RUN = ("clone", "venv", "install", "setup", "run", "evaluate")

EXAMPLES = ("madqa bench first-run --json", "madqa bench first-run --commit HEAD~1 --keep /tmp/first-run")


def configure(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options."""
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--repo", default=str(here), help="the repository to clone (this checkout)")
    parser.add_argument("--commit", default="HEAD", help="the commit to check out")
    parser.add_argument("--python", default="python3", help="the Python that makes the venv (>= 3.11)")
    parser.add_argument("--limit", type=int, default=3, help="questions of the first run")
    parser.add_argument("--space-timeout", type=float, default=600.0, help="seconds to wait for the Space's HTTP")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


@dataclass(frozen=True)
class Step:
    """One timed step: its name, seconds, and the command's exit status (0: it worked)."""

    name: str
    seconds: float
    returncode: int = 0


def summarise(steps: list[Step], target_min: float = TARGET_MIN) -> dict[str, Any]:
    """The two figures (minutes, and whether within the target) from the timed steps.

    A figure whose steps did not all run, or one of which failed, is ``None`` (with the failed step named).
    """
    seconds = {s.name: s.seconds for s in steps}
    failed = next((s.name for s in steps if s.returncode != 0), None)
    figures: dict[str, Any] = {"target_min": target_min, "failed_step": failed}
    for key, names in (("served_demo_min", SERVED_DEMO), ("first_scored_run_min", FIRST_SCORED_RUN)):
        complete = all(n in seconds for n in names) and not any(s.returncode for s in steps if s.name in names)
        minutes = sum(seconds[n] for n in names) / 60 if complete else None
        figures[key] = None if minutes is None else round(minutes, 2)
        figures[key.replace("_min", "_within_target")] = None if minutes is None else minutes <= target_min
    figures["steps"] = [{"name": s.name, "s": round(s.seconds, 1), "rc": s.returncode} for s in steps]
    return figures


def report_lines(figures: dict[str, Any]) -> list[str]:
    """The readable report: one line per step, then each figure against the target."""
    lines = ["time to first result from a clean clone (cached wheels):"]
    for step in figures["steps"]:
        status = "" if step["rc"] == 0 else f"  FAILED (exit {step['rc']})"
        lines.append(f"  {step['name']:<9} {step['s']:7.1f} s{status}")
    target = figures["target_min"]
    for label, key in (("served demo", "served_demo"), ("first scored run", "first_scored_run")):
        minutes = figures[f"{key}_min"]
        if minutes is None:
            lines.append(f"{label}: not measured (step {figures['failed_step'] or 'missing'} did not complete)")
        else:
            verdict = "within" if figures[f"{key}_within_target"] else "OVER"
            lines.append(f"{label}: {minutes:.1f} min ({verdict} the target of <= {target:g} min)")
    return lines


def run(args: argparse.Namespace) -> int:
    """Clone, install, set up, serve and run, timing each step; print the two figures against the target."""
    if args.limit < 1:
        raise BenchError("--limit must be positive")
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        steps = _measure(args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="madqa-first-run-") as tmp:
            steps = _measure(args, Path(tmp))
    figures = summarise(steps)
    emit(figures, report_lines(figures), args.json)
    return 0 if figures["failed_step"] is None else 1


def _measure(args: argparse.Namespace, work: Path) -> list[Step]:
    clone = work / "madqa"
    if clone.exists():
        raise BenchError(f"{clone} exists: give --keep an empty folder")
    env = {
        **os.environ,
        "MADQA_HOME": str(work / "home"),
        "HF_HOME": str(work / "hf"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    env.pop("PYTHONPATH", None)  # the clone's own install, not the checkout running this
    env.pop("VIRTUAL_ENV", None)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    madqa = str(clone / ".venv" / "bin" / "madqa")
    results = str(work / "first-run.jsonl")
    plan: list[tuple[str, list[str], Path]] = [
        ("clone", ["git", "clone", "-q", "--no-checkout", args.repo, str(clone)], work),
        ("venv", [args.python, "-m", "venv", ".venv"], clone),
        ("install", [str(clone / ".venv" / "bin" / "pip"), "install", "-q", "-e", ".[demo]"], clone),
        ("setup", [madqa, "setup"], clone),
    ]
    steps: list[Step] = []
    for name, command, cwd in plan:
        steps.append(_timed(name, command, cwd, env, logs))
        if steps[-1].returncode:
            return steps
        if name == "clone":
            checkout = subprocess.run(["git", "-C", str(clone), "checkout", "-q", _resolve(args)], env=env)
            if checkout.returncode:
                raise BenchError(f"cannot check out {args.commit} in the clone of {args.repo}")
    steps.append(_serve(madqa, clone, env, logs, args.space_timeout))
    if steps[-1].returncode:
        return steps
    first_run = [madqa, "run", "--agent", "bm25", "--model", "local", "--limit", str(args.limit), "-o", results]
    steps.append(_timed("run", first_run, clone, env, logs))
    if steps[-1].returncode == 0:
        steps.append(_timed("evaluate", [madqa, "evaluate", results, "--split", "dev"], clone, env, logs))
    return steps


def _resolve(args: argparse.Namespace) -> str:
    """The commit ``--commit`` names in ``--repo`` (a clone's HEAD is its default branch, not the repo's HEAD)."""
    found = subprocess.run(
        ["git", "-C", args.repo, "rev-parse", "--verify", f"{args.commit}^{{commit}}"], capture_output=True, text=True
    )
    if found.returncode:
        raise BenchError(f"--commit {args.commit}: no such commit in {args.repo}")
    return found.stdout.strip()


def _timed(name: str, command: list[str], cwd: Path, env: dict[str, str], logs: Path) -> Step:
    logger.info("first-run: %s: %s", name, " ".join(command))
    start = time.perf_counter()
    with open(logs / f"{name}.log", "wb") as log:
        done = subprocess.run(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    step = Step(name, time.perf_counter() - start, done.returncode)
    if step.returncode:
        logger.error("first-run: %s failed (exit %d); its output: %s", name, step.returncode, logs / f"{name}.log")
    return step


def _serve(madqa: str, clone: Path, env: dict[str, str], logs: Path, timeout: float) -> Step:
    """Start ``madqa space`` and time it until its page answers HTTP 200; stop it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    logger.info("first-run: space: serving on port %d", port)
    start = time.perf_counter()
    with open(logs / "space.log", "wb") as log:
        server = subprocess.Popen([madqa, "space", "--port", str(port)], cwd=clone, env=env, stdout=log, stderr=log)
        try:
            while time.perf_counter() - start < timeout:
                if server.poll() is not None:
                    return Step("space", time.perf_counter() - start, server.returncode or 1)
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                        if page.status == 200:
                            return Step("space", time.perf_counter() - start)
                except OSError:
                    pass
                time.sleep(0.5)
            return Step("space", time.perf_counter() - start, 124)
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
