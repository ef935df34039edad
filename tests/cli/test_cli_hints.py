"""Every command the command line prints as advice is followed here, in a subprocess, and does what it says.

:data:`HINTS` lists each string in ``cli/`` that names a ``madqa`` command outside help texts, examples and
docstrings, with the test that follows it (or why it is not a command to follow); a new hint fails
:func:`test_every_command_hint_in_the_cli_is_listed` until it gets a follower. Hints built by a function
(:data:`BUILDERS`) are followed through the command that prints them.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.agent_cli import madqa, madqa_env
from helpers.dataset_copy import renamed_copy
from helpers.fake_runs import FAKE
from helpers.paths import ROOT
from helpers.release_host import Host, write_release

HERE = Path(__file__).parent
CLI = ROOT / "cli"
COMMAND = re.compile(
    r"madqa (setup|info|extract|bench|evaluate|calibrate|run|space|publish|human|compare|figures|sweep|view|"
    r"retrieval|import-inspect)\b"
)

#: (file, start of the string) → the test that follows it, or why it is no command to follow (an entry with a reason
#: may outlive its string; a followed one may not).
HINTS = {
    ("compare_cmd.py", "compare takes ordinary runs (madqa e"): "names a command, no line to run (a refusal's reason)",
    ("evaluate_cmd.py", ": holds repeated runs (madqa run --"): "names the command that made the file, no line to run",
    (
        "evaluate_repeats.py",
        ": holds repeated runs (madqa run --",
    ): "names the command that made the file, no line to run",
    (
        "evaluate_repeats.py",
        "%s: repeats %s are not 0..%d%s; k",
    ): "names the command that made the file (resume it), no line to run",
    ("conventions.py", "serves the explorer or writes"): "not printed: NO_JSON's reason, read by the convention test",
    ("conventions.py", "writes results lines (-o) and "): "not printed: NO_JSON's reason, read by the convention test",
    ("figures_cmd.py", "madqa figures needs matplotlib"): "a pip command (missing extras: issue 41 item 3)",
    ("import_inspect_cmd.py", "madqa import-inspect needs in"): "a pip command (missing extras: issue 41 item 3)",
    ("publish_cmd.py", "madqa publish "): "not printed: the prefix of the nested parsers' examples",
    ("run_cmd.py", "madqa run"): "not printed as advice: the progress bar's label",
    ("run_cmd.py", "madqa run … -o "): "test_the_resume_hint_after_ctrl_c_completes_the_run (in-process form)",
    ("run_cmd.py", "%s is incomplete: %d document(s"): "test_setup_and_run_hints_on_an_incomplete_dataset",
    ("setup_cmd.py", "%d document(s) missing: run `m"): "test_setup_and_run_hints_on_an_incomplete_dataset",
    ("sweep_cmd.py", "\n(score test-split runs with `"): "names a command, no line to run (the labels are elsewhere)",
}
#: Functions that build a printed command, and the tests that follow what they build.
BUILDERS = {
    "conventions.py": {"score_command": "test_the_run_hint_scores_against_the_dataset_it_ran_on"},
    "run_cmd.py": {"_resume_command": "test_the_resume_hint_after_ctrl_c_completes_the_run"},
    "setup_cmd.py": {"load_by_name_command": "test_the_setup_hint_loads_this_homes_data_by_name"},
}


def _hint_strings(path: Path) -> list[tuple[int, str]]:
    """String constants of ``path`` that name a madqa command, outside docstrings, help texts and examples."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # docstrings, bare strings
            skip.add(id(node.value))
        # help texts: cli/__init__.py's COMMANDS table repeats each module's HELP (an annotated assignment)
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if node_value := getattr(node, "value", None):
            if any(isinstance(t, ast.Name) and t.id in ("EXAMPLES", "HELP", "EPILOG", "COMMANDS") for t in targets):
                skip.update(id(sub) for sub in ast.walk(node_value))
        if isinstance(node, ast.keyword) and node.arg in ("help", "description", "epilog"):
            skip.update(id(sub) for sub in ast.walk(node.value))
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "require_extra"
        ):
            skip.update(id(sub) for sub in ast.walk(node))  # "madqa view needs …": the subject, the hint is pip's
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and COMMAND.search(node.value)
    ]


def test_every_command_hint_in_the_cli_is_listed() -> None:
    found = [(p.name, line, text) for p in sorted(CLI.glob("*.py")) for line, text in _hint_strings(p)]
    listed = {(name, text): [k for k in HINTS if k[0] == name and text.startswith(k[1])] for name, _, text in found}
    new = [f"cli/{name}:{line}: {text[:60]!r}" for name, line, text in found if not listed[(name, text)]]
    assert not new, f"command hints without a follower (add one to {Path(__file__).name}): {new}"
    followed = {k for k, follower in HINTS.items() if follower.startswith("test_")}
    gone = followed - {k for keys in listed.values() for k in keys}
    assert not gone, f"followed hints no longer in cli/ (update {Path(__file__).name}): {sorted(gone)}"
    for name, builders in BUILDERS.items():
        source = (CLI / name).read_text(encoding="utf-8")
        for builder, follower in builders.items():
            assert f"def {builder}(" in source and follower in globals(), (name, builder)


