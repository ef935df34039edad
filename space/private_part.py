"""Scores of the private part of the test labels: computed after a submission is accepted, stored, never shown.

Every number a participant sees at or after submission time (the response, the board, plots, errors and their
timing) comes from the public part (:mod:`madqa.loading_script.label_parts`). The private part of an accepted
file is scored afterwards, in the background, by a scoring process of its own (not the public pool's, so a
submission's private scoring never delays the next submission's queue slot), and stored in tables that nothing a
participant reaches reads. The official ranking publishes them only through :mod:`.ladder`.

The accepted file's text waits in ``private_queue`` (in the same private 0600 database) until its private part is
scored, so a restart loses nothing: :meth:`PrivateScorer.resume` re-queues what was left.
"""

from __future__ import annotations

import json
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .storage import ITEM_FIELDS, item_row, item_table

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS private_queue (
    submission_id INTEGER PRIMARY KEY REFERENCES submissions(id) ON DELETE CASCADE,
    identity TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS private_reports (
    submission_id INTEGER PRIMARY KEY REFERENCES submissions(id) ON DELETE CASCADE,
    identity TEXT NOT NULL,
    status TEXT NOT NULL,
    scored TEXT NOT NULL,
    report TEXT NOT NULL
);
""" + item_table("private_item_scores")


@dataclass(frozen=True)
class PrivateResult:
    """One submission's private-part result, as the Ladder reads it (maintainers' side only)."""

    submission_id: int
    identity: str
    status: str  # "scored" or "failed"
    accuracy: float | None
    report: dict[str, Any]


class PrivateScores:
    """The private tables of the board's database (the same file as :class:`.storage.SubmissionStore`'s)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with self._connect() as con:
            con.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=30.0)
        try:
            con.execute("PRAGMA foreign_keys=ON")
            yield con
        finally:
            con.close()

    def enqueue(self, sid: int, identity: str, text: str) -> None:
        with self._connect() as con, con:
            con.execute("INSERT OR REPLACE INTO private_queue VALUES (?, ?, ?)", (sid, identity, text))

    def pending(self) -> list[tuple[int, str, str]]:
        """Queued (submission id, identity, text), oldest first."""
        with self._connect() as con:
            return [
                (int(a), str(b), str(c))
                for a, b, c in con.execute(
                    "SELECT submission_id, identity, text FROM private_queue ORDER BY submission_id"
                )
            ]

    def record(
        self, sid: int, identity: str, status: str, report: dict[str, Any], items: list[dict[str, Any]]
    ) -> None:
        """Store one result and drop its queued text, in one transaction."""
        rows = [(sid, *item_row(it)) for it in items]
        scored = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
        with self._connect() as con, con:
            con.execute("BEGIN IMMEDIATE")
            if con.execute("SELECT 1 FROM submissions WHERE id = ?", (sid,)).fetchone() is None:
                return  # deleted meanwhile
            con.execute(
                "INSERT OR REPLACE INTO private_reports VALUES (?, ?, ?, ?, ?)",
                (sid, identity, status, scored, json.dumps(report)),
            )
            con.execute("DELETE FROM private_item_scores WHERE submission_id = ?", (sid,))
            con.executemany(f"INSERT INTO private_item_scores (submission_id, {', '.join(ITEM_FIELDS)}) "
                            f"VALUES (?, {', '.join('?' * len(ITEM_FIELDS))})", rows)  # fmt: skip
            con.execute("DELETE FROM private_queue WHERE submission_id = ?", (sid,))

    def results(self) -> list[PrivateResult]:
        """Every private result, by submission id."""
        with self._connect() as con:
            rows = con.execute("SELECT submission_id, identity, status, report FROM private_reports "
                               "ORDER BY submission_id").fetchall()  # fmt: skip
        out = []
        for sid, identity, status, report in rows:
            data = json.loads(report)
            acc = data.get("accuracy") if status == "scored" else None
            out.append(PrivateResult(int(sid), str(identity), str(status), None if acc is None else float(acc), data))
        return out

    def item_scores(self, sid: int) -> list[dict[str, Any]]:
        """Per-item private scores of one submission (maintainers' side only)."""
        with self._connect() as con:
            con.row_factory = sqlite3.Row
            return [
                dict(r)
                for r in con.execute(
                    "SELECT * FROM private_item_scores WHERE submission_id = ? ORDER BY rowid", (sid,)
                )
            ]


class PrivateScorer:
    """A background thread that scores accepted files' private part and stores the result.

    Args:
        scores: where results go.
        evaluate: ``text -> Evaluation`` for the private part (a scoring pool's, or in-thread).
    """

    def __init__(self, scores: PrivateScores, evaluate: Callable[[str], Any],
                 mirror: Callable[[], Any] | None = None) -> None:
        self.scores, self._evaluate, self._mirror = scores, evaluate, mirror or (lambda: None)
        self._queue: queue.Queue[tuple[int, str, str] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, sid: int, identity: str, text: str) -> None:
        """Queue an accepted file (stored first, so a restart resumes it)."""
        self.scores.enqueue(sid, identity, text)
        self._put((sid, identity, text))

    def resume(self) -> int:
        """Queue what a previous process left unscored; returns how many."""
        pending = self.scores.pending()
        for job in pending:
            self._put(job)
        return len(pending)

    def _put(self, job: tuple[int, str, str]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="madqa-private-scoring", daemon=True)
                self._thread.start()
        self._queue.put(job)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                self._score(*job)
            finally:
                self._queue.task_done()

    def _score(self, sid: int, identity: str, text: str) -> None:
        from .identity import SubmissionError

        try:
            done = self._evaluate(text)
            status, report, items = "scored", done.report, done.items
        except SubmissionError as exc:  # e.g. the CPU budget: recorded, counted as unscored by the Ladder
            status, report, items = "failed", {"reason": str(exc)[:300]}, []
            logger.warning("private part of submission %s not scored: %s", sid, exc)
        except Exception:  # noqa: BLE001 - a bug: kept queued for the next start, logged for the maintainers
            logger.exception("private part of submission %s failed", sid)
            return
        self.scores.record(sid, identity, status, report, items)
        mirror = self._mirror()
        if mirror is not None and hasattr(mirror, "save_private"):
            mirror.save_private(sid, identity, status, report, items)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every queued file is scored (tests, shutdown); ``False`` on time-out."""
        if timeout is None:
            self._queue.join()
            return True
        done = threading.Event()
        threading.Thread(target=lambda: (self._queue.join(), done.set()), daemon=True).start()
        return done.wait(timeout)
