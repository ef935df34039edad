"""Where `madqa setup` keeps its files: one layout, resolved from ``MADQA_HOME``.

``MADQA_HOME`` defaults to ``$XDG_CACHE_HOME/madqa`` (``~/.cache/madqa``). The hidden test labels live in
``private/``, a sibling of the public ``hub/madqa`` dataset folder, so pushing or serving the public folder can
never include them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: Name the public dataset folder must have: `datasets` derives the cache name from the folder's basename.
DATASET_NAME = "madqa"


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
    def registry_dir(self) -> Path:
        """One single-config copy of the dataset card per config, used to register the offline cache names."""
        return self.root / "registry"
