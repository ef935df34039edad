"""Where things are, for tests at any depth of ``tests/``: the tests root (on ``sys.path`` through
``tests/conftest.py``, so ``helpers`` imports; subprocesses get it through ``PYTHONPATH``) and the repository."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
