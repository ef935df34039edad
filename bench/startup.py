"""``madqa bench startup``: the start-up cost of the commands users start most, against their targets (issue 47).

Each command runs in a fresh interpreter, the commands in turn (interpreter, ``--help``, evaluate, …) for
``--repeat`` rounds, so a change in the machine's load falls on all of them; each figure is the median wall time
(min and max beside it, and the median CPU seconds, which a loaded machine inflates less) and the peak resident
memory (``VmHWM`` of the command's own process, reported by it at exit: a child's ``ru_maxrss`` would count the
bench's memory at the fork). The load average is printed with them.

Targets: ``madqa evaluate`` of 2,250 lines (synthetic, ``--gold``) <= 1 s; ``madqa --help`` <= 3x the bare
interpreter (medians of the same rounds); a Space scoring worker <= 120 MiB (:mod:`.startup_probe`); the Space
(``python -m madqa.space.app``, fresh board seeded) answering <= 5 s. ``madqa info`` and ``madqa run --agent bm25``
through the first question (a scripted model without latency) need the built sample; for them, and for every
command, the check is that none of :data:`HEAVY` is imported (``sys.modules`` at the exit of one more run).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .measure import cpu_seconds, emit

TARGET_EVALUATE_S = 1.0
TARGET_HELP_RATIO = 3.0
TARGET_WORKER_MIB = 120.0
TARGET_SPACE_S = 5.0
EVALUATE_LINES = 2250
#: Kuiper bootstrap resamples of the timed ``madqa evaluate`` (its default).
RESAMPLES = 1000
#: Packages a command imports only when it needs them: none of the measured commands does.
HEAVY = ("scipy", "torch", "transformers", "gradio")

#: Command lines that ``madqa bench startup --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench startup --repeat 5", "madqa bench startup --no-space --json")

#: Runs a module as ``python -m`` does and, at exit, writes the process's peak memory (kB) to $MADQA_BENCH_HWM and
#: ``sys.modules`` to $MADQA_BENCH_MODULES (``-X importtime`` misses what ``importlib.import_module`` imports).
_REPORTER = (
    "import atexit, os, sys\n"
    "def _report():\n"
    "    line = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')]\n"
    "    open(os.environ['MADQA_BENCH_HWM'], 'w').write(line[0].split()[1] if line else '0')\n"
    "    if os.environ.get('MADQA_BENCH_MODULES'):\n"
    "        open(os.environ['MADQA_BENCH_MODULES'], 'w').write('\\n'.join(sys.modules))\n"
    "atexit.register(_report)\n"
)
_IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|( *)(\S+)\s*$")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the start-up benchmark's arguments."""
    parser.add_argument("--repeat", type=int, default=5, help="rounds of every command; medians are reported")
    parser.add_argument("--no-space", action="store_true", help="skip the Space's start-up (the slowest figure)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def imported_modules(importtime_stderr: str) -> set[str]:
    """The module names in ``-X importtime`` output (``PYTHONPROFILEIMPORTTIME``); other lines are ignored."""
    return {m.group(2) for line in importtime_stderr.splitlines() if (m := _IMPORT_LINE.match(line))}


def heavy_in(modules: set[str]) -> list[str]:
    """The packages of :data:`HEAVY` that ``modules`` holds (a package or any of its submodules)."""
    return [h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in modules)]


def _python(module_argv: Sequence[str] | None) -> list[str]:
    """``python -c`` running ``module_argv`` (a module and its arguments) as ``-m`` would, with the peak reporter."""
    code = _REPORTER
    if module_argv:
        code += f"import runpy\nsys.argv = {list(module_argv)!r}\nrunpy.run_module(sys.argv[0], run_name='__main__')\n"
    return [sys.executable, "-c", code]


