"""mkdocs hook (mkdocs.yml `hooks:`): give the API reference a ``madqa`` package to read.

The folders are installed as ``madqa.<folder>`` by setuptools ``package-dir``, and there is deliberately no
``madqa/`` folder at the root (ARCHITECTURE.md), so mkdocstrings' loader (griffe) finds no ``madqa`` in an editable
install. Before a build or serve starts this links the folders into ``build/docs-src/madqa/``, the path that
mkdocs.yml gives it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("agents", "bench", "cli", "loading_script", "metric", "space")
FARM = ROOT / "build" / "docs-src" / "madqa"


def on_startup(command: str, dirty: bool) -> None:
    """Link each installed folder as ``build/docs-src/madqa/<folder>`` (idempotent), before any plugin reads its
    configuration: mkdocstrings drops a search path that does not exist yet."""
    FARM.mkdir(parents=True, exist_ok=True)
    for folder in FOLDERS:
        link = FARM / folder
        if not link.is_symlink() or link.resolve() != ROOT / folder:
            link.unlink(missing_ok=True)
            link.symlink_to(ROOT / folder, target_is_directory=True)
