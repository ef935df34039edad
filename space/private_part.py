"""Scores of the private part of the test labels: computed after a submission is accepted, stored, never shown.

Every number a participant sees at or after submission time (the response, the board, plots, errors and their
timing) comes from the public part (:mod:`madqa.loading_script.label_parts`). The private part of an accepted
file is scored afterwards, in the background, by a scoring process of its own (not the public pool's, so a
submission's private scoring never delays the next submission's queue slot), and stored in tables that nothing a
participant reaches reads. The official ranking publishes them only through :mod:`.ladder`.

The accepted file's text waits in ``private_queue`` (in the same private 0600 database) until its private part is
scored. Its queue row is written in the very transaction that stores the submission (:meth:`PrivateScores.enqueue_in`
through ``SubmissionStore.add(also=...)``), so no crash can leave a stored submission with neither a private result
nor a queued text; a restart loses nothing: :meth:`PrivateScorer.resume` re-queues what was left, and a retry with
the same submission key re-queues one that a store written before this rule lacks (:meth:`PrivateScorer.ensure`).
"""

from __future__ import annotations

import json
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .storage import ITEM_FIELDS, connect, item_row, item_table

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
        with connect(self.path) as con:
            con.executescript(_SCHEMA)

    def enqueue(self, sid: int, identity: str, text: str) -> None:
        with connect(self.path) as con, con:
            self.enqueue_in(con, sid, identity, text)

    @staticmethod
    def enqueue_in(con: sqlite3.Connection, sid: int, identity: str, text: str) -> None:
        """Queue a text inside the caller's transaction (the one that stores submission ``sid``)."""
        con.execute("INSERT OR REPLACE INTO private_queue VALUES (?, ?, ?)", (sid, identity, text))

    def enqueue_missing(self, sid: int, identity: str, text: str) -> bool:
        """Queue ``text`` for stored submission ``sid`` unless it is already queued or has a result; ``True`` when
        it was queued now."""
        with connect(self.path) as con, con:
            cur = con.execute(
                "INSERT INTO private_queue SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM submissions WHERE id = ?) "
                "AND NOT EXISTS (SELECT 1 FROM private_queue WHERE submission_id = ?) "
                "AND NOT EXISTS (SELECT 1 FROM private_reports WHERE submission_id = ?)",
                (sid, identity, text, sid, sid, sid),
            )
            return cur.rowcount > 0

    def orphans(self) -> list[int]:
        """Stored submissions with neither a private result nor a queued text (none, unless the store was written
        before the queue row joined the submission's transaction): they can never reach the Ladder."""
        with connect(self.path) as con:
            rows = con.execute(
                "SELECT id FROM submissions WHERE id NOT IN (SELECT submission_id FROM private_reports) "
                "AND id NOT IN (SELECT submission_id FROM private_queue) ORDER BY id"
            ).fetchall()
        return [int(r[0]) for r in rows]

    def pending(self) -> list[tuple[int, str, str]]:
        """Queued (submission id, identity, text), oldest first."""
        with connect(self.path) as con:
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
        with connect(self.path) as con, con:
            con.execute("BEGIN IMMEDIATE")
            if con.execute("SELECT 1 FROM submissions WHERE id = ?", (sid,)).fetchone() is None:
                return  # deleted meanwhile
            con.execute(
                "INSERT OR REPLACE INTO private_reports VALUES (?, ?, ?, ?, ?)",
                (sid, identity, status, scored, json.dumps(report)),
            )
            con.execute("DELETE FROM private_item_scores WHERE submission_id = ?", (sid,))
            con.executemany(
                f"INSERT INTO private_item_scores (submission_id, {', '.join(ITEM_FIELDS)}) "
                f"VALUES (?, {', '.join('?' * len(ITEM_FIELDS))})",
                rows,
            )
            con.execute("DELETE FROM private_queue WHERE submission_id = ?", (sid,))

    def results(self) -> list[PrivateResult]:
        """Every private result, by submission id."""
        with connect(self.path) as con:
            rows = con.execute(
                "SELECT submission_id, identity, status, report FROM private_reports ORDER BY submission_id"
            ).fetchall()
        out = []
        for sid, identity, status, report in rows:
            data = json.loads(report)
            acc = data.get("accuracy") if status == "scored" else None
            out.append(PrivateResult(int(sid), str(identity), str(status), None if acc is None else float(acc), data))
        return out

    def item_scores(self, sid: int) -> list[dict[str, Any]]:
        """Per-item private scores of one submission (maintainers' side only)."""
        with connect(self.path) as con:
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

    def __init__(
        self, scores: PrivateScores, evaluate: Callable[[str], Any], mirror: Callable[[], Any] | None = None
    ) -> None:
        self.scores, self._evaluate, self._mirror = scores, evaluate, mirror or (lambda: None)
        self._queue: queue.Queue[tuple[int, str, str] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: The submit handlers at work (:class:`.quiet.PublicActivity`, set by :func:`.quiet.quiet_answers`): a
        #: file's private part is started only when none is, so it never delays an answer.
        self.activity: Any = None

    def start(self, sid: int, identity: str, text: str) -> None:
        """Score an accepted file whose queue row was stored with the submission (``SubmissionStore.add(also=
        PrivateScores.enqueue_in)``), so a crash before or during scoring leaves it to :meth:`resume`; the mirror
        keeps the text too while it waits (a Space without a persistent disk restores it from there)."""
        mirror = self._mirror()
        if mirror is not None and hasattr(mirror, "save_pending"):
            mirror.save_pending(sid, identity, text)
        self._put((sid, identity, text))

    def ensure(self, sid: int, identity: str, text: str) -> bool:
        """On a retry answered from the store: queue the private part if it is neither scored nor queued."""
        if not self.scores.enqueue_missing(sid, identity, text):
            return False
        logger.warning("private part of submission %s was missing; queued from the retry", sid)
        self._put((sid, identity, text))
        return True

    def resume(self) -> int:
        """Queue what a previous process left unscored; returns how many. Logs, as an error, stored submissions
        whose private part can never be scored (:meth:`PrivateScores.orphans`)."""
        pending = self.scores.pending()
        for job in pending:
            self._put(job)
        lost = self.scores.orphans()
        if lost:
            logger.error(
                "submission(s) %s have no private part stored (stored before there was a private part, or "
                "by a version that queued it after the submission's transaction): they are not on the "
                "Ladder until a retry with their submission key queues it",
                ", ".join(f"#{s}" for s in lost),
            )
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
                if self.activity is not None:
                    self.activity.wait_idle()
                self._score(*job)
            finally:
                self._queue.task_done()

    def _score(self, sid: int, identity: str, text: str) -> None:
        from .identity import SubmissionError
        from .scoring_pool import PoolClosed

        try:
            done = self._evaluate(text)
            status, report, items = "scored", done.report, done.items
        except PoolClosed:  # the Space is stopping: no verdict; the queue row stays for the next start to resume
            logger.info("private part of submission %s: scoring stopped with the Space; it stays queued", sid)
            return
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
