"""Where submissions live: an embedded SQLite store (WAL, one transaction per submission) and an optional Hub mirror.

This is the only module of the Space that talks to the Hugging Face Hub. Nothing is contacted at import or when
no token and repo are configured; the ``CommitScheduler`` is built lazily on the first accepted submission.

Tables: ``submissions`` (one row per accepted submission: form fields, the metric's report without per-item data)
and ``item_scores`` (one row per gold item of a submission: scores only, never gold answers).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: Form fields stored with every submission (``contact`` is stored but never shown on the board).
FORM_FIELDS: tuple[str, ...] = (
    "system", "submitter", "agent", "model", "contact", "models_used", "training_data", "compute",
)  # fmt: skip

_ITEM_FIELDS: tuple[str, ...] = (
    "item_id", "score", "correct", "anls", "page_f1", "doc_f1", "steps", "error", "source", "missing",
)  # fmt: skip

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    origin TEXT NOT NULL,
    {", ".join(f"{name} TEXT NOT NULL" for name in FORM_FIELDS)},
    mode TEXT NOT NULL,
    metric_version TEXT NOT NULL,
    file_sha256 TEXT NOT NULL,
    report TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS item_scores (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    item_id TEXT NOT NULL, score REAL, correct INTEGER, anls REAL, page_f1 REAL, doc_f1 REAL, steps INTEGER,
    error TEXT, source TEXT, missing INTEGER NOT NULL,
    PRIMARY KEY (submission_id, item_id)
);
"""


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


class SubmissionStore:
    """SQLite-backed store; safe to share between the server's worker threads.

    Args:
        path: the database file (its folder is created).
        mirror: optional :class:`HubMirror` receiving every accepted submission.
    """

    def __init__(self, path: str | Path, mirror: HubMirror | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.mirror = mirror
        self._lock = threading.Lock()
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=30.0)
        try:
            con.execute("PRAGMA foreign_keys=ON")
            yield con
        finally:
            con.close()

    def add(
        self,
        form: Mapping[str, str],
        report: Mapping[str, Any],
        items: Sequence[Mapping[str, Any]],
        *,
        created: str,
        origin: str,
        file_sha256: str,
    ) -> int:
        """Store one submission and its per-item scores in a single transaction; returns its id."""
        summary = {k: v for k, v in report.items() if k != "items"}
        values = [created, origin, *[str(form.get(k, "")) for k in FORM_FIELDS], str(report["mode"]),
                  str(report["metric_version"]), file_sha256, json.dumps(summary)]  # fmt: skip
        columns = ["created", "origin", *FORM_FIELDS, "mode", "metric_version", "file_sha256", "report"]
        rows = [
            (it["id"], it["score"], None if it["correct"] is None else int(it["correct"]), it["anls"], it["page_f1"],
             it["doc_f1"], it["steps"], it["error"], it["source"], int(bool(it["missing"])))
            for it in items
        ]  # fmt: skip
        with self._lock, self._connect() as con:
            with con:  # one transaction: both tables or nothing
                cur = con.execute(
                    f"INSERT INTO submissions ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values
                )
                sid = int(cur.lastrowid or 0)
                con.executemany(
                    f"INSERT INTO item_scores (submission_id, {', '.join(_ITEM_FIELDS)}) "
                    f"VALUES (?, {', '.join('?' * len(_ITEM_FIELDS))})",
                    [(sid, *row) for row in rows],
                )
        if self.mirror is not None:
            self.mirror.save(sid, dict(zip(columns, values)), rows)
        return sid

    def count(self) -> int:
        """Number of stored submissions."""
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM submissions").fetchone()[0])

    def count_items(self) -> int:
        """Number of stored per-item rows (all submissions)."""
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM item_scores").fetchone()[0])

    def submissions(self) -> list[StoredSubmission]:
        """All submissions, oldest first."""
        with self._connect() as con:
            con.row_factory = sqlite3.Row
            rows = con.execute("SELECT * FROM submissions ORDER BY id").fetchall()
        return [
            StoredSubmission(
                id=int(r["id"]), created=r["created"], origin=r["origin"], form={k: r[k] for k in FORM_FIELDS},
                mode=r["mode"], metric_version=r["metric_version"], report=json.loads(r["report"]),
            )
            for r in rows
        ]  # fmt: skip

    def item_scores(self, submission_id: int) -> list[dict[str, Any]]:
        """Per-item scores of one submission, in stored (gold) order."""
        with self._connect() as con:
            con.row_factory = sqlite3.Row
            rows = con.execute(
                "SELECT * FROM item_scores WHERE submission_id = ? ORDER BY rowid", (submission_id,)
            ).fetchall()
        return [dict(r) for r in rows]


