"""The Space as it is deployed: the wheel built from the repo, in a fresh virtual environment, runs the copied
``space/`` folder with ``python app.py`` and answers on its port in three configurations (none: the sample; a
release folder with its labels; a wrong variable: the configuration page, no traceback, the process stays up).

The fresh environment gets the project's dependencies through a ``.pth`` line naming this interpreter's
site-packages (installing them offline is not possible); madqa itself must come from the wheel, which is checked.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.paths import ROOT

pytest.importorskip("gradio")

pytestmark = [pytest.mark.server, pytest.mark.slow]

REPO = ROOT
#: What a Space repository holds: the module code comes from the wheel named in requirements.txt.
SPACE_FILES = ("app.py", "README.md", "requirements.txt", "packages.txt")
#: Not part of a source tree to build from: anywhere, and at the repository root only.
_IGNORE_ANYWHERE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache")
_IGNORE_AT_ROOT = {".venv", ".git", "build", "dist", ".madqa", "madqa", "shared"}


def _build_ignore(folder: str, names: list[str]) -> set[str]:
    ignored = set(_IGNORE_ANYWHERE(folder, names))
    return ignored | (_IGNORE_AT_ROOT & set(names)) if Path(folder) == REPO else ignored


START_TIMEOUT_S = 420


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kwargs)
    assert done.returncode == 0, f"{cmd[:4]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with only the wheel installed (dependencies reachable through a ``.pth`` line)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # a clean copy: an in-tree build would reuse (and package) a stale build/ folder
    shutil.copytree(REPO, source, ignore=_build_ignore)
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-w",
            str(tmp / "dist"),
            str(source),
        ]
    )
    (wheel,) = (tmp / "dist").glob("madqa-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    _run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            str(wheel),
        ]
    )
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(purelib) / "zz_madqa_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


@pytest.fixture(scope="module")
def space_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Space repository: the four files of ``space/`` a Space holds, nothing else."""
    folder = tmp_path_factory.mktemp("space_repo")
    for name in SPACE_FILES:
        shutil.copy2(REPO / "space" / name, folder / name)
    return folder


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    """A Space-like environment: no MADQA variables from the test session, offline, its own caches."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("MADQA_", "HF_", "GRADIO_", "PYTHON", "VIRTUAL_ENV"))
    }
    (tmp / "gradio").mkdir(parents=True, exist_ok=True)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_EVALUATE_OFFLINE="1",
        HF_DATASETS_DISABLE_PROGRESS_BARS="1",
        HF_HOME=str(tmp / "hf"),
        GRADIO_ANALYTICS_ENABLED="False",
        GRADIO_SERVER_NAME="127.0.0.1",
        GRADIO_SERVER_PORT=str(_port()),
        GRADIO_TEMP_DIR=str(tmp / "gradio"),
    )
    env.update(extra)
    return env


class App:
    """``python app.py`` in its own process group (stopped with every child it started)."""

    def __init__(self, venv: Path, folder: Path, env: dict[str, str], logs: Path):
        self.url = f"http://127.0.0.1:{env['GRADIO_SERVER_PORT']}/"
        logs.mkdir(parents=True, exist_ok=True)
        self.stderr_path = logs / "stderr.log"
        with (logs / "stdout.log").open("w") as out, self.stderr_path.open("w") as err:
            self.proc = subprocess.Popen(
                [str(venv / "bin" / "python"), "app.py"],
                cwd=folder,
                env=env,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def page(self) -> str:
        """The HTML of ``/`` once the port answers (fails if the process exits first)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"app.py exited with {self.proc.returncode}:\n{self.stderr()[-4000:]}")
            try:
                with urllib.request.urlopen(self.url, timeout=10) as response:
                    if response.status == 200:
                        return response.read().decode("utf-8", errors="replace")
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        pytest.fail(f"app.py did not answer on {self.url} in {START_TIMEOUT_S} s:\n{self.stderr()[-4000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
        try:  # children (the scoring process) may outlive the leader briefly
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def start_app(fresh_venv: Path, space_dir: Path) -> Iterator:
    apps: list[App] = []

    def start(env: dict[str, str], logs: Path) -> App:
        apps.append(App(fresh_venv, space_dir, env, logs))
        return apps[-1]

    try:
        yield start
    finally:
        for app in apps:
            app.stop()


def test_the_wheel_not_the_checkout_provides_madqa(fresh_venv: Path, space_dir: Path, tmp_path: Path) -> None:
    code = (
        "import json, madqa.space.app, madqa.space.startup as s, madqa.cli; print(json.dumps([s.__file__, "
        "madqa.cli.__file__, *__import__('madqa').__path__]))"
    )
    out = _run([str(fresh_venv / "bin" / "python"), "-c", code], cwd=space_dir, env=_env(tmp_path)).stdout
    for path in json.loads(out.strip().splitlines()[-1]):
        assert Path(path).resolve().is_relative_to(fresh_venv.resolve()), path


def _board_rows(url: str) -> list:
    from helpers.clients import gradio_client

    table = gradio_client(url).predict("", api_name="/refresh")
    return table["data"] if isinstance(table, dict) else list(table)


def test_no_configuration_serves_the_sample(start_app, built_home: Path, fresh_venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_home, home, symlinks=True, ignore=shutil.ignore_patterns("space", "index"))
    stamp = json.loads((home / "setup-stamp.json").read_text())["build"]
    manifest_mtime = (home / "sample" / "manifest.json").stat().st_mtime_ns
    app = start_app(_env(tmp_path, MADQA_HOME=str(home)), tmp_path / "logs")
    html = app.page()
    assert "MADQA" in html and "configuration error" not in html
    rows = _board_rows(app.url)
    assert any("Baseline" in str(row) for row in rows)  # the sample's board, seeded with the baselines
    log = app.stderr()
    assert "Traceback" not in log and f"madqa.space from {fresh_venv}" in log
    # the copied home was already built: the idempotent set-up neither regenerated nor re-extracted the sample
    assert json.loads((home / "setup-stamp.json").read_text())["build"] == stamp
    assert (home / "sample" / "manifest.json").stat().st_mtime_ns == manifest_mtime
    assert "generating the sample" not in log


def test_release_folder_and_labels_configured(start_app, built_home: Path, tmp_path: Path) -> None:
    release = tmp_path / "release" / "madqa"
    shutil.copytree(built_home / "hub" / "madqa", release)
    labels = tmp_path / "secret" / "test_labels.jsonl"
    labels.parent.mkdir()
    shutil.copy2(built_home / "private" / "test_labels.jsonl", labels)
    home = tmp_path / "home"
    home.mkdir()
    env = _env(
        tmp_path,
        MADQA_HOME=str(home),
        MADQA_DATASET=str(release),
        MADQA_SPACE_LABELS=str(labels),
        MADQA_SPACE_SEED="0",
    )
    app = start_app(env, tmp_path / "logs")
    html = app.page()
    assert "MADQA" in html and "configuration error" not in html
    assert _board_rows(app.url) == []  # not seeded: an empty board, served
    log = app.stderr()
    n_labels = sum(1 for line in labels.read_text().splitlines() if line.strip())
    assert "Traceback" not in log and f"test labels: {n_labels} item(s) from MADQA_SPACE_LABELS" in log
    assert not (home / "sample").exists() and not (home / "hub").exists()  # the sample generator never ran


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"MADQA_SPACE_MAX_MB": "lots"}, ["MADQA_SPACE_MAX_MB"]),
        ({"MADQA_DATASET": "/no/such/folder"}, ["MADQA_DATASET", "MADQA_SPACE_LABELS"]),
    ],
    ids=["malformed", "no-such-dataset"],
)
def test_a_wrong_variable_serves_a_page_naming_it(
    start_app, tmp_path: Path, variables: dict[str, str], named: list[str]
) -> None:
    env = _env(tmp_path, MADQA_HOME=str(tmp_path / "home"), HF_TOKEN="hf_secretsecretsecret", **variables)
    app = start_app(env, tmp_path / "logs")
    html = app.page()
    assert "configuration error" in html
    for name in named:
        assert name in html
    assert "hf_secretsecretsecret" not in html
    time.sleep(1)
    assert app.proc.poll() is None  # still serving the page: no crash loop
    log = app.stderr()
    assert "Traceback" not in log and "hf_secretsecretsecret" not in log
    errors = [line for line in log.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and named[0] in errors[0]
    assert not (tmp_path / "home" / "sample").exists()
