"""The board's database at start-up: ``PRAGMA integrity_check``, and a damaged file kept aside, never deleted.

A file that is not SQLite, is truncated, or opens but fails ``integrity_check`` (a page overwritten, an index that
no longer matches its table: ``quick_check`` misses the latter) would be served silently while every submission
fails, or crash the start with a traceback. :func:`check_database` finds it and :func:`keep_aside` renames it (and
its ``-wal``/``-shm``/``-journal`` side files, so the kept copy opens with what it held) to
``<name>.damaged-<UTC time>``, owner-only; :mod:`.startup` then restores the board from the Hub mirror, or serves
the configuration page that says where the copy is. A database that cannot be opened for another reason (locked,
no permission) is not damaged: it is left in place and reported.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .privacy import PRIVATE_MODE, make_private

logger = logging.getLogger(__name__)

SIDE_FILES = ("-wal", "-shm", "-journal")
#: SQLite's result codes for a damaged file (extended codes such as ``SQLITE_CORRUPT_INDEX`` start the same).
_DAMAGE_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


class DatabaseUnusable(Exception):
    """The database cannot be opened or checked for a reason other than damage; ``str()`` says why."""


@dataclass(frozen=True)
class DamagedDatabase:
    """A damaged database that was moved aside: its path, where the copy is kept, and what was wrong."""

    path: Path
    kept: Path
    reason: str


def integrity_problem(path: Path) -> str | None:
    """What ``PRAGMA integrity_check`` finds wrong with ``path`` (first lines), ``None`` when it is sound or absent.

    Raises:
        DatabaseUnusable: it cannot be opened or read for a reason that is not damage (permissions, a lock).
    """
    if not path.is_file():
        return None
    make_private(path)  # side files that opening creates stay owner-only
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=30.0)
        try:
            rows = [str(r[0]) for r in con.execute("PRAGMA integrity_check(5)").fetchall()]
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        if str(getattr(exc, "sqlite_errorname", "")).startswith(_DAMAGE_CODES):
            return str(exc)
        raise DatabaseUnusable(f"{exc} ({getattr(exc, 'sqlite_errorname', type(exc).__name__)})") from None
    finally:
        make_private(path)
    return None if rows == ["ok"] else "integrity_check: " + " ".join("; ".join(rows).split())[:300]


def keep_aside(path: Path, now: datetime | None = None) -> Path:
    """Rename ``path`` and its side files to ``<name>.damaged-<UTC time>[-N]`` (mode 0600); the new name."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    kept, n = path.with_name(f"{path.name}.damaged-{stamp}"), 1
    while any(Path(f"{kept}{side}").exists() for side in ("", *SIDE_FILES)):
        kept, n = path.with_name(f"{path.name}.damaged-{stamp}-{n}"), n + 1
    for side in ("", *SIDE_FILES):
        source = Path(f"{path}{side}")
        if source.exists():
            os.rename(source, f"{kept}{side}")
            os.chmod(f"{kept}{side}", PRIVATE_MODE)
    return kept


def check_database(path: Path) -> DamagedDatabase | None:
    """Check the board's database; a damaged one is moved aside and described (``None``: sound, or no file yet).

    Raises:
        DatabaseUnusable: see :func:`integrity_problem` (nothing is moved).
    """
    reason = integrity_problem(path)
    if reason is None:
        return None
    kept = keep_aside(path)
    logger.warning("the board's database %s is damaged (%s): moved aside to %s", path, reason, kept)
    return DamagedDatabase(path, kept, reason)


def discard_partial(path: Path) -> None:
    """Delete a database this start-up created itself and could not fill (a failed restore), with its side files."""
    for side in ("", *SIDE_FILES):
        Path(f"{path}{side}").unlink(missing_ok=True)
