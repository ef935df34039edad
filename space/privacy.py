"""Owner-only files and folders: the submissions database (contacts) and the Space's private copies.

Mirror files (contacts, per-item scores), downloaded labels and restored snapshots live in private folders, and the
database with its SQLite side files is owner read/write only.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Mode of every private file (owner read/write only).
PRIVATE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) and make it owner-only (0700), also when it already existed.

    Mirror files (contacts, per-item scores), downloaded labels and restored snapshots live in such folders, so
    their own file modes (gradio's and huggingface_hub's defaults) never expose them to other local users.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def make_private(path: Path) -> None:
    """The database and its side files: owner read/write only (created so, fixed if older)."""
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, PRIVATE_MODE))
    for side in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        try:
            if stat.S_IMODE(side.stat().st_mode) != PRIVATE_MODE:
                os.chmod(side, PRIVATE_MODE)
        except FileNotFoundError:
            continue
