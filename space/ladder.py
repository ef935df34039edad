"""The official ranking: private-part scores released through Blum & Hardt's Ladder, in snapshots.

The live board is computed from the public part of the test labels, which a participant can probe (bits per
submission: :func:`madqa.space.disclosure.public_bits_bound`). The ranking that counts is computed from the private
part and published only here, with bounded information:

* **Ladder** (Blum & Hardt 2015, "The Ladder: a reliable leaderboard for machine learning competitions"): each
  identity (the Hub user on a Space) has one published value. A submission's private accuracy replaces it only when
  it beats the current value by more than the margin η, and the new value is rounded to a multiple of η. So an
  identity's value rises by at least η at each change, at most ``1/η`` changes in its whole life, each one of
  ``1/η + 1`` grid values; the snapshot also names the submission that set it.
* **Snapshots**: values are published only when a snapshot is taken (by the maintainers, ``python -m
  madqa.space.ladder snapshot``, or every ``MADQA_SPACE_SNAPSHOT_DAYS``), never at submission time, so no response
  of the Space depends on the private part. A snapshot lists, per identity, its value, the submission that set it
  and how many of its submissions were scored.

What one identity can learn from the private part, over its whole life: at most ``1/η`` changes, each at most
``log2(1/η + 1) + log2(K + 1)`` bits for K submissions (:func:`ladder_bits`); with η = 0.01 and 5 accepted files a
day for a year, about 1,750 bits, spread over at most 100 snapshots, and nothing between snapshots.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .private_part import PrivateResult, PrivateScores

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ladder_snapshots (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    taken TEXT NOT NULL,
    taken_at REAL NOT NULL,
    margin REAL NOT NULL,
    entries TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class LadderEntry:
    """One identity's published private value: ``value`` (a multiple of the margin), the submission that set it,
    how many of its submissions have a private score, and how many were not scored (budget)."""

    identity: str
    submission_id: int
    value: float
    scored: int
    unscored: int


def round_to(value: float, margin: float) -> float:
    """``value`` rounded to the nearest multiple of ``margin`` (ties up), kept in [0, 1].

    >>> round_to(0.514, 0.01), round_to(0.515, 0.01), round_to(1.0, 0.03)
    (0.51, 0.52, 0.99)
    """
    steps = math.floor(value / margin + 0.5 + 1e-9)
    return min(1.0, max(0.0, round(steps * margin, 10)))


def ladder(results: Sequence[PrivateResult], margin: float) -> list[LadderEntry]:
    """The Ladder over every identity's private results, in submission order, best first.

    >>> r = lambda sid, acc: PrivateResult(sid, "u", "scored", acc, {})
    >>> [e.value for e in ladder([r(1, 0.40), r(2, 0.405), r(3, 0.43), r(4, 0.42)], 0.01)]
    [0.43]
    >>> ladder([r(1, 0.40), r(2, 0.405)], 0.01)[0].submission_id  # 0.405 does not beat 0.40 by more than 0.01
    1
    """
    best: dict[str, LadderEntry] = {}
    counts: dict[str, list[int]] = {}
    for res in sorted(results, key=lambda r: r.submission_id):
        tally = counts.setdefault(res.identity, [0, 0])
        if res.status != "scored" or res.accuracy is None:
            tally[1] += 1
            continue
        tally[0] += 1
        current = best.get(res.identity)
        if current is None or res.accuracy > current.value + margin:
            best[res.identity] = LadderEntry(res.identity, res.submission_id, round_to(res.accuracy, margin), 0, 0)
    out = [LadderEntry(e.identity, e.submission_id, e.value, *counts[e.identity]) for e in best.values()]
    return sorted(out, key=lambda e: (-e.value, e.submission_id))


def ladder_bits(margin: float, submissions: int) -> float:
    """Upper bound on what one identity learns of the private part over its life (see the module docstring).

    >>> round(ladder_bits(0.01, 5 * 365))
    1749
    """
    changes = math.floor(1.0 / margin + 1e-9)
    return changes * (math.log2(changes + 1) + math.log2(submissions + 1))


class Snapshots:
    """Snapshots of the official ranking, in the board's database."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.scores = PrivateScores(self.path)
        con = sqlite3.connect(self.path, timeout=30.0)
        try:
            con.executescript(_SCHEMA)
        finally:
            con.close()

    def take(self, margin: float, *, now: float | None = None) -> int:
        """Compute the Ladder over every private result scored so far and store it; returns the snapshot's id."""
        now = time.time() if now is None else now
        entries = ladder(self.scores.results(), margin)
        taken = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M:%S")
        con = sqlite3.connect(self.path, timeout=30.0)
        try:
            with con:
                cur = con.execute(
                    "INSERT INTO ladder_snapshots (taken, taken_at, margin, entries) VALUES (?, ?, ?, ?)",
                    (taken, now, margin, json.dumps([asdict(e) for e in entries])),
                )
                return int(cur.lastrowid or 0)
        finally:
            con.close()

    def latest(self) -> tuple[str, float, float, list[LadderEntry]] | None:
        """(taken, taken_at, margin, entries) of the newest snapshot, or ``None``."""
        con = sqlite3.connect(self.path, timeout=30.0)
        try:
            row = con.execute(
                "SELECT taken, taken_at, margin, entries FROM ladder_snapshots ORDER BY id DESC LIMIT 1"
            ).fetchone()
        finally:
            con.close()
        if row is None:
            return None
        return str(row[0]), float(row[1]), float(row[2]), [LadderEntry(**e) for e in json.loads(row[3])]

    def take_if_due(self, margin: float, every_days: float, *, now: float | None = None) -> bool:
        """Take a snapshot when the newest is older than ``every_days`` (never when 0); ``True`` if one was taken.

        The first snapshot waits a full period after the first private result, like every later one.
        """
        if every_days <= 0:
            return False
        now = time.time() if now is None else now
        last = self.latest()
        if last is None:
            results = self.scores.results()
            if not results:
                return False
            since = _first_scored_at(self.path)
        else:
            since = last[1]
        if since is None or now - since < every_days * 86400:
            return False
        self.take(margin, now=now)
        return True