class HubMirror:
    """Mirror accepted submissions to a Hub dataset: one JSON file per submission, pushed by a ``CommitScheduler``.

    Files are written locally first (``folder``); the scheduler is created on the first save, so constructing a
    mirror never touches the network. ``api`` lets tests pass a fake ``HfApi``.
    """

    def __init__(self, repo_id: str, token: str | None, folder: Path, *, every_min: float = 5, api: Any = None):
        self.repo_id, self.token, self.folder, self.every_min, self.api = repo_id, token, Path(folder), every_min, api
        self.folder.mkdir(parents=True, exist_ok=True)
        self._scheduler: Any = None
        self._lock = threading.Lock()

    def _get_scheduler(self) -> Any:
        if self._scheduler is None:
            from huggingface_hub import CommitScheduler

            self._scheduler = CommitScheduler(
                repo_id=self.repo_id, repo_type="dataset", folder_path=self.folder, path_in_repo="submissions",
                every=self.every_min, private=True, token=self.token, allow_patterns=["*.json"], hf_api=self.api,
            )  # fmt: skip
        return self._scheduler

    def save(self, sid: int, header: Mapping[str, Any], items: Sequence[Sequence[Any]]) -> None:
        """Write one submission file; push errors are logged, never raised to the submitter."""
        record = {"id": sid, "header": dict(header), "items": [dict(zip(_ITEM_FIELDS, row)) for row in items]}
        try:
            with self._lock:
                scheduler = self._get_scheduler()
                with scheduler.lock:
                    (self.folder / f"sub-{sid:06d}.json").write_text(json.dumps(record), encoding="utf-8")
        except Exception as exc:  # noqa: BLE001 - the local store already holds the submission
            logger.warning("could not mirror submission %s to %s: %s", sid, self.repo_id, exc)

    def stop(self) -> None:
        """Stop the background scheduler (tests)."""
        if self._scheduler is not None:
            self._scheduler.stop()


def rebuild_from_folder(store: SubmissionStore, folder: Path) -> int:
    """Re-insert mirrored submission files (e.g. a downloaded Hub snapshot) into an empty store; returns the count."""
    added = 0
    for path in sorted(Path(folder).glob("sub-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        header = record["header"]
        report = json.loads(header["report"])
        items = [{**it, "id": it["item_id"]} for it in record["items"]]
        form = {k: header.get(k, "") for k in FORM_FIELDS}
        store.add(form, report, items, created=header["created"], origin=header["origin"],
                  file_sha256=header["file_sha256"])  # fmt: skip
        added += 1
    return added


def restore_from_hub(store: SubmissionStore, repo_id: str, token: str | None, folder: Path) -> int:
    """Rebuild an empty store from the mirror dataset (``submissions/sub-*.json``); returns the count restored."""
    if store.count():
        return 0
    from huggingface_hub import snapshot_download

    local = Path(snapshot_download(repo_id, repo_type="dataset", token=token, local_dir=folder,
                                   allow_patterns=["submissions/sub-*.json"]))  # fmt: skip
    return rebuild_from_folder(store, local / "submissions")


def download_labels(repo_id: str, token: str | None, target_dir: Path) -> Path:
    """Fetch ``test_labels.jsonl`` from a private Hub dataset into ``target_dir`` (outside the Space folder)."""
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(repo_id, "test_labels.jsonl", repo_type="dataset", token=token, local_dir=target_dir))
