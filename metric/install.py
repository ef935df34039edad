"""Install the metric into evaluate's module cache so that ``evaluate.load("madqa")`` works offline.

evaluate 0.4.6 resolves ``evaluate.load("madqa")`` as: ``./madqa/madqa.py`` in the working directory, else the Hub
(``evaluate-metric/madqa``), else, when the Hub cannot be reached (``HF_EVALUATE_OFFLINE=1`` skips trying), the
newest cached copy: ``$HF_MODULES_CACHE/evaluate_modules/metrics/evaluate-metric--madqa/<64-char dir>/madqa.py``
(``HF_MODULES_CACHE`` defaults to ``$HF_HOME/modules``), where "newest" is the modification time of ``madqa.py``.
The module is imported as ``evaluate_modules.metrics.evaluate-metric--madqa.<hash>.madqa``, so its relative
imports resolve to sibling files in the same directory.

:func:`install_offline_module` writes that layout: ``madqa.py`` plus every module it imports relatively (found
with the same top-level-line rule evaluate uses), ``__init__.py`` files at each package level, and a directory
name that is the SHA-256 of the copied files (so a new version gets a new directory and becomes the newest).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

#: Name under which evaluate looks up a canonical metric in its module cache.
CACHE_NAME = "evaluate-metric--madqa"
SCRIPT = "madqa.py"

_RELATIVE_IMPORT = re.compile(r"^from\s+\.([A-Za-z_]\w*)\s+import\s")


def relative_imports(script: Path) -> list[str]:
    """Module names a script imports relatively at top level (``from .name import ...``), in file order."""
    names: list[str] = []
    for line in script.read_text(encoding="utf-8").splitlines():
        match = _RELATIVE_IMPORT.match(line)
        if match and match.group(1) not in names:
            names.append(match.group(1))
    return names


def module_files(metric_dir: Path | None = None) -> list[Path]:
    """``madqa.py`` and the sibling files it imports relatively."""
    folder = metric_dir or Path(__file__).resolve().parent
    script = folder / SCRIPT
    files = [script] + [folder / f"{name}.py" for name in relative_imports(script)]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"metric files missing: {missing}")
    return files


def modules_cache(hf_home: Path | None = None) -> Path:
    """The module cache of evaluate.

    ``hf_home/modules`` if given, else ``HF_MODULES_CACHE``, else ``HF_HOME/modules``.
    """
    if hf_home is not None:
        return Path(hf_home).expanduser() / "modules"
    if os.environ.get("HF_MODULES_CACHE"):
        return Path(os.environ["HF_MODULES_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or str(Path("~/.cache/huggingface").expanduser())
    return Path(home).expanduser() / "modules"


def _digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in sorted(files, key=lambda p: p.name):
        h.update(f.name.encode("utf-8") + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def install_offline_module(hf_home: Path | None = None, metric_dir: Path | None = None) -> Path:
    """Copy the metric into evaluate's module cache as the newest ``evaluate-metric--madqa`` version.

    Args:
        hf_home: Hugging Face home whose ``modules/`` to use (default: ``HF_MODULES_CACHE`` or ``HF_HOME``).
        metric_dir: folder holding ``madqa.py`` (default: this folder).

    Returns:
        The version directory (``…/evaluate-metric--madqa/<sha256>``).
    """
    files = module_files(metric_dir)
    root = modules_cache(hf_home) / "evaluate_modules"
    target = root / "metrics" / CACHE_NAME / _digest(files)
    target.mkdir(parents=True, exist_ok=True)
    for folder in (root, root / "metrics", root / "metrics" / CACHE_NAME, target):
        (folder / "__init__.py").touch(exist_ok=True)
    for f in files[1:]:
        shutil.copyfile(f, target / f.name)
    shutil.copyfile(files[0], target / SCRIPT)  # last, and a fresh mtime: this version is the newest
    os.utime(target / SCRIPT)
    meta = {"original file path": str(files[0]), "local file path": str(target / SCRIPT)}
    (target / "madqa.json").write_text(json.dumps(meta), encoding="utf-8")
    return target
