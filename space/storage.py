"""Where submissions live: an embedded SQLite store (WAL, one transaction per submission).

The optional Hub mirror and the labels download are in :mod:`.hub`, the only module of the Space that talks to the
Hugging Face Hub.

Tables: ``submissions`` (one row per accepted submission: form fields, origin, the metric's report without per-item
data), ``item_scores`` (one row per gold item of a submission: scores only, never gold answers) and
``accepted_events`` (who submitted when: the persisted rate-limit window; rejected files never appear).

Guards that must hold under concurrency run *inside* the transaction that stores a submission (``BEGIN IMMEDIATE``
takes SQLite's write lock first): a known idempotency key, a duplicate file (same sha256 of the text or of its
canonical content) and the rate limit. The same checks run read-only before scoring (:meth:`SubmissionStore.
precheck`) so that a refused submission costs no scoring.

The database file and its ``-wal``/``-shm`` files are private (0600): it holds the submitters' contacts. SQLite
creates the side files with the database file's mode, and :class:`SubmissionStore` fixes older files at open.
Databases of the previous versions (no ``content_sha256``/``idem_key``/``system_type``/``traces``/``cost`` columns, no
events table) are migrated in place at open; ``system_type`` of older rows is backfilled from their stored report,
their ``traces`` stays NULL (read back as ``""``: no traces given), and so does their ``cost`` (the file's inference
cost, :func:`madqa.metric.board_cost.submission_cost`, JSON; read back as ``None``: the board shows "n/a").
``python -m madqa.space.storage verify ID`` marks a row as verified by the maintainers.
"""

from __future__ import annotations

import argparse
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .privacy import make_private
from .refusals import DuplicateFile, KeyReplay, RateLimited, RateRule

logger = logging.getLogger(__name__)

#: Stored origin code → what the board shows. ``seed``: computed by the maintainers; ``verified``: a user submission
#: the maintainers re-ran or checked; ``user``: self-reported (the default for every upload).
ORIGINS: dict[str, str] = {"seed": "maintainer baseline", "verified": "verified", "user": "self-reported"}

#: A submission's ``system_type`` column: ``human`` (a ``madqa human`` run) or ``agent`` (everything else).
SYSTEM_TYPES: tuple[str, ...] = ("human", "agent")

#: Form fields stored with every submission (``contact`` is stored but never shown on the board).
FORM_FIELDS: tuple[str, ...] = (
    "system",
    "submitter",
    "agent",
    "model",
    "contact",
    "models_used",
    "training_data",
    "compute",
)

#: Optional form fields added after the first release: nullable columns (NULL on older rows and when not given,
#: read back as ``""``). ``traces``: where the run's traces are (:mod:`.traces_link`).
OPTIONAL_FORM_FIELDS: tuple[str, ...] = ("traces",)

#: Per-item score columns (also the fields of a mirrored submission's items).
ITEM_FIELDS: tuple[str, ...] = (
    "item_id",
    "score",
    "correct",
    "anls",
    "page_f1",
    "doc_f1",
    "steps",
    "error",
    "source",
    "missing",
)


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to the board's database (the store's and the private part's tables), foreign keys on."""
    con = sqlite3.connect(path, timeout=30.0)
    try:
        con.execute("PRAGMA foreign_keys=ON")
        yield con
    finally:
        con.close()


def item_table(name: str) -> str:
    """The DDL of a per-item score table (:data:`ITEM_FIELDS`; also the private part's, :mod:`.private_part`)."""
    return f"""CREATE TABLE IF NOT EXISTS {name} (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    item_id TEXT NOT NULL, score REAL, correct INTEGER, anls REAL, page_f1 REAL, doc_f1 REAL, steps INTEGER,
    error TEXT, source TEXT, missing INTEGER NOT NULL,
    PRIMARY KEY (submission_id, item_id)
);"""


def item_row(it: Mapping[str, Any]) -> tuple[Any, ...]:
    """One scored item (``build_report``'s ``items``) as an item-table row, in :data:`ITEM_FIELDS` order."""
    return (
        it["id"],
        it["score"],
        None if it["correct"] is None else int(it["correct"]),
        it["anls"],
        it["page_f1"],
        it["doc_f1"],
        it["steps"],
        it["error"],
        it["source"],
        int(bool(it["missing"])),
    )


