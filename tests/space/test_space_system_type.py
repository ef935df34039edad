"""``submissions.system_type`` as a column: migration and backfill of databases of the previous version, validation
in ``add``, the filter of ``submissions``, the scorer's human runs, and the Hub mirror's old files."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio")

from helpers.space_fixtures import FORM

#: The submissions schema of the version before ``system_type`` was a column, verbatim.
PREVIOUS_SCHEMA = """
CREATE TABLE submissions (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, origin TEXT NOT NULL,
    system TEXT NOT NULL, submitter TEXT NOT NULL, agent TEXT NOT NULL, model TEXT NOT NULL, contact TEXT NOT NULL,
    models_used TEXT NOT NULL, training_data TEXT NOT NULL, compute TEXT NOT NULL, mode TEXT NOT NULL,
    metric_version TEXT NOT NULL, file_sha256 TEXT NOT NULL, report TEXT NOT NULL, content_sha256 TEXT,
    idem_key TEXT);
CREATE TABLE item_scores (submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    item_id TEXT NOT NULL, score REAL, correct INTEGER, anls REAL, page_f1 REAL, doc_f1 REAL, steps INTEGER,
    error TEXT, source TEXT, missing INTEGER NOT NULL, PRIMARY KEY (submission_id, item_id));
CREATE TABLE accepted_events (submission_id INTEGER PRIMARY KEY REFERENCES submissions(id) ON DELETE CASCADE,
    identity TEXT NOT NULL, at REAL NOT NULL);
"""
REPORT = {"mode": "anls", "metric_version": "v1", "accuracy": 0.5, "n": 2, "n_predicted": 2}
ITEM = {
    "id": "q1",
    "score": 1.0,
    "correct": True,
    "anls": 1.0,
    "page_f1": None,
    "doc_f1": None,
    "steps": 1,
    "error": None,
    "source": None,
    "missing": False,
}


def _previous_db(path: Path, reports: list[str]) -> None:
    with sqlite3.connect(path) as con:
        con.executescript(PREVIOUS_SCHEMA)
        for i, report in enumerate(reports, 1):
            con.execute(
                "INSERT INTO submissions VALUES (?, '2025-01-01 00:00:00', 'user', ?, 'bob', 'a', 'm', 'c', "
                "'m', 'none', '1h', 'anls', 'v1', ?, ?, ?, NULL)",
                (i, f"sys{i}", f"f{i}", report, f"c{i}"),
            )
            con.execute(
                "INSERT INTO item_scores (submission_id, item_id, score, missing) VALUES (?, 'q1', 0.5, 0)", (i,)
            )


def _dump(path: Path) -> tuple[list[Any], list[Any]]:
    """Every column of the previous version, both tables (what the migration must leave as it was); the columns
    the migration adds (``system_type``, the optional form fields such as ``traces``, ``cost``) are left out."""
    from madqa.space.storage import OPTIONAL_FORM_FIELDS

    with sqlite3.connect(path) as con:
        added = ("system_type", *OPTIONAL_FORM_FIELDS, "cost")
        old = [r[1] for r in con.execute("PRAGMA table_info(submissions)") if r[1] not in added]
        subs = con.execute(f"SELECT {', '.join(old)} FROM submissions ORDER BY id").fetchall()
        return subs, con.execute("SELECT * FROM item_scores ORDER BY submission_id").fetchall()


def _columns(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as con:
        return [(r[1], r[2]) for r in con.execute("PRAGMA table_info(submissions)")]


def _fresh(tmp_path: Path) -> Path:
    from madqa.space.storage import SubmissionStore

    path = tmp_path / "fresh.sqlite"
    SubmissionStore(path)
    return path


def test_a_new_database_has_every_column_and_needs_no_migration(tmp_path: Path, caplog) -> None:
    from madqa.space.storage import _ADDED_COLUMNS, OPTIONAL_FORM_FIELDS, SubmissionStore

    path = tmp_path / "new.sqlite"
    with caplog.at_level(logging.INFO, logger="madqa.space.storage"):
        store = SubmissionStore(path)
    assert "migrated" not in caplog.text
    names = [name for name, _ in _columns(path)]
    assert {"system_type", "content_sha256", "idem_key", *OPTIONAL_FORM_FIELDS} <= set(names)
    assert names[-len(_ADDED_COLUMNS) :] == list(_ADDED_COLUMNS)  # where ALTER TABLE puts them on an old file
    sid = store.add(FORM, REPORT, [ITEM], created="2025-01-01 00:00:00", origin="user", file_sha256="f")
    assert [s.id for s in store.submissions()] == [sid]


def test_a_previous_database_gets_the_column_backfilled_from_reports(tmp_path: Path, caplog) -> None:
    from madqa.space.leaderboard import board_frame
    from madqa.space.storage import SubmissionStore

    path = tmp_path / "old.sqlite"
    _previous_db(
        path,
        [
            json.dumps({**REPORT, "system_type": "human"}),
            json.dumps(REPORT),
            json.dumps({**REPORT, "system_type": "agent"}),
        ],
    )
    before = _dump(path)
    with caplog.at_level(logging.INFO, logger="madqa.space.storage"):
        store = SubmissionStore(path)
    assert "added submissions.system_type" in caplog.text
    assert "added submissions.traces" in caplog.text
    assert _columns(path) == _columns(_fresh(tmp_path))  # migrated: the columns of a new file, in its order
    assert "system_type from the reports of 3 rows: 1 human, 2 agent" in caplog.text
    assert [s.system_type for s in store.submissions()] == ["human", "agent", "agent"]
    assert _dump(path) == before  # nothing else changed
    board = board_frame(store.submissions())
    assert dict(zip(board["System"], board["Type"], strict=True)) == {
        "sys1": "human",
        "sys2": "agent",
        "sys3": "agent",
    }
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="madqa.space.storage"):
        again = SubmissionStore(path)  # idempotent: nothing left to migrate
    assert "migrated" not in caplog.text
    assert [s.system_type for s in again.submissions()] == ["human", "agent", "agent"]
    assert _dump(path) == before


def test_a_malformed_report_does_not_stop_the_migration(tmp_path: Path) -> None:
    from madqa.space.storage import SubmissionStore

    path = tmp_path / "old.sqlite"
    _previous_db(path, ["{not json", json.dumps({**REPORT, "system_type": "human"})])
    SubmissionStore(path)
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT system_type FROM submissions ORDER BY id").fetchall() == [("agent",), ("human",)]


def test_add_writes_and_validates_the_system_type(tmp_path: Path) -> None:
    from madqa.space.storage import SubmissionStore

    store = SubmissionStore(tmp_path / "db.sqlite")
    with pytest.raises(ValueError, match="unknown system_type 'robot'"):
        store.add(FORM, REPORT, [ITEM], created="now", origin="user", file_sha256="x", system_type="robot")
    assert store.count() == 0 and store.count_items() == 0
    h = store.add(FORM, REPORT, [ITEM], created="now", origin="user", file_sha256="h", system_type="human")
    a = store.add(FORM, REPORT, [ITEM], created="now", origin="user", file_sha256="a")  # default: agent
    assert [(s.id, s.system_type) for s in store.submissions()] == [(h, "human"), (a, "agent")]
    with sqlite3.connect(store.path) as con:
        assert con.execute("SELECT system_type FROM submissions ORDER BY id").fetchall() == [("human",), ("agent",)]


def test_submissions_filter_by_system_type(tmp_path: Path) -> None:
    from madqa.space.storage import SubmissionStore

    store = SubmissionStore(tmp_path / "db.sqlite")
    ids = [
        store.add(FORM, REPORT, [ITEM], created="now", origin="user", file_sha256=f"f{i}", system_type=kind)
        for i, kind in enumerate(("human", "agent", "human"))
    ]
    assert [s.id for s in store.submissions(system_type="human")] == [ids[0], ids[2]]
    assert [s.id for s in store.submissions(system_type="agent")] == [ids[1]]
    assert [s.id for s in store.submissions(ids[2], system_type="human")] == [ids[2]]
    assert store.submissions(ids[1], system_type="human") == []
    assert len(store.submissions()) == 3
    with pytest.raises(ValueError, match="unknown system_type"):
        store.submissions(system_type="Human")


def test_scorer_stores_the_computed_type_in_the_column_and_the_report(layout, tmp_path: Path) -> None:
    from madqa.space.identity import clean_form
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    rows = [json.loads(x) for x in layout.test_labels.read_text(encoding="utf-8").splitlines() if x.strip()]
    store = SubmissionStore(tmp_path / "db.sqlite")
    scorer = Scorer.from_labels(layout.test_labels, store, n_resamples=5)
    human = "".join(json.dumps({"id": r["id"], "answer": ["x"], "system_type": "human"}) + "\n" for r in rows)
    acc = scorer.submit_text(human, clean_form(FORM))
    sub = store.submission(acc.id)
    assert sub is not None and sub.system_type == "human" and sub.report["system_type"] == "human"


class _Capture:
    """A :class:`~madqa.space.storage.Mirror` writing files as ``HubMirror.save`` does, without a scheduler."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def save(self, sid: int, header, items) -> None:
        from madqa.space.storage import ITEM_FIELDS

        rows = [dict(zip(ITEM_FIELDS, row, strict=True)) for row in items]
        (self.folder / f"sub-{sid:06d}.json").write_text(
            json.dumps({"id": sid, "header": dict(header), "items": rows}), encoding="utf-8"
        )