def _first_scored_at(path: Path) -> float | None:
    con = sqlite3.connect(path, timeout=30.0)
    try:
        row = con.execute("SELECT MIN(scored) FROM private_reports").fetchone()
    finally:
        con.close()
    if not row or row[0] is None:
        return None
    return datetime.strptime(str(row[0]), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m madqa.space.ladder snapshot [--db PATH] [--margin η]``: publish the official ranking now.

    For the maintainers, on the machine holding the database (default: ``MADQA_SPACE_DB``). Prints the snapshot's
    id and its number of ranked identities.
    """
    parser = argparse.ArgumentParser(prog="python -m madqa.space.ladder")
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="publish the official (private-part) ranking now")
    snap.add_argument("--db", help="the SQLite file (default: from the Space's environment)")
    snap.add_argument("--margin", type=float, help="the Ladder's margin (default: MADQA_SPACE_LADDER_MARGIN)")
    args = parser.parse_args(argv)
    from .config import SpaceConfig

    config: Any = SpaceConfig.from_env()
    db = Path(args.db) if args.db else config.db_path
    if not db.is_file():
        parser.exit(2, f"no board database at {db}\n")
    margin = args.margin if args.margin is not None else config.ladder_margin
    if not 0.001 <= margin <= 0.2:
        parser.exit(2, f"--margin must be between 0.001 and 0.2, got {margin}\n")
    snapshots = Snapshots(db)
    sid = snapshots.take(margin)
    latest = snapshots.latest()
    print(f"snapshot #{sid}: {len(latest[3]) if latest else 0} identities ranked")  # the CLI's one result line
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
