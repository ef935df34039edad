"""Two MADQA_HOMEs with different seeds and one Hugging Face cache: ``load_dataset("madqa")`` never returns one
home's rows for the other (issue 41, item 5; the decision is in :mod:`madqa.loading_script.register`).

The first home owns the name in the shared cache; the second, with other data, registers in its own cache and
says so in one line naming the first home and the fix. Once the first home is gone, the second takes the name.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow

IDS = "import datasets; print(' '.join(datasets.load_dataset('madqa')['dev']['id']))"


def _env(tmp_path: Path, home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MADQA_"))}
    env.update(MADQA_HOME=str(tmp_path / home), HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    return env


def _setup(tmp_path: Path, home: str, seed: int) -> str:
    """``madqa setup`` of ``home``; its log."""
    done = subprocess.run(
        [sys.executable, "-m", "madqa.cli", "setup", "--seed", str(seed), "--no-ocr", "--no-progress"],
        env=_env(tmp_path, home),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def _dev_ids(tmp_path: Path, home: str) -> list[str]:
    """The dev ids of ``home``'s own dataset folder (what `madqa evaluate` scores against)."""
    (dev,) = (tmp_path / home / "hub" / "madqa" / "data").glob("dev-*.parquet")
    return pq.read_table(dev).column("id").to_pylist()


def _loaded_ids(tmp_path: Path, home: str, log: str) -> list[str]:
    """The dev ids ``load_dataset("madqa")`` returns in the environment the setup's hint names."""
    (hint,) = [line.split("load it by name: ", 1)[1] for line in log.splitlines() if "load it by name: " in line]
    env = _env(tmp_path, home)
    for word in shlex.split(hint):
        if "=" in word and word.split("=", 1)[0].isupper():
            key, value = word.split("=", 1)
            env[key] = value
    done = subprocess.run([sys.executable, "-c", IDS], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_each_home_loads_its_own_rows_never_the_others(tmp_path: Path) -> None:
    log_a = _setup(tmp_path, "a", seed=0)
    log_b = _setup(tmp_path, "b", seed=7)
    assert _dev_ids(tmp_path, "a") != _dev_ids(tmp_path, "b")  # the seeds give other dev splits

    assert _loaded_ids(tmp_path, "a", log_a) == _dev_ids(tmp_path, "a")
    assert _loaded_ids(tmp_path, "b", log_b) == _dev_ids(tmp_path, "b")
    warnings = [line for line in log_b.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1 and str(tmp_path / "a") in warnings[0]
    assert f"HF_DATASETS_CACHE={tmp_path / 'b' / 'hf_datasets'}" in warnings[0]
    assert "HF_DATASETS_CACHE" not in log_a and "WARNING" not in log_a
    log_b = _setup(tmp_path, "b", seed=7)  # again: the shared name stays the first home's
    assert _loaded_ids(tmp_path, "a", log_a) == _dev_ids(tmp_path, "a")
    assert _loaded_ids(tmp_path, "b", log_b) == _dev_ids(tmp_path, "b")

    shutil.rmtree(tmp_path / "a")  # the owner is gone: the second home takes the shared name
    log_b = _setup(tmp_path, "b", seed=7)
    assert "WARNING" not in log_b and "HF_DATASETS_CACHE" not in log_b
    assert _loaded_ids(tmp_path, "b", log_b) == _dev_ids(tmp_path, "b")
