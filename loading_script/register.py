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

**One cache, one home.** ``load_dataset("madqa")`` in a user's own process reads the `datasets` cache that
``HF_DATASETS_CACHE``/``HF_HOME`` name and knows nothing of ``MADQA_HOME``: two homes built with different seeds
that both registered there would leave the name with whichever ran ``madqa setup`` last, and ``load_dataset`` would
disagree with ``madqa evaluate`` of the other home. No code of ours runs inside ``load_dataset``, so it cannot
refuse by itself; instead the name in a cache belongs to one home, recorded in ``<cache>/madqa/`` (:data:`OWNER_FILE`:
the home and a digest of its data files). :func:`registration_cache` decides where a home registers: the cache the
environment names, unless another home that still exists owns the name there with other data; then the home's own
cache ``MADQA_HOME/hf_datasets``, and ``madqa setup`` says so in one WARNING line naming the other home and the fix
(``HF_DATASETS_CACHE=MADQA_HOME/hf_datasets``, or the folder's path). So ``load_dataset("madqa")`` never returns
one home's rows to the other: with the shared cache it is the owner's data, with a home's own cache that home's.
A home with the same data (same digest), or one whose owner is gone, takes the shared name over. The metric's
``evaluate.load("madqa")`` is code only (predictions and references come from the caller), the same for every home.
"""

from __future__ import annotations

import hashlib
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
#: In ``<cache>/madqa/``: which home owns the name in that cache (``home``, ``digest`` of its data files).
OWNER_FILE = "madqa_home.json"
#: Under ``MADQA_HOME``: the home's own `datasets` cache, used when the shared one belongs to another home.
HOME_CACHE = "hf_datasets"


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


def data_digest(dataset_dir: Path) -> str:
    """A digest of the dataset folder's data files (what ``load_dataset`` returns), their paths and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in (dataset_dir / "data").rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(dataset_dir)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def read_owner(cache: Path) -> dict | None:
    """The owner record of the name in ``cache`` (``None``: none, or unreadable, as before owners were recorded)."""
    try:
        record = json.loads((cache / DATASET_NAME / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("home"), str) else None


def _owner_alive(record: dict, cache: Path) -> bool:
    """Whether the owning home still exists and its registration still points at ``cache``."""
    try:
        saved = json.loads((Path(record["home"]) / "registry" / "registration.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(saved, dict) and Path(str(saved.get("cache"))) == cache


def registration_cache(home: Path, dataset_dir: Path) -> tuple[Path, dict | None]:
    """Where ``home`` registers the name: ``(cache, None)``, or ``(home's own cache, the other owner's record)``
    when another living home owns the name in the shared cache with other data (module docstring; the record's
    ``cache`` is that shared cache)."""
    shared = hf_datasets_cache()
    owner = read_owner(shared)
    if (
        owner is None
        or Path(owner["home"]).resolve() == home.resolve()
        or owner.get("digest") == data_digest(dataset_dir)
        or not _owner_alive(owner, shared)
    ):
        return shared, None
    return home / HOME_CACHE, {**owner, "cache": str(shared)}


def _entries(cache_root: Path) -> list[Path]:
    return sorted(p for p in cache_root.glob("*/*/*") if p.is_dir())


def register_offline_names(
    dataset_dir: Path, registry_dir: Path, cache: Path | None = None, home: Path | None = None
) -> dict[str, str]:
    """Prepare every config of ``dataset_dir`` in the `datasets` cache under the name ``madqa``.

    Args:
        dataset_dir: the built public dataset folder.
        registry_dir: scratch folder for the single-config copies.
        cache: the `datasets` cache to register in (default: the environment's, :func:`hf_datasets_cache`).
        home: the ``MADQA_HOME`` that owns the registration (recorded in :data:`OWNER_FILE`; ``None``: none).

    Returns:
        ``config → cache entry`` as registered (also written to ``registry_dir/registration.json``).
    """
    import datasets

    cache = cache or hf_datasets_cache()
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
    if home is not None:
        owner = {"home": str(home.resolve()), "digest": data_digest(dataset_dir)}
        (cache_root / OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")
    logger.info("registered %s in the datasets cache %s", DATASET_NAME, cache)
    return registered


def registration_ok(registry_dir: Path, cache: Path | None = None) -> bool:
    """Whether ``cache`` (default: the environment's) still holds exactly the registered entries, with ``default``
    the newest, and no other home took the name over there."""
    record = registry_dir / "registration.json"
    if not record.is_file():
        return False
    try:
        saved = json.loads(record.read_text())
    except ValueError:
        return False
    cache_root = Path(saved["cache"]) / DATASET_NAME
    if Path(saved["cache"]) != (cache or hf_datasets_cache()) or not cache_root.is_dir():
        return False
    owner = read_owner(
        Path(saved["cache"])
    )  # the cache's hashes do not depend on the data: only this tells homes apart
    if owner is None or Path(owner["home"]).resolve() != registry_dir.parent.resolve():
        return False
    entries = _entries(cache_root)
    if sorted(str(p.relative_to(cache_root)) for p in entries) != sorted(saved["entries"].values()):
        return False
    newest = max(entries, key=lambda p: p.stat().st_mtime)
    return str(newest.relative_to(cache_root)) == saved["entries"]["default"]