def _run_once(
    module_argv: Sequence[str] | None, env: dict[str, str], cwd: Path, modules: Path | None = None
) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak MiB of one run (output discarded; a failure raises with its last line);
    with ``modules``, the names of the modules it imported are written there."""
    hwm = cwd / "hwm.txt"
    env = {**env, "MADQA_BENCH_HWM": str(hwm), "MADQA_BENCH_MODULES": str(modules or "")}
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(_python(module_argv), env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"`{' '.join(module_argv or ['python'])}` exited with {done.returncode}: {last}")
    return wall, cpu_seconds(resource.RUSAGE_CHILDREN) - cpu, int(hwm.read_text() or 0) / 1024


def _imports(module_argv: Sequence[str], env: dict[str, str], cwd: Path) -> set[str]:
    listing = cwd / "modules.txt"
    _run_once(module_argv, env, cwd, listing)
    return set(listing.read_text().splitlines())


def _sample_built() -> str | None:
    from .space_startup import sample_missing

    return sample_missing()


def _commands(tmp: Path, sample_reason: str | None) -> dict[str, list[str] | None]:
    """The measured commands by label (``None``: the bare interpreter)."""
    from .metric import synthetic_run

    gold, text = synthetic_run(EVALUATE_LINES)
    (tmp / "gold.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold), encoding="utf-8")
    (tmp / "run.jsonl").write_text(text, encoding="utf-8")
    # `python -m` command lines, as a user types them (text: the bench runs the command line, it imports no cli)
    commands: dict[str, list[str] | None] = {
        "interpreter": None,
        "help": "madqa.cli --help".split(),
        "evaluate": f"madqa.cli evaluate run.jsonl --gold gold.jsonl --resamples {RESAMPLES}".split(),
    }
    if sample_reason is None:
        commands["info"] = "madqa.cli info".split()
        commands["run"] = (
            "madqa.cli run --agent bm25 --model py:madqa.bench.scale_model:sleepy_model --limit 1 -o first.jsonl "
            "--overwrite --no-progress"
        ).split()
    return commands


def measure(repeat: int, space: bool) -> dict[str, Any]:
    """Every figure of the benchmark (see the module docstring)."""
    sample_reason = _sample_built()
    env = {**os.environ, "MADQA_BENCH_LATENCY": "0", "HF_HUB_OFFLINE": "1"}
    figures: dict[str, Any] = {"load_before": list(os.getloadavg()), "repeat": repeat, "commands": {}}
    with tempfile.TemporaryDirectory(prefix="madqa-bench-startup-") as name:
        tmp = Path(name)
        commands = _commands(tmp, sample_reason)
        walls: dict[str, list[float]] = {label: [] for label in commands}
        cpus: dict[str, list[float]] = {label: [] for label in commands}
        peaks: dict[str, float] = {label: 0.0 for label in commands}
        for _ in range(max(1, repeat)):  # round-robin: every command sees the same load
            for label, argv in commands.items():
                wall, cpu, peak = _run_once(argv, env, tmp)
                walls[label].append(wall)
                cpus[label].append(cpu)
                peaks[label] = max(peaks[label], peak)
        for label, argv in commands.items():
            figures["commands"][label] = {
                "argv": ["python", *(["-m", *argv] if argv else ["-c", "pass"])],
                "wall_s": statistics.median(walls[label]),
                "wall_min_s": min(walls[label]),
                "wall_max_s": max(walls[label]),
                "cpu_s": statistics.median(cpus[label]),
                "peak_rss_mib": peaks[label],
                "heavy_imported": heavy_in(_imports(argv, env, tmp)) if argv else [],
            }
        figures["worker"] = _worker(env, tmp)
    figures["sample_skipped"] = sample_reason
    figures["space"] = _space() if space else {"startup_skipped": "--no-space"}
    figures["load_after"] = list(os.getloadavg())
    figures["checks"] = checks(figures)
    return figures


def _worker(env: dict[str, str], cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "madqa.bench.startup_probe", "--imports"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the scoring-worker probe failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    found = json.loads(done.stdout)
    found["heavy_imported"] = heavy_in(imported_modules(done.stderr))
    return found


def _space() -> dict[str, Any]:
    from .space_startup import startup_figures

    return startup_figures(skip=False)


def checks(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target: what was measured, the target, and whether it was met (``None``: not measured)."""
    commands = figures["commands"]
    ratio = commands["help"]["wall_s"] / commands["interpreter"]["wall_s"]
    space_s = figures["space"].get("startup_s")
    found = [
        _check(
            f"madqa evaluate, {EVALUATE_LINES:,} lines: wall", commands["evaluate"]["wall_s"], TARGET_EVALUATE_S, "s"
        ),
        _check("madqa --help: wall / the interpreter's", ratio, TARGET_HELP_RATIO, "x"),
        _check(
            "Space scoring worker: peak memory", figures["worker"]["worker_peak_rss_mib"], TARGET_WORKER_MIB, "MiB"
        ),
        _check("Space (python -m madqa.space.app) ready", space_s, TARGET_SPACE_S, "s"),
    ]
    for label, found_heavy in [*((k, v["heavy_imported"]) for k, v in commands.items()), ("worker", None)]:
        heavy = figures["worker"]["heavy_imported"] if label == "worker" else found_heavy
        found.append({"what": f"{label}: imports none of {', '.join(HEAVY)}", "value": heavy, "ok": not heavy})
    return found


def _check(what: str, value: float | None, target: float, unit: str) -> dict[str, Any]:
    return {
        "what": what,
        "value": value,
        "target": target,
        "unit": unit,
        "ok": None if value is None else value <= target,
    }


def lines(figures: dict[str, Any]) -> list[str]:
    """The readable report."""
    out = [
        f"start-up, {figures['repeat']} alternated round(s) in one run; load {_load(figures['load_before'])} before, "
        f"{_load(figures['load_after'])} after",
        f"  {'command':<60} {'median':>8} {'min':>7} {'max':>7} {'cpu':>7} {'peak':>9}",
    ]
    for c in figures["commands"].values():
        out.append(
            f"  {' '.join(c['argv'])[:60]:<60} {c['wall_s']:7.3f}s {c['wall_min_s']:6.3f}s {c['wall_max_s']:6.3f}s "
            f"{c['cpu_s']:6.3f}s {c['peak_rss_mib']:6.0f}MiB"
        )
    w = figures["worker"]
    out.append(
        f"  scoring worker ({w['worker_references']:,} references): first score {w['worker_first_score_s']:.2f} s "
        f"after the pool's start, peak {w['worker_peak_rss_mib']:.0f} MiB"
    )
    if figures["sample_skipped"]:
        out.append(f"  madqa info and madqa run: skipped ({figures['sample_skipped']})")
    from .space_startup import startup_lines

    out += startup_lines(figures["space"])
    out.append("checks:")
    for c in figures["checks"]:
        verdict = "n/a " if c["ok"] is None else "PASS" if c["ok"] else "FAIL"
        if "target" in c:
            value = "not measured" if c["value"] is None else f"{c['value']:.2f} {c['unit']}"
            out.append(f"  {verdict} {c['what']}: {value} (target <= {c['target']:g} {c['unit']})")
        else:
            out.append(f"  {verdict} {c['what']}" + (f": imports {', '.join(c['value'])}" if c["value"] else ""))
    return out


def _load(values: Sequence[float]) -> str:
    return "/".join(f"{v:.1f}" for v in values)


def run(args: argparse.Namespace) -> int:
    """Measure, print, and exit 1 when a measured target is missed."""
    figures = measure(args.repeat, space=not args.no_space)
    emit(figures, lines(figures), args.json)
    return 1 if any(c["ok"] is False for c in figures["checks"]) else 0
