"""Register the name ``madqa`` in the `datasets` cache so the literal ``load_dataset("madqa")`` works offline.

datasets 5.2 falls back to its cache for a name it prepared before (offline, or when the Hub answers "not found"),
and a local folder's cache name is its basename. The catch (stack notes §0/§6): when several configs of a name share
one cache hash, a bare ``load_dataset("madqa")`` refuses to pick ("multiple configurations in the cache").
The cache fallback picks the most recently modified cache entry and only complains about *other configs with the
same hash*. So each config is registered from its own single-config copy of the card (``registry/<config>/madqa``):
the hashes differ, and ``default`` is registered last and touched so it is the newest. Then the bare call returns
train/dev/test and ``load_dataset("madqa", "documents" | "pages")`` find their own entries.

Loading the public folder itself with `datasets` adds entries that share a hash again; ``madqa setup`` notices
(:func:`registration_ok`) and registers afresh. Project code reads local folders through the ``parquet`` builder
(see :mod:`.load`) so it never disturbs the registration.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

import yaml

from .io import quiet_datasets
from .paths import DATASET_NAME

logger = logging.getLogger(__name__)

#: Registration order: the default config must come last (newest).
CONFIG_ORDER: tuple[str, ...] = ("pages", "documents", "default")


def hf_datasets_cache() -> Path:
    """The `datasets` cache folder, read from the environment at call time (HF_DATASETS_CACHE, HF_HOME)."""
    if os.environ.get("HF_DATASETS_CACHE"):
        return Path(os.environ["HF_DATASETS_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or str(Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "huggingface")
    return Path(home).expanduser() / "datasets"


def _front_matter(card_text: str) -> tuple[dict, str]:
    _, header, body = card_text.split("---", 2)
    return yaml.safe_load(header), body


def _single_config_folder(dataset_dir: Path, registry_dir: Path, config: str) -> Path:
    """Copy one config's data files and a card declaring only that config into ``registry/<config>/madqa``."""
    meta, _ = _front_matter((dataset_dir / "README.md").read_text(encoding="utf-8"))
    (entry,) = [c for c in meta["configs"] if c["config_name"] == config]
    infos = meta.get("dataset_info", [])
    infos = [i for i in (infos if isinstance(infos, list) else [infos]) if i.get("config_name") == config]
    folder = registry_dir / config / DATASET_NAME
    shutil.rmtree(folder.parent, ignore_errors=True)
    folder.mkdir(parents=True)
    for spec in entry["data_files"]:
        for src in sorted(dataset_dir.glob(spec["path"])):
            dst = folder / src.relative_to(dataset_dir)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    header = {"configs": [dict(entry, default=True) if config == "default" else entry], "dataset_info": infos}
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(header, sort_keys=False)}---\n", encoding="utf-8")
    return folder


def _entries(cache_root: Path) -> list[Path]:
    return sorted(p for p in cache_root.glob("*/*/*") if p.is_dir())


def register_offline_names(dataset_dir: Path, registry_dir: Path) -> dict[str, str]:
    """Prepare every config of ``dataset_dir`` in the `datasets` cache under the name ``madqa``.

    Args:
        dataset_dir: the built public dataset folder.
        registry_dir: scratch folder for the single-config copies.

    Returns:
        ``config → cache entry`` as registered (also written to ``registry_dir/registration.json``).
    """
    import datasets

    cache = hf_datasets_cache()
    cache_root = cache / DATASET_NAME
    for config in CONFIG_ORDER:  # stale entries of our configs would confuse the most-recent rule
        shutil.rmtree(cache_root / config, ignore_errors=True)
    registered: dict[str, str] = {}
    with quiet_datasets():
        for config in CONFIG_ORDER:
            folder = _single_config_folder(dataset_dir, registry_dir, config)
            datasets.load_dataset(str(folder), config, cache_dir=str(cache))
    for config in CONFIG_ORDER:
        (entry,) = [p for p in _entries(cache_root) if p.parts[-3] == config]
        registered[config] = str(entry.relative_to(cache_root))
    newest = time.time() + 1
    os.utime(cache_root / registered["default"], (newest, newest))
    (registry_dir / "registration.json").write_text(json.dumps({"cache": str(cache), "entries": registered}))
    logger.info("registered %s in the datasets cache %s", DATASET_NAME, cache)
    return registered


def registration_ok(registry_dir: Path) -> bool:
    """Whether the cache still holds exactly the registered entries, with ``default`` the newest."""
    record = registry_dir / "registration.json"
    if not record.is_file():
        return False
    try:
        saved = json.loads(record.read_text())
    except ValueError:
        return False
    cache_root = Path(saved["cache"]) / DATASET_NAME
    if Path(saved["cache"]) != hf_datasets_cache() or not cache_root.is_dir():
        return False
    entries = _entries(cache_root)
    if sorted(str(p.relative_to(cache_root)) for p in entries) != sorted(saved["entries"].values()):
        return False
    newest = max(entries, key=lambda p: p.stat().st_mtime)
    return str(newest.relative_to(cache_root)) == saved["entries"]["default"]