#: Columns added after the first release: in the base table of a new database (so it needs no migration), added by
#: ``ALTER TABLE`` to an older one, in this order (NULL on its old rows, except ``system_type``, backfilled by
#: :data:`_BACKFILL_SYSTEM_TYPE`). Either way the columns stand in the same order.
_ADDED_COLUMNS = {
    "content_sha256": "TEXT",
    "idem_key": "TEXT",
    "system_type": "TEXT",
    **{name: "TEXT" for name in OPTIONAL_FORM_FIELDS},
    "cost": "TEXT",
}
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    origin TEXT NOT NULL,
    {", ".join(f"{name} TEXT NOT NULL" for name in FORM_FIELDS)},
    mode TEXT NOT NULL,
    metric_version TEXT NOT NULL,
    file_sha256 TEXT NOT NULL,
    report TEXT NOT NULL,
    {", ".join(f"{name} {kind}" for name, kind in _ADDED_COLUMNS.items())}
);
{item_table("item_scores")}
CREATE TABLE IF NOT EXISTS accepted_events (
    submission_id INTEGER PRIMARY KEY REFERENCES submissions(id) ON DELETE CASCADE,
    identity TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS accepted_events_identity ON accepted_events(identity, at);
"""
#: Rows stored before ``system_type`` was a column kept it in the report JSON only (human runs: ``"human"``):
#: first the human rows, then every other NULL row is an agent's. Only NULL rows change, so running both at every
#: open is a no-op once done. The CASE keeps a malformed report from failing the open (json_extract raises on it).
_BACKFILL_SYSTEM_TYPE = (
    "UPDATE submissions SET system_type = 'human' WHERE system_type IS NULL AND "
    "CASE WHEN json_valid(report) THEN json_extract(report, '$.system_type') = 'human' ELSE 0 END",
    "UPDATE submissions SET system_type = 'agent' WHERE system_type IS NULL",
)
_INDEXES = """
CREATE UNIQUE INDEX IF NOT EXISTS submissions_idem_key ON submissions(idem_key) WHERE idem_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS submissions_file_sha256 ON submissions(file_sha256);
CREATE INDEX IF NOT EXISTS submissions_content_sha256 ON submissions(content_sha256);
"""


class Mirror(Protocol):
    """Where accepted submissions are copied as well (:class:`.hub.HubMirror`); errors are its own to handle."""

    def save(self, sid: int, header: Mapping[str, Any], items: Sequence[Sequence[Any]]) -> None:
        """Copy one accepted submission (its header and per-item rows in :data:`ITEM_FIELDS` order)."""


@dataclass(frozen=True)
class StoredSubmission:
    """One accepted submission as read back (``report`` has no per-item data)."""

    id: int
    created: str
    origin: str
    form: dict[str, str]
    mode: str
    metric_version: str
    report: dict[str, Any]
    system_type: str  # one of SYSTEM_TYPES
    #: The file's inference cost (:func:`madqa.metric.board_cost.submission_cost`); ``None`` for older rows.
    cost: dict[str, Any] | None = None


class SubmissionStore:
    """SQLite-backed store; safe to share between the server's worker threads.

    Args:
        path: the database file (its folder is created).
        mirror: optional :class:`Mirror` (the Space's :class:`.hub.HubMirror`) receiving every accepted submission.
    """

    def __init__(self, path: str | Path, mirror: Mirror | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        make_private(self.path)
        self.mirror = mirror
        self._lock = threading.Lock()
        with connect(self.path) as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)
            self._migrate(con)
            con.executescript(_INDEXES)
        make_private(self.path)

    def _migrate(self, con: sqlite3.Connection) -> None:
        """Bring a database of a previous version up to date, in one transaction (all or nothing).

        The write lock is taken first, so two processes opening the same old file do not both add a column.
        """
        with con:
            con.execute("BEGIN IMMEDIATE")
            have = {r[1] for r in con.execute("PRAGMA table_info(submissions)")}
            for column, kind in _ADDED_COLUMNS.items():
                if column not in have:  # a database of the previous version: migrate in place
                    con.execute(f"ALTER TABLE submissions ADD COLUMN {column} {kind}")
                    logger.info("migrated %s: added submissions.%s", self.path, column)
            humans, agents = (con.execute(sql).rowcount for sql in _BACKFILL_SYSTEM_TYPE)
            if humans or agents:
                logger.info(
                    "migrated %s: set submissions.system_type from the reports of %d rows: %d human, %d agent",
                    self.path,
                    humans + agents,
                    humans,
                    agents,
                )

    def add(
        self,
        form: Mapping[str, str],
        report: Mapping[str, Any],
        items: Sequence[Mapping[str, Any]],
        *,
        created: str,
        origin: str,
        file_sha256: str,
        content_sha256: str | None = None,
        idem_key: str | None = None,
        rate: RateRule | None = None,
        system_type: str = "agent",
        cost: Mapping[str, Any] | None = None,
        also: Callable[[sqlite3.Connection, int], None] | None = None,
    ) -> int:
        """Store one submission and its per-item scores in a single transaction; returns its id.

        Inside that transaction, under SQLite's write lock, the guards of :meth:`precheck` run again, and the
        accepted event of ``rate.key`` is recorded, so concurrent submissions can neither exceed the rate limit
        nor store the same file or idempotency key twice.

        Args:
            also: writes more rows of this submission (given the connection and the new id) in the same
                transaction: the private part's queue entry (:meth:`.private_part.PrivateScores.enqueue_in`), so
                that a crash can never leave a stored submission without it.

        Raises:
            KeyReplay, DuplicateFile, RateLimited: a guard refused (nothing was written).
            ValueError: unknown ``origin`` or ``system_type``.

        ``cost`` (the file's inference cost, from the file alone) is stored as JSON beside the report.
        """
        if origin not in ORIGINS:
            raise ValueError(f"unknown origin {origin!r}; one of {sorted(ORIGINS)}")
        _check_system_type(system_type)
        summary = {k: v for k, v in report.items() if k != "items"}
        values = [
            created,
            origin,
            *[str(form.get(k, "")) for k in FORM_FIELDS],
            str(report["mode"]),
            str(report["metric_version"]),
            file_sha256,
            json.dumps(summary),
            content_sha256,
            idem_key,
            system_type,
            *[str(form.get(k) or "") or None for k in OPTIONAL_FORM_FIELDS],
            None if cost is None else json.dumps(dict(cost)),
        ]
        columns = [
            "created",
            "origin",
            *FORM_FIELDS,
            "mode",
            "metric_version",
            "file_sha256",
            "report",
            "content_sha256",
            "idem_key",
            "system_type",
            *OPTIONAL_FORM_FIELDS,
            "cost",
        ]
        rows = [item_row(it) for it in items]
        with self._lock, connect(self.path) as con:
            with con:  # one transaction: guards, both tables and the event, or nothing
                con.execute("BEGIN IMMEDIATE")
                self._guard(con, file_sha256, content_sha256, idem_key, rate)
                cur = con.execute(
                    f"INSERT INTO submissions ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values
                )
                sid = int(cur.lastrowid or 0)
                con.executemany(
                    f"INSERT INTO item_scores (submission_id, {', '.join(ITEM_FIELDS)}) "
                    f"VALUES (?, {', '.join('?' * len(ITEM_FIELDS))})",
                    [(sid, *row) for row in rows],
                )
                if rate is not None:
                    con.execute(
                        "INSERT INTO accepted_events (submission_id, identity, at) VALUES (?, ?, ?)",
                        (sid, rate.key, rate.now),
                    )
                if also is not None:
                    also(con, sid)
        if self.mirror is not None:
            self.mirror.save(sid, dict(zip(columns, values, strict=True)), rows)
        return sid

    @staticmethod
    def _guard(
        con: sqlite3.Connection,
        file_sha256: str | None,
        content_sha256: str | None,
        idem_key: str | None,
        rate: RateRule | None,
    ) -> None:
        if idem_key is not None:
            row = con.execute("SELECT id, file_sha256 FROM submissions WHERE idem_key = ?", (idem_key,)).fetchone()
            if row is not None:
                raise KeyReplay(int(row[0]), file_sha256 is None or row[1] == file_sha256)
        hashes = [h for h in (file_sha256, content_sha256) if h]
        if hashes:
            marks = ", ".join("?" * len(hashes))
            row = con.execute(
                f"SELECT MIN(id) FROM submissions WHERE file_sha256 IN ({marks}) OR content_sha256 IN ({marks})",
                hashes * 2,
            ).fetchone()
            if row[0] is not None:
                raise DuplicateFile(int(row[0]))
        if rate is not None and rate.limit > 0:
            since = rate.now - rate.window_s  # an event at t counts while now - t < window_s
            n, oldest = con.execute(
                "SELECT COUNT(*), MIN(at) FROM accepted_events WHERE identity = ? AND at > ?", (rate.key, since)
            ).fetchone()
            if n >= rate.limit:
                raise RateLimited(rate, float(oldest) + rate.window_s - rate.now)

    def precheck(
        self,
        *,
        file_sha256: str | None = None,
        content_sha256: str | None = None,
        idem_key: str | None = None,
        rate: RateRule | None = None,
    ) -> None:
        """The guards of :meth:`add`, read-only, before any scoring work.

        Raises:
            KeyReplay, DuplicateFile, RateLimited: what :meth:`add` would refuse now.
        """
        with connect(self.path) as con:
            self._guard(con, file_sha256, content_sha256, idem_key, rate)

    def set_origin(self, submission_id: int, origin: str) -> None:
        """Change a row's origin, e.g. to ``verified`` after the maintainers re-ran the system (see :func:`main`).

        Raises:
            ValueError: unknown origin.
            KeyError: no such submission.
        """
        if origin not in ORIGINS:
            raise ValueError(f"unknown origin {origin!r}; one of {sorted(ORIGINS)}")
        with self._lock, connect(self.path) as con:
            with con:
                cur = con.execute("UPDATE submissions SET origin = ? WHERE id = ?", (origin, submission_id))
                if cur.rowcount != 1:
                    raise KeyError(submission_id)

    def submission(self, submission_id: int) -> StoredSubmission | None:
        """One submission by id (``None`` if absent)."""
        return next((s for s in self.submissions(where=submission_id)), None)

    def count(self) -> int:
        """Number of stored submissions."""
        with connect(self.path) as con:
            return int(con.execute("SELECT COUNT(*) FROM submissions").fetchone()[0])

    def count_items(self) -> int:
        """Number of stored per-item rows (all submissions)."""
        with connect(self.path) as con:
            return int(con.execute("SELECT COUNT(*) FROM item_scores").fetchone()[0])

    def submissions(self, where: int | None = None, *, system_type: str | None = None) -> list[StoredSubmission]:
        """All submissions, oldest first (only submission ``where`` / only those of ``system_type`` when given).

        Raises:
            ValueError: ``system_type`` is not one of :data:`SYSTEM_TYPES`.
        """
        conditions: list[str] = []
        params: list[Any] = []
        if where is not None:
            conditions.append("id = ?")
            params.append(where)
        if system_type is not None:
            _check_system_type(system_type)
            conditions.append("system_type = ?")
            params.append(system_type)
        sql = "SELECT * FROM submissions" + (f" WHERE {' AND '.join(conditions)}" if conditions else "")
        with connect(self.path) as con:
            con.row_factory = sqlite3.Row
            rows = con.execute(sql + " ORDER BY id", params).fetchall()
        return [
            StoredSubmission(
                id=int(r["id"]),
                created=r["created"],
                origin=r["origin"],
                form={**{k: r[k] for k in FORM_FIELDS}, **{k: r[k] or "" for k in OPTIONAL_FORM_FIELDS}},
                mode=r["mode"],
                metric_version=r["metric_version"],
                report=json.loads(r["report"]),
                system_type=r["system_type"] or "agent",  # NULL only if written by an older process since open
                cost=json.loads(r["cost"]) if r["cost"] else None,
            )
            for r in rows
        ]

    def item_scores(self, submission_id: int) -> list[dict[str, Any]]:
        """Per-item scores of one submission, in stored (gold) order."""
        with connect(self.path) as con:
            con.row_factory = sqlite3.Row
            rows = con.execute(
                "SELECT * FROM item_scores WHERE submission_id = ? ORDER BY rowid", (submission_id,)
            ).fetchall()
        return [dict(r) for r in rows]


def _check_system_type(system_type: str) -> None:
    if system_type not in SYSTEM_TYPES:
        raise ValueError(f"unknown system_type {system_type!r}; one of {list(SYSTEM_TYPES)}")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m madqa.space.storage verify ID [--undo] [--db PATH]``: mark a submission as verified (or not).

    For the maintainers, on the machine holding the database (default: ``MADQA_SPACE_DB`` / the config's path).
    """
    parser = argparse.ArgumentParser(prog="python -m madqa.space.storage")
    sub = parser.add_subparsers(dest="command", required=True)
    verify = sub.add_parser("verify", help="mark a submission as verified by the maintainers")
    verify.add_argument("id", type=int)
    verify.add_argument("--undo", action="store_true", help="back to self-reported")
    verify.add_argument("--db", help="the SQLite file (default: from the Space's environment)")
    args = parser.parse_args(argv)
    if args.db is None:
        from .config import SpaceConfig

        args.db = SpaceConfig.from_env().db_path
    store = SubmissionStore(args.db)
    try:
        store.set_origin(args.id, "user" if args.undo else "verified")
    except KeyError:
        parser.exit(2, f"no submission #{args.id} in {args.db}\n")
    print(f"submission #{args.id}: {ORIGINS['user' if args.undo else 'verified']}")  # the CLI's one result line
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
