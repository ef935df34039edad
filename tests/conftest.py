"""Shared fixtures: one `madqa setup` run per test session, in a temporary MADQA_HOME and HF_HOME."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

# Tests never reach the network: the Hub clients fail fast instead of retrying.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


@pytest.fixture(autouse=True)
def _ctrl_c_not_ignored() -> None:
    """Give every test the SIGINT handling of a fresh interpreter.

    Something earlier in an xdist worker can leave SIGINT *ignored* (by the end of a load test both workers had it
    so; not found which test: ray.init and ray.shutdown alone do not); an ignored SIGINT survives
    fork and exec, and Python then installs no KeyboardInterrupt handler, so every command a later test started in
    that worker ignored Ctrl+C: a load test saw the Space's Ctrl+C test wait out its 240 s while the Space served on
    for 45 minutes. A caught signal is reset to the default at exec, so the handler set here is what children get.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def built_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A MADQA_HOME after `madqa setup` (sample generated, pages extracted with OCR, dataset built, registered).

    HF_HOME points into the same temporary tree so the offline cache registration never touches the user's cache.
    """
    from madqa.cli.setup_cmd import install_metric
    from madqa.loading_script.paths import Layout
    from madqa.loading_script.pipeline import run_setup

    root = tmp_path_factory.mktemp("madqa_home")
    saved = {k: os.environ.get(k) for k in ("MADQA_HOME", "HF_HOME", "HF_DATASETS_CACHE", "MADQA_DATASET")}
    os.environ["MADQA_HOME"] = str(root / "home")
    os.environ["HF_HOME"] = str(root / "hf")
    os.environ.pop("HF_DATASETS_CACHE", None)
    os.environ.pop("MADQA_DATASET", None)
    try:
        run_setup(Layout(root / "home"), progress=False)
        install_metric()  # as `madqa setup` does: evaluate.load("madqa") stays offline in tests
        yield root / "home"
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def layout(built_home: Path):
    """The :class:`Layout` of :func:`built_home`."""
    from madqa.loading_script.paths import Layout

    return Layout(built_home)
