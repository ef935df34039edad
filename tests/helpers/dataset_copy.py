"""A second dataset folder for tests: a copy of a built one whose question ids are renamed, so that no results line
of one scores against the other (a run on a non-default dataset, scored against the sample by mistake, matches
nothing)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def renamed_copy(folder: Path, dest: Path, prefix: str = "other-") -> Path:
    """Copy dataset ``folder`` to ``dest`` with ``prefix`` before every question id (pages and documents as they
    are); returns ``dest``."""
    shutil.copytree(folder, dest)
    for split in ("train", "dev", "test"):
        for path in (dest / "data").glob(f"{split}-*.parquet"):
            table = pq.read_table(path)
            ids = pa.array([prefix + i for i in table.column("id").to_pylist()])
            pq.write_table(table.set_column(table.schema.get_field_index("id"), "id", ids), path)
    return dest


def runs_on_two_datasets(dataset_dir: Path, root: Path, here: Path) -> dict[str, Any]:
    """Two-question runs of the fake model: ``other`` on a renamed copy of ``dataset_dir`` (``folder``), ``sample``
    on the default dataset; each run's stderr as ``<name>_log``. ``here``: the calling test's folder (on the path)."""
    from helpers.agent_cli import madqa, madqa_env
    from helpers.fake_runs import FAKE

    other = renamed_copy(dataset_dir, root / "other")
    env = madqa_env(here)
    out: dict[str, Any] = {"other": root / "other.jsonl", "sample": root / "sample.jsonl", "folder": other}
    for name, extra in (("other", ["--dataset", str(other)]), ("sample", [])):
        done = madqa(["run", "--model", FAKE, "--limit", "2", "-o", str(out[name]), "--no-progress", *extra], env)
        assert done.returncode == 0, done.stderr
        out[f"{name}_log"] = done.stderr
    return out
