"""Where `madqa setup` keeps its files: one layout, resolved from ``MADQA_HOME``.

``MADQA_HOME`` defaults to ``$XDG_CACHE_HOME/madqa`` (``~/.cache/madqa``). The hidden test labels live in
``private/``, a sibling of the public ``hub/madqa`` dataset folder, so pushing or serving the public folder can
never include them.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

#: Name the public dataset folder must have: `datasets` derives the cache name from the folder's basename.
DATASET_NAME = "madqa"
#: Written last into a folder prepared by ``madqa setup --dataset SPEC``: its presence makes the folder usable.
PREPARED_FILE = "prepared.json"


def dataset_slug(spec: str) -> str:
    """A folder name for a dataset spec: ``hub--OxRML--MADQA`` for a Hub id, ``local--NAME--HASH`` for a folder.

    A folder is named by its absolute path's digest, so two folders with the same basename never share one.
    """
    path = Path(spec).expanduser()
    if path.is_dir() or spec.startswith((".", "/", "~")):
        absolute = str(path.resolve())
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", path.resolve().name)[:60] or "root"
        return f"local--{name}--{hashlib.sha256(absolute.encode()).hexdigest()[:12]}"
    return "hub--" + re.sub(r"[^A-Za-z0-9._-]+", "_", spec.replace("/", "--"))


def madqa_home() -> Path:
    """The root of MADQA's local files (``MADQA_HOME`` or ``~/.cache/madqa``)."""
    env = os.environ.get("MADQA_HOME")
    if env:
        return Path(env).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(cache).expanduser() / "madqa").resolve()


@dataclass(frozen=True)
class Layout:
    """All paths under one ``MADQA_HOME``.

    Attributes:
        root: the ``MADQA_HOME`` folder.
    """

    root: Path

    @classmethod
    def default(cls) -> Layout:
        """The layout under :func:`madqa_home`."""
        return cls(madqa_home())

    @property
    def sample_dir(self) -> Path:
        """Generator output: ``documents/*.pdf``, ``questions.jsonl``, ``documents.jsonl``, ``manifest.json``."""
        return self.root / "sample"

    @property
    def page_cache_dir(self) -> Path:
        """Per-PDF extraction cache, keyed by the PDF's sha256."""
        return self.root / "page_cache"

    @property
    def dataset_dir(self) -> Path:
        """The Hub-ready public dataset folder (basename ``madqa``)."""
        return self.root / "hub" / DATASET_NAME

    @property
    def private_dir(self) -> Path:
        """Server-side only: hidden test labels. Never inside :attr:`dataset_dir`."""
        return self.root / "private"

    @property
    def test_labels(self) -> Path:
        """JSONL of the test split with its labels (the test server's gold)."""
        return self.private_dir / "test_labels.jsonl"

    @property
    def prepared_root(self) -> Path:
        """Datasets prepared by ``madqa setup --dataset SPEC``, one folder per spec (:func:`dataset_slug`)."""
        return self.root / "datasets"

    def prepared_dir(self, spec: str) -> Path:
        """Where the dataset ``spec`` is (or would be) prepared."""
        return self.prepared_root / dataset_slug(spec)

    def prepared_dataset(self, spec: str) -> Path | None:
        """The prepared folder of ``spec`` when its preparation finished (``prepared.json`` written), else ``None``."""
        folder = self.prepared_dir(spec)
        return folder if (folder / PREPARED_FILE).is_file() else None

    @property
    def registry_dir(self) -> Path:
        """One single-config copy of the dataset card per config, used to register the offline cache names."""
        return self.root / "registry"