def follow(command: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a printed command as a user would paste it: ``VAR=value`` words set the environment, ``madqa`` and
    ``python`` are this interpreter's."""
    words = shlex.split(command)
    env = dict(env)
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    program = {"madqa": [sys.executable, "-m", "madqa.cli"], "python": [sys.executable]}[words[0]]
    return subprocess.run(
        [*program, *words[1:]], env=env, cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def _hint(log: str, marker: str) -> str:
    """The command after ``marker`` on the one log line that has it."""
    lines = [line for line in log.splitlines() if marker in line]
    assert len(lines) == 1, (marker, log[-3000:])
    return lines[0].split(marker, 1)[1].strip()


def _gold_items(report_text: str) -> tuple[int, int, int]:
    """(gold items, predicted, unknown ids) of the table `madqa evaluate` prints."""
    found = re.search(r"(\d+) gold items · (\d+) predicted · \d+ missing · (\d+) unknown ids", report_text)
    assert found, report_text
    return int(found[1]), int(found[2]), int(found[3])


def test_the_run_hint_scores_against_the_dataset_it_ran_on(layout, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    other = renamed_copy(layout.dataset_dir, tmp_path / "other dataset")  # a space: the hint must quote it
    env = madqa_env(HERE)
    for dataset, name in ((other, "other.jsonl"), (None, "sample.jsonl")):
        out = tmp_path / name
        extra = ["--dataset", str(other)] if dataset else []
        done = madqa(["run", "--model", FAKE, "--limit", "2", "-o", str(out), "--no-progress", *extra], env)
        assert done.returncode == 0, done.stderr
        scored = follow(_hint(done.stderr, "score it with:"), env, cwd=tmp_path.parent)  # from another folder
        assert scored.returncode == 0, scored.stderr
        folder = dataset or layout.dataset_dir
        (dev,) = (folder / "data").glob("dev-*.parquet")
        assert _gold_items(scored.stdout) == (pq.read_table(dev).num_rows, 2, 0)


def test_the_setup_hint_loads_this_homes_data_by_name(layout, tmp_path: Path) -> None:
    from madqa.loading_script.load import load_gold

    env = madqa_env(HERE)
    done = madqa(["setup", "--no-progress"], env)  # up to date: only the closing lines
    assert done.returncode == 0, done.stderr
    command = _hint(done.stderr, "load it by name:")
    assert command.startswith("HF_HUB_OFFLINE=1 ")
    loaded = follow(command, {k: v for k, v in env.items() if k != "HF_HUB_OFFLINE"}, cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert re.search(r"dev: Dataset\(\{\s*features: .*?num_rows: (\d+)", loaded.stdout, re.S)[1] == str(
        len(load_gold("dev"))
    )


def test_the_resume_hint_after_ctrl_c_completes_the_run(layout, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    env = madqa_env(HERE, MADQA_FAKE_DELAY="1")
    args = ["run", "--model", FAKE, "--limit", "3", "-o", str(out), "--no-progress", "--interrupt-wait", "60"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "madqa.cli", *args], env=env, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    deadline = time.monotonic() + 300
    while not (out.is_file() and out.read_text().count("\n") >= 1) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    kept = out.read_text().count("\n")
    assert 1 <= kept < 3
    resumed = follow(_hint(err, "resume with:"), {**env, "MADQA_FAKE_DELAY": "0"}, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    ids = [json.loads(x)["id"] for x in out.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 3  # the run is complete, no question twice


@pytest.mark.slow
def test_setup_and_run_hints_on_an_incomplete_dataset(tmp_path: Path) -> None:
    env = {k: v for k, v in madqa_env(HERE).items() if k not in ("MADQA_DATASET", "MADQA_PAGES_REPO")}
    env.update(MADQA_HOME=str(tmp_path / "home"), HF_HOME=str(tmp_path / "hf"))
    host = Host()
    try:
        folder = write_release(tmp_path / "MADQA", host.url)
        quick = ["--no-progress", "--fetch-timeout", "0.5", "--fetch-retries", "0", "--workers", "1"]
        first = madqa(["setup", "--dataset", str(folder), *quick], env)
        assert first.returncode == 1, first.stderr
        retry = _hint(first.stderr, "document(s) missing: run `").split("`")[0]
        assert retry == f"madqa setup --dataset {folder}"
        ran = madqa(
            [
                "run",
                "--dataset",
                str(folder),
                "--model",
                FAKE,
                "--limit",
                "1",
                "-o",
                str(tmp_path / "r.jsonl"),
                "--no-progress",
            ],
            env,
        )
        assert _hint(ran.stderr, "Rerun `").split("`")[0] == retry
        host.fix()
        again = follow(retry, env)
        assert again.returncode == 0, again.stderr
        info = madqa(["info", "--dataset", str(folder), "--json"], env)
        assert json.loads(info.stdout)["prepared"]["complete"] is True
    finally:
        host.stop()
    assert os.environ.get("MADQA_HOME") != env["MADQA_HOME"]  # this test's home never leaked into the session's
