"""A second dataset folder for tests: a copy of a built one whose question ids are renamed, so that no results line
of one scores against the other (a run on a non-default dataset, scored against the sample by mistake, matches
nothing)."""

from __future__ import annotations

import shutil
from pathlib import Path

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
