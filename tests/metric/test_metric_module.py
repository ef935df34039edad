"""The evaluate.Metric: compute in-process, the copy closure, and offline ``evaluate.load`` in a subprocess."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from madqa.metric import install
from madqa.metric.install import install_offline_module, relative_imports

pytestmark = pytest.mark.server

METRIC_DIR = Path(install.__file__).resolve().parent

REFS = [
    {
        "id": "q1",
        "question": "Total?",
        "answer_variants": [["$1.2M"]],
        "evidence": [{"document": "report.pdf", "page": 5}],
    },
    {"id": "q2", "question": "Who?", "answer_variants": [["Ann"]], "evidence": [{"document": "b.pdf", "page": 1}]},
]
PREDS = [
    {"id": "q1", "answer": ["$1.2M"], "citations": [{"document": "report.pdf", "page": 5}], "search_history": ["t"]},
    None,  # placeholder: q2 has no prediction
]


def test_metric_compute_in_process(tmp_path):
    from madqa.metric.madqa import Madqa

    metric = Madqa(keep_in_memory=True, cache_dir=str(tmp_path))
    out = metric.compute(predictions=PREDS, references=REFS)
    assert (out["accuracy"], out["page_f1"], out["missing"], out["n"]) == (0.5, 0.5, 1, 2)
    metric.add_batch(predictions=PREDS[:1], references=REFS[:1])
    metric.add(prediction={"id": "q2", "answer": "ann", "steps": 2}, reference=REFS[1])
    out2 = metric.compute(kuiper_order="file", n_resamples=50, seed=3)
    assert out2["accuracy"] == 1.0 and out2["kuiper_order"] == "file" and out2["kuiper_resamples"] == 50


def test_metric_compute_judge_mode_and_bad_input(tmp_path):
    from madqa.metric.inputs import InputError
    from madqa.metric.madqa import Madqa

    calls = []

    def complete(prompt: str) -> str:
        calls.append(prompt)
        return '{"reasoning": "same", "verdict": "correct"}'

    metric = Madqa(keep_in_memory=True, cache_dir=str(tmp_path))
    preds = [{"id": "q1", "answer": ["1.2 million"], "steps": 1}, {"id": "q2", "answer": ["Ann"], "steps": 2}]
    out = metric.compute(
        predictions=preds,
        references=REFS,
        mode="judge",
        judge=complete,
        calibration={"q0": 0.9, "q1": 0.9, "m0": 50, "m1": 50},
    )
    assert len(calls) == 1  # q2 is an exact match
    assert out["accuracy_raw"] == 1.0 and out["accuracy"] == 1.0  # (1 + .9 - 1) / .8 = 1.125 -> clipped
    assert out["calibration"]["q0"] == 0.9
    with pytest.raises(InputError, match=r"predictions\[0\]: field 'answer' must be a list of strings or a string"):
        metric.compute(predictions=[{"id": "q1", "answer": {"x": 1}}], references=REFS[:1])
    with pytest.raises(InputError, match="needs judge="):
        metric.compute(predictions=PREDS, references=REFS, mode="judge")


def test_metric_judge_mode_corrects_only_the_papers_judge(tmp_path):
    """evaluate.load's metric applies the paper's calibration as `madqa evaluate` does: to the paper's judge only."""
    from madqa.metric.madqa import Madqa

    def partial(prompt: str) -> str:
        return '{"reasoning": "close", "verdict": "partial"}'

    metric = Madqa(keep_in_memory=True, cache_dir=str(tmp_path))
    preds = [{"id": "q1", "answer": ["1.2 million"], "steps": 1}, {"id": "q2", "answer": ["Ann"], "steps": 2}]
    raw = metric.compute(predictions=preds, references=REFS, mode="judge", judge=partial)
    assert raw["accuracy"] == raw["accuracy_raw"] == 0.75 and raw["calibration"]["corrected"] is False
    assert raw["calibration"]["judge"] == "partial" and raw["calibration"]["note"].startswith("raw: no calibration")
    paper = metric.compute(
        predictions=preds, references=REFS, mode="judge", judge=partial, judge_name="gemini-2.5-flash"
    )
    assert paper["accuracy"] == pytest.approx(0.75 / 0.98) and paper["calibration"]["source"] == "paper"


