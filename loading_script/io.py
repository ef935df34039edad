"""File helpers shared by the build and load sides of the pipeline: JSONL read/write, Parquet write, quiet loads.

They sit below :mod:`.build` and :mod:`.load` (which both use them), so neither has to import the other.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .features import SchemaError


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL file; raise :class:`SchemaError` naming the file and line on bad JSON."""
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SchemaError(f"{path}: line {lineno}: invalid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise SchemaError(f"{path}: line {lineno}: expected a JSON object")
            row["_line"] = lineno
            rows.append(row)
    return rows


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]], *, private: bool = False) -> None:
    """Write rows as JSONL atomically (temp file + rename); ``private`` makes the file owner-only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    if private:
        os.chmod(tmp, 0o600)
    tmp.replace(path)


@contextmanager
def quiet_datasets() -> Iterator[None]:
    """For loads of local files: hide `datasets`' progress bars and its download-count ping (restored afterwards).

    `datasets` sends a HEAD request to S3 ("download counts") on every ``load_dataset`` call, even of the
    ``parquet`` builder over local files, unless ``HF_HUB_OFFLINE`` is set; a local read must not touch the network.
    """
    import datasets

    was_on, was_counting = datasets.is_progress_bar_enabled(), datasets.config.HF_UPDATE_DOWNLOAD_COUNTS
    datasets.disable_progress_bars()
    datasets.config.HF_UPDATE_DOWNLOAD_COUNTS = False
    try:
        yield
    finally:
        datasets.config.HF_UPDATE_DOWNLOAD_COUNTS = was_counting
        if was_on:
            datasets.enable_progress_bars()


def write_parquet(rows: list[dict[str, Any]], features: Any, path: Path) -> None:
    """Write rows as one Parquet file with the given ``datasets.Features`` (an empty list keeps the columns)."""
    import datasets

    path.parent.mkdir(parents=True, exist_ok=True)
    with quiet_datasets():
        table = (
            datasets.Dataset.from_list(rows, features=features)
            if rows
            else datasets.Dataset.from_dict({k: [] for k in features}, features=features)
        )  # from_list([]) has no columns
        table.to_parquet(str(path))
