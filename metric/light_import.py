"""Import ``evaluate`` without the transformers (and torch) it imports when they happen to be installed.

``import evaluate`` runs ``evaluate.evaluator``, which tries ``from transformers.pipelines import …`` for its
pipeline evaluators: 12.6 s of a 13-16 s ``evaluate.load("madqa")`` on a machine with the ``late`` extra installed
(4.1 s without). This metric never uses those evaluators, so, where transformers is not imported yet, the import runs
with transformers marked absent (evaluate then sets its ``TRANSFORMERS_AVAILABLE`` to False, its documented fallback)
and the mark is removed afterwards, so the process can still import transformers itself.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


def import_evaluate() -> ModuleType:
    """The ``evaluate`` module, imported (if it is not yet) without importing transformers.

    Returns:
        The ``evaluate`` package.
    """
    if "evaluate" in sys.modules or "transformers" in sys.modules:
        return importlib.import_module("evaluate")
    sys.modules["transformers"] = None  # type: ignore[assignment]  # the import system's "not installed" mark
    try:
        return importlib.import_module("evaluate")
    finally:
        if sys.modules.get("transformers", False) is None:
            del sys.modules["transformers"]