def test_kwargs_description_examples_run(tmp_path):
    import doctest

    from madqa.metric import madqa as script

    metric = script.Madqa(keep_in_memory=True, cache_dir=str(tmp_path))
    parser = doctest.DocTestParser()
    test = parser.get_doctest(script._KWARGS_DESCRIPTION, {"madqa": metric}, "kwargs", script.__file__, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0 and len(test.examples) >= 5


def _relative_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 1]
    return {node.module for node in nodes if node.module}


def test_script_imports_every_module_it_needs_directly():
    direct = set(relative_imports(METRIC_DIR / "madqa.py"))
    closure, todo = set(), ["madqa"]
    while todo:
        for name in _relative_modules(METRIC_DIR / f"{todo.pop()}.py"):
            if name not in closure:
                closure.add(name)
                todo.append(name)
    assert closure <= direct, f"madqa.py must import {sorted(closure - direct)} directly (evaluate copies only those)"
    # and evaluate's own parser sees the same list (no trailing comments that it would take for URLs)
    from evaluate.loading import get_imports

    found = get_imports(str(METRIC_DIR / "madqa.py"))
    assert sorted(name for kind, name, _, _ in found if kind == "internal") == sorted(direct)
    assert all(kind in ("internal", "library") for kind, *_ in found)


def test_metric_folder_imports_only_allowed_packages():
    allowed = {"numpy", "scipy", "anls_star", "datasets", "evaluate", "__future__"}
    stdlib = set(sys.stdlib_module_names)
    for path in METRIC_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            # the Space widget and its upload gate (starlette and python-multipart: gradio's own server and parser)
            widget = (
                {"gradio", "gradio_client", "matplotlib", "pyarrow", "yaml", "starlette", "python_multipart"}
                if path.name in ("app.py", "upload_gate.py")
                else set()
            )
            assert roots <= allowed | widget | stdlib, f"{path.name} imports {roots - allowed - widget - stdlib}"
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 420, f"{path.name} is too long"


def test_install_layout(tmp_path):
    target = install_offline_module(tmp_path / "hf")
    base = tmp_path / "hf" / "modules" / "evaluate_modules"
    assert target.parent == base / "metrics" / "evaluate-metric--madqa"
    assert len(target.name) == 64
    for folder in (base, base / "metrics", target.parent, target):
        assert (folder / "__init__.py").is_file()
    expected = {"madqa.py"} | {f"{n}.py" for n in relative_imports(METRIC_DIR / "madqa.py")}
    assert expected <= {p.name for p in target.glob("*.py")}
    assert install_offline_module(tmp_path / "hf") == target  # same content, same version directory


@pytest.mark.slow
def test_offline_load_by_name_from_a_fresh_directory(tmp_path):
    hf_home = tmp_path / "hf"
    first = install_offline_module(hf_home)
    # a newer version of the metric: its directory must win (newest madqa.py)
    newer_dir = tmp_path / "newer"
    shutil.copytree(METRIC_DIR, newer_dir, ignore=shutil.ignore_patterns("__pycache__"))
    with (newer_dir / "madqa.py").open("a", encoding="utf-8") as fh:
        fh.write("\n# newer build\n")
    newer = install_offline_module(hf_home, metric_dir=newer_dir)
    assert newer != first
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    data = json.dumps({"preds": PREDS, "refs": REFS})
    script = f"""
import json, evaluate
data = json.loads({data!r})
m = evaluate.load("madqa")
out = m.compute(predictions=data["preds"], references=data["refs"])
by_path = evaluate.load({str(METRIC_DIR / "madqa.py")!r})
out2 = by_path.compute(predictions=data["preds"], references=data["refs"])
print(json.dumps({{"module": type(m).__module__, "accuracy": out["accuracy"], "missing": out["missing"],
                  "same": out == out2}}))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHONPATH"))}
    env.update(HF_HOME=str(hf_home), HF_EVALUATE_OFFLINE="1", HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=workdir, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["module"] == f"evaluate_modules.metrics.evaluate-metric--madqa.{newer.name}.madqa"
    assert (result["accuracy"], result["missing"], result["same"]) == (0.5, 1, True)
