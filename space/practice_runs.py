"""Visitors' practice runs that they chose to share: the "Solve it yourself" tab's opt-in board (dev split only).

Nothing a visitor does in that tab is stored until they press **Share my run**; then the run (its JSONL lines, i.e.
the questions answered, queries, page views and citations: a human trajectory on public dev questions) and its
ANLS* report over the questions answered go to the table ``practice_runs`` of the Space's database, and a row
appears on the practice board. Decisions:

* **Dev only.** Runs are scored against the public dev labels the tab already shows after each answer; a line whose
  question is not a dev question is refused. The test leaderboard is untouched: human *test* runs come from
  ``madqa human --split test`` through the Submit tab, like any system.
* **Guards**, checked inside the transaction that stores the run (SQLite ``BEGIN IMMEDIATE``): the same run twice
  (sha256 of its text) is refused, and at most ``limit`` runs per identity (Hub user on a Space, else the peer
  address) per ``window_s``, the Space's submission rate policy.
* **Names** go through the form checks of :mod:`.identity` (normalised; invisible and control characters refused;
  maintainers' names reserved). The identity is stored for the rate window only and never shown.
* Not mirrored to the Hub (the test board's mirror carries submissions only); a Space without a persistent disk
  loses the practice board on restart.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from .identity import RateLimiter, SubmissionError, clean_name, identity_key
from .privacy import make_private
from .refusals import RateRule

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS practice_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    name TEXT NOT NULL,
    batch TEXT NOT NULL,
    n_answered INTEGER NOT NULL,
    report TEXT NOT NULL,
    results TEXT NOT NULL,
    run_sha256 TEXT NOT NULL UNIQUE,
    identity TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS practice_runs_identity ON practice_runs(identity, at);
"""
#: Board columns, in order.
COLUMNS = ("#", "Name", "Date", "Batch", "Answered", "Accuracy", "ANLS*", "Page F1", "Doc F1", "Mean searches")
#: Report keys kept in the database (aggregates only; the per-question lines are in ``results``).
REPORT_KEYS = ("n", "accuracy", "accuracy_ci", "anls", "page_f1", "doc_f1", "mean_steps", "kuiper", "metric_version")


@dataclass(frozen=True)
class SharedRun:
    """One stored practice run as the board shows it."""

    id: int
    created: str
    name: str
    batch: str
    n_answered: int
    report: dict[str, Any]


class PracticeShelf:
    """The ``practice_runs`` table of the Space's SQLite database (safe to share between worker threads).

    Args:
        path: the database file (the Space's submissions database: one file to back up).
        limiter: the Space's rate policy.
        login_required: on a Space, sharing needs a Hub login (as submitting does).
    """

    def __init__(self, path: str | Path, limiter: RateLimiter, *, login_required: bool = False) -> None:
        self.path, self.limiter, self.login_required = Path(path), limiter, login_required
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)
        make_private(self.path)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=30.0)
        try:
            yield con
        finally:
            con.close()

    def share(self, name: str, run_jsonl: str, report: Mapping[str, Any], *, batch: str, identity: str) -> int:
        """Store one run under ``name``; returns its board number.

        Raises:
            SubmissionError: a bad name, an empty run, the same run again, or the rate limit (nothing stored).
        """
        clean = clean_name(name, "the name")
        lines = [line for line in run_jsonl.splitlines() if line.strip()]
        if not lines:
            raise SubmissionError("answer at least one question before sharing your run")
        digest = hashlib.sha256(run_jsonl.encode("utf-8")).hexdigest()
        rule = self.limiter.rule(f"practice:{identity}")
        summary = {k: report.get(k) for k in REPORT_KEYS}
        created = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock, self._connect() as con:
            with con:  # guards and insert in one transaction, under SQLite's write lock
                con.execute("BEGIN IMMEDIATE")
                self._guard(con, digest, rule)
                cur = con.execute(
                    "INSERT INTO practice_runs (created, name, batch, n_answered, report, results, run_sha256, "
                    "identity, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (created, clean, batch, len(lines), json.dumps(summary), run_jsonl, digest, rule.key, rule.now),
                )
                run_id = int(cur.lastrowid or 0)
        make_private(self.path)
        logger.info("practice run #%d shared (%d answers, batch %s)", run_id, len(lines), batch)
        return run_id

    def share_request(
        self, name: str, run_jsonl: str, report: Mapping[str, Any], *, batch: str, request: Any, profile: Any
    ) -> int:
        """:meth:`share` for the visitor of a Gradio request (identity as for submissions).

        Raises:
            madqa.space.human.practice.ShareRefused: why nothing was stored.
        """
        from madqa.space.human.practice import ShareRefused

        try:
            identity = identity_key(request, profile, login_required=self.login_required)
            return self.share(name, run_jsonl, report, batch=batch, identity=identity)
        except SubmissionError as exc:
            raise ShareRefused(str(exc)) from None

    @staticmethod
    def _guard(con: sqlite3.Connection, digest: str, rule: RateRule) -> None:
        row = con.execute("SELECT id FROM practice_runs WHERE run_sha256 = ?", (digest,)).fetchone()
        if row is not None:
            raise SubmissionError(
                f"this run is already on the practice board as #{row[0]}; answer more questions before sharing again"
            )
        if rule.limit > 0:
            n, oldest = con.execute(
                "SELECT COUNT(*), MIN(at) FROM practice_runs WHERE identity = ? AND at > ?",
                (rule.key, rule.now - rule.window_s),
            ).fetchone()
            if n >= rule.limit:
                wait_s = float(oldest) + rule.window_s - rule.now
                raise SubmissionError(RateLimiter.message(rule.limit, rule.window_s, wait_s))

    def runs(self) -> list[SharedRun]:
        """All shared runs, oldest first."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT id, created, name, batch, n_answered, report FROM practice_runs ORDER BY id"
            ).fetchall()
        return [SharedRun(int(r[0]), r[1], r[2], r[3], int(r[4]), json.loads(r[5])) for r in rows]

    def results(self, run_id: int) -> str | None:
        """The JSONL lines of one shared run (``None`` if absent)."""
        with self._connect() as con:
            row = con.execute("SELECT results FROM practice_runs WHERE id = ?", (run_id,)).fetchone()
        return None if row is None else str(row[0])

    def frame(self) -> pd.DataFrame:
        """The practice board: best accuracy first (ties: more questions answered, then older)."""
        rows = [practice_row(r) for r in self.runs()]
        if not rows:
            return pd.DataFrame(columns=list(COLUMNS))
        df = pd.DataFrame(rows, columns=list(COLUMNS))
        return df.sort_values(
            ["Accuracy", "Answered", "#"], ascending=[False, False, True], na_position="last"
        ).reset_index(drop=True)


def practice_row(run: SharedRun) -> dict[str, Any]:
    """One board row, in the main board's units: accuracy, ANLS*, Page F1 and Doc F1 in percent to one decimal,
    mean searches to two (numbers as numbers so that sorting works)."""
    r = run.report

    def pct(key: str) -> float | None:
        return None if r.get(key) is None else round(100.0 * float(r[key]), 1)

    def num(key: str) -> float | None:
        return None if r.get(key) is None else round(float(r[key]), 2)

    return {
        "#": run.id,
        "Name": run.name,
        "Date": run.created[:10],
        "Batch": run.batch,
        "Answered": run.n_answered,
        "Accuracy": pct("accuracy"),
        "ANLS*": pct("anls"),
        "Page F1": pct("page_f1"),
        "Doc F1": pct("doc_f1"),
        "Mean searches": num("mean_steps"),
    }