def test_mirror_files_restore_the_type_also_when_written_before_the_column(tmp_path: Path) -> None:
    from madqa.space.hub import rebuild_from_folder
    from madqa.space.storage import SubmissionStore

    folder = tmp_path / "mirror"
    folder.mkdir()
    store = SubmissionStore(tmp_path / "db.sqlite", mirror=_Capture(folder))
    for i, kind in enumerate(("human", "agent")):
        store.add(
            FORM,
            {**REPORT, "system_type": kind},
            [ITEM],
            created="now",
            origin="user",
            file_sha256=f"f{i}",
            system_type=kind,
        )
    # The mirror's header carries the column: a human run labelled "agent" in its report still restores as human.
    first = folder / "sub-000001.json"
    record = json.loads(first.read_text(encoding="utf-8"))
    assert record["header"]["system_type"] == "human"
    record["header"]["report"] = json.dumps({**REPORT, "system_type": "agent"})
    first.write_text(json.dumps(record), encoding="utf-8")
    # Files of the previous version: no system_type in the header; the report says human, or nothing at all.
    for sid, report in ((3, {**REPORT, "system_type": "human"}), (4, REPORT)):
        old = json.loads((folder / "sub-000002.json").read_text(encoding="utf-8"))
        del old["header"]["system_type"]
        old["id"], old["header"]["file_sha256"], old["header"]["report"] = sid, f"old{sid}", json.dumps(report)
        (folder / f"sub-{sid:06d}.json").write_text(json.dumps(old), encoding="utf-8")
    rebuilt = SubmissionStore(tmp_path / "rebuilt.sqlite")
    assert rebuild_from_folder(rebuilt, folder) == 4
    assert [s.system_type for s in rebuilt.submissions()] == ["human", "agent", "human", "agent"]
