"""Importing the metric (the package, and the script ``evaluate.load("madqa")`` executes) imports neither transformers
nor torch: ``import evaluate`` alone would import transformers where it is installed (12.6 s of a 13-16 s load on a
machine with the ``late`` extra, 4.1 s without), so the script imports evaluate through
:mod:`madqa.metric.light_import`.
Measured in child processes, whose ``sys.modules`` starts empty."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

HEAVY = ("transformers", "torch")


def imported_after(code: str) -> dict[str, bool]:
    """Which of :data:`HEAVY` (and evaluate) a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {(*HEAVY, 'evaluate')!r}}}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_metric_package_imports_no_model_library() -> None:
    seen = imported_after("import madqa.metric, madqa.metric.report, madqa.metric.scoring")
    assert seen == {"transformers": False, "torch": False, "evaluate": False}


@pytest.mark.slow
def test_the_metric_script_imports_evaluate_without_transformers_which_stays_importable() -> None:
    seen = imported_after(
        "import madqa.metric.madqa as m\nassert m.Madqa.__mro__[1].__module__.startswith('evaluate')"
    )
    assert seen == {"transformers": False, "torch": False, "evaluate": True}
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed: the import above could not have pulled it in anyway")
    # The "not installed" mark is gone after the import: the process can still use transformers itself.
    seen = imported_after("import madqa.metric.madqa\nimport transformers")
    assert seen["transformers"] is True
