"""What the commands users start most import, each in a fresh interpreter: none of the heavy packages (scipy,
torch, transformers, gradio) that they do not need, and the Space (gradio) none of what only a visitor needs
(issue 47).

A command's modules are ``sys.modules`` at its exit (``-X importtime`` misses what ``importlib.import_module``
imports); a Space scoring worker's are its ``-X importtime`` listing. Each test also asserts a module the command
does import, so a listing that was not read fails too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.agent_cli import madqa_env
from helpers.fake_runs import FAKE

from madqa.bench.startup import HEAVY, heavy_in, imported_modules

#: Runs ``python -m MODULE ARGS`` (sys.argv[1:]) and writes ``sys.modules`` at exit to $MADQA_TEST_MODULES.
AT_EXIT = (
    "import atexit, os, runpy, sys\n"
    "atexit.register(lambda: open(os.environ['MADQA_TEST_MODULES'], 'w').write('\\n'.join(sys.modules)))\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
)


def run_captured(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cmd`` (a fresh interpreter) run in ``cwd`` with ``env``, its output captured as text."""
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def imports_of(argv: list[str], env: dict[str, str], cwd: Path) -> set[str]:
    """The modules ``python -m ARGV`` has imported when it exits; it must succeed."""
    listing = cwd / "modules.txt"
    done = run_captured([sys.executable, "-c", AT_EXIT, *argv], {**env, "MADQA_TEST_MODULES": str(listing)}, cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(listing.read_text().splitlines())


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return madqa_env(tmp_path, HF_HUB_OFFLINE="1", MADQA_FAKE_DELAY="0")


def test_help_imports_no_command_module(env, tmp_path) -> None:
    modules = imports_of(["madqa.cli", "--help"], env, tmp_path)
    assert "madqa.cli" in modules and "argparse" in modules
    assert heavy_in(modules) == []
    # bench_cmd is the table of benchmarks whose names the help line lists; it imports none of them
    assert {m for m in modules if m.startswith("madqa.cli.") and m.endswith("_cmd")} == {"madqa.cli.bench_cmd"}
    assert not {m for m in modules if m.startswith("madqa.bench.")}
    assert not {"numpy", "datasets", "madqa.metric"} & modules


def test_a_command_imports_its_own_module_only(env, tmp_path) -> None:
    modules = imports_of(["madqa.cli", "info", "--help"], env, tmp_path)
    commands = {m for m in modules if m.startswith("madqa.cli.") and m.endswith("_cmd")}
    assert commands == {"madqa.cli.bench_cmd", "madqa.cli.info_cmd"}
    assert heavy_in(modules) == []


def test_evaluate_and_info_import_no_heavy_package(built_home, env, tmp_path) -> None:
    from madqa.loading_script.load import load_questions

    question = load_questions("dev")[0]
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"id": question["id"], "answer": ["x"], "citations": []}) + "\n")
    evaluate = imports_of(["madqa.cli", "evaluate", str(results), "--split", "dev"], env, tmp_path)
    assert "madqa.metric.report" in evaluate and "pyarrow.parquet" in evaluate
    assert heavy_in(evaluate) == []
    assert not {"datasets", "pandas"} & evaluate  # the sample's Parquet files are read with pyarrow alone
    info = imports_of(["madqa.cli", "info"], env, tmp_path)
    assert "madqa.cli.info_cmd" in info
    assert heavy_in(info) == []


def test_the_first_question_of_a_bm25_run_imports_no_torch(built_home, env, tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    argv = ["madqa.cli", "run", "--agent", "bm25", "--model", FAKE, "--limit", "1", "-o", str(out)]
    modules = imports_of([*argv, "--no-progress"], env, tmp_path)
    assert json.loads(out.read_text().splitlines()[0])["answer"] == ["17.85"]  # the question was answered
    assert "smolagents" in modules
    assert heavy_in(modules) == []


@pytest.mark.slow
def test_a_space_scoring_worker_imports_only_the_metric(env, tmp_path) -> None:
    """The probe is a main module that imports gradio, as the Space's app is: its worker must not run it again."""
    done = run_captured([sys.executable, "-m", "madqa.bench.startup_probe", "--imports", "--n", "50"], env, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    worker = imported_modules(done.stderr)  # only the worker's: the probe set PYTHONPROFILEIMPORTTIME after it started
    assert "madqa.space.scoring" in worker and "madqa.metric.report" in worker
    assert heavy_in(worker) == []
    assert not {m for m in worker if m.startswith("madqa.bench")}  # the probe, the parent's main module, stayed out
    assert json.loads(done.stdout)["worker_peak_rss_mib"] > 0


#: The Space's start-up as ``python -m madqa.space.app`` runs it, short of serving: configuration, the sample
#: checked, a fresh board seeded, the Blocks of every tab built; then ``sys.modules`` and gradio's stub writer.
SPACE_START = (
    "import sys\n"
    "from madqa.space import app, startup\n"
    "services = startup.start()\n"
    "demo = app.build_app(services)\n"
    "print(services.store.count())\n"
    "from gradio.component_meta import create_or_modify_pyi as writer\n"
    "open(sys.argv[1], 'w').write('\\n'.join([*sys.modules, 'stub writer: ' + writer.__module__]))\n"
)
#: Imported by the Space only when a visitor needs them: a plot (matplotlib), the explorer's figures (matplotlib),
#: a human-study results file (smolagents, via the results writer), a sample to (re)generate (PyMuPDF) or a
#: dataset to build (datasets).
SPACE_ON_USE = ("matplotlib", "smolagents", "pymupdf", "fitz", "datasets")


def test_the_space_starts_without_what_only_a_visitor_needs(built_home, env, tmp_path) -> None:
    listing = tmp_path / "modules.txt"
    space_env = {
        **env,
        "MADQA_SPACE_DB": str(tmp_path / "board" / "lb.sqlite"),
        "MADQA_SPACE_SCORE_WORKERS": "0",  # the workers' imports: test_a_space_scoring_worker_imports_only_the_metric
        "GRADIO_ANALYTICS_ENABLED": "False",
    }
    done = run_captured([sys.executable, "-c", SPACE_START, str(listing)], space_env, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = listing.read_text().splitlines()
    modules = set(lines[:-1])
    assert done.stdout.split() == ["4"]  # the whole start-up ran: the four seed baselines are on the board
    assert "gradio" in modules and "madqa.space.human.practice" in modules and "madqa.space.explore.tab" in modules
    assert not [m for m in modules if m.split(".")[0] in SPACE_ON_USE]
    assert heavy_in(modules) == ["gradio"]
    assert lines[-1] == "stub writer: madqa.space.gradio_stubs"  # gradio imported without its .pyi writer


def test_the_heavy_list_is_the_issue_s() -> None:
    assert set(HEAVY) == {"scipy", "torch", "transformers", "gradio"}
    assert heavy_in({"torch._C", "gradio", "numpy"}) == ["torch", "gradio"]
