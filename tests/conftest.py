"""Shared fixtures: one `madqa setup` run per test session, in a temporary MADQA_HOME and HF_HOME."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.signal_support import ignores_sigint

# Tests never reach the network: the Hub clients fail fast instead of retrying.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
# Each pytest process gets its own gradio upload folder (default: the machine-wide <tmp>/gradio). With one shared
# folder a Space in one xdist worker deleted an upload folder while a test in the other walked the tree (CI of
# stop 53: FileNotFoundError in test_uploads_only_take_results_files_and_are_deleted_after_scoring). Set here, at
# import, so gradio and every Space a test starts (they inherit the environment) read it.
os.environ["GRADIO_TEMP_DIR"] = tempfile.mkdtemp(prefix=f"gradio-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
atexit.register(shutil.rmtree, os.environ["GRADIO_TEMP_DIR"], ignore_errors=True)


class SigintLeftIgnored(UserWarning):
    """This process ignores Ctrl+C: a test or a fixture's teardown left it so, or it started so."""


def _sigint_ignored() -> bool:
    if Path("/proc/self/status").exists():
        return ignores_sigint()
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # not Linux: Python's own table is the best there is


#: The last test this process ran (xdist runs files one after another in each worker).
_previous_test = ["no test: this process started so (inherited, e.g. from a suite started in the background)"]


@pytest.fixture(autouse=True)
def _ctrl_c_not_ignored(request: pytest.FixtureRequest) -> Iterator[None]:
    """Give every test the SIGINT handling of a fresh interpreter, and name whoever left it ignored.

    A worker can start with SIGINT *ignored*: in the load tests of 2026-12-05 started in the background
    (``nohup bash scripts/load_test.sh &``) both workers' first tests saw it, with no test before them in their
    process. A non-interactive shell ignores SIGINT in its background commands, and an ignored SIGINT survives fork
    and exec: the load run of cb08a3b, started with SIGINT at its default, never warned, and a ``madqa space``
    started by ``(make demo &)`` served on after a SIGINT (stop 38). (A one-file suite started with ``nohup … &``
    did not warn; not explained.) Python then installs no KeyboardInterrupt handler, so every command a test started
    in that worker would ignore Ctrl+C too (stop 35's load test saw the Space's Ctrl+C test wait out its 240 s while
    the Space served on for 45 minutes). A caught signal is reset to the default at exec, so the handler set here is
    what children get. Whoever ignores it is named by a ``SigintLeftIgnored`` warning in the summary: the test that
    left it so, or, at a test's start, the test run before it (a wider fixture's teardown) or none (the process
    started so).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _sigint_ignored():
        warnings.warn(
            SigintLeftIgnored(f"SIGINT was ignored at the start of {request.node.nodeid}, after {_previous_test[0]}"),
            stacklevel=1,
        )
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    _previous_test[0] = request.node.nodeid
    if _sigint_ignored():
        warnings.warn(SigintLeftIgnored(f"{request.node.nodeid} left SIGINT ignored"), stacklevel=1)
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
