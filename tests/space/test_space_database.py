"""The submissions database: private file modes (also with umask 0), migration of the previous schema, and
``python -m madqa.space.storage verify`` marking a row verified on the board."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

pytest.importorskip("gradio")

import helpers.space_fixtures as space_fixtures
from helpers.space_fixtures import FORM, Clock, gold, results

#: The shared ``scorer`` fixture, made visible to pytest in this module.
scorer_fixture = space_fixtures.scorer_fixture


# --- storage: modes, migration, verification --------------------------------------------------------------------


def _modes(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir() if p.name.startswith("db.sqlite")}


def test_database_files_are_private_even_with_umask_0(scorer, layout, tmp_path: Path) -> None:
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import clean_form

    old = os.umask(0)
    try:
        store = SubmissionStore(tmp_path / "new" / "db.sqlite")
        reader = sqlite3.connect(store.path)  # keeps -wal and -shm alive
        reader.execute("SELECT COUNT(*) FROM submissions").fetchall()
        done = scorer.evaluate_text(results(gold(layout), 2))
        report, items = done.report, done.items
        store.add(clean_form(FORM), report, items, created="now", origin="user", file_sha256="x")
        modes = _modes(store.path.parent)
    finally:
        os.umask(old)
    try:
        assert set(modes) == {"db.sqlite", "db.sqlite-wal", "db.sqlite-shm"} and set(modes.values()) == {0o600}, modes
        for name in list(modes):  # files of an older version, world-readable: fixed at open
            os.chmod(store.path.parent / name, 0o644)
        SubmissionStore(store.path)
        assert _modes(store.path.parent) == dict.fromkeys(modes, 0o600)
    finally:
        reader.close()


#: The schema of the previous release, verbatim (no content_sha256 / idem_key, no accepted_events).
OLD_SCHEMA = """
CREATE TABLE submissions (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, origin TEXT NOT NULL,
    system TEXT NOT NULL, submitter TEXT NOT NULL, agent TEXT NOT NULL, model TEXT NOT NULL, contact TEXT NOT NULL,
    models_used TEXT NOT NULL, training_data TEXT NOT NULL, compute TEXT NOT NULL, mode TEXT NOT NULL,
    metric_version TEXT NOT NULL, file_sha256 TEXT NOT NULL, report TEXT NOT NULL);
CREATE TABLE item_scores (submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    item_id TEXT NOT NULL, score REAL, correct INTEGER, anls REAL, page_f1 REAL, doc_f1 REAL, steps INTEGER,
    error TEXT, source TEXT, missing INTEGER NOT NULL, PRIMARY KEY (submission_id, item_id));
"""


def test_a_database_of_the_previous_version_opens_and_keeps_its_rows(scorer, layout, tmp_path: Path) -> None:
    from madqa.space.leaderboard import board_frame
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import RateLimiter, Scorer, SubmissionError, clean_form

    rows = gold(layout)
    done = scorer.evaluate_text(results(rows, 3))
    report, items = done.report, done.items
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as con:
        con.executescript(OLD_SCHEMA)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(
            "INSERT INTO submissions VALUES (1, '2025-01-01 00:00:00', 'user', 'old sys', 'bob', 'a', 'm', "
            "'c', 'm', 'none', '1h', 'anls', ?, 'f00', ?)",
            (report["metric_version"], json.dumps(report)),
        )
        con.executemany(
            "INSERT INTO item_scores (submission_id, item_id, score, missing) VALUES (1, ?, ?, 0)",
            [(it["id"], it["score"]) for it in items],
        )
    os.chmod(path, 0o644)
    store = SubmissionStore(path)
    assert store.count() == 1 and store.count_items() == len(rows) and stat.S_IMODE(path.stat().st_mode) == 0o600
    board = board_frame(store.submissions())
    assert list(board["System"]) == ["old sys"] and list(board["Origin"]) == ["self-reported"]
    new = Scorer.from_labels(layout.test_labels, store, n_resamples=5)
    limiter = RateLimiter(5, 60, clock=Clock())
    acc = new.submit_text(results(rows, 9), clean_form(FORM), identity="ip:a", key="k", limiter=limiter)
    assert (
        acc.id == 2
        and new.submit_text(results(rows, 9), clean_form(FORM), identity="ip:a", key="k", limiter=limiter).replayed
    )
    with pytest.raises(SubmissionError, match="already submitted as #2"):
        new.submit_text(results(rows, 9), clean_form(FORM), identity="ip:b")


def test_verify_marks_the_origin_and_the_board_shows_it(scorer, layout, tmp_path: Path, capsys) -> None:
    from madqa.space.leaderboard import board_frame
    from madqa.space.storage import main
    from madqa.space.submission import clean_form

    rows = gold(layout)
    sid = scorer.submit_text(results(rows, 8), clean_form(FORM)).id
    scorer.submit_text(results(rows, 1), clean_form({**FORM, "system": "Baseline: x"}, maintainer=True), origin="seed")
    assert main(["verify", str(sid), "--db", str(scorer.store.path)]) == 0
    assert "verified" in capsys.readouterr().out
    board = board_frame(scorer.store.submissions())
    origins = dict(zip(board["System"], board["Origin"], strict=True))
    assert origins == {"sys": "verified", "Baseline: x": "maintainer baseline"}
    assert main(["verify", str(sid), "--undo", "--db", str(scorer.store.path)]) == 0
    assert scorer.store.submission(sid).origin == "user"
    with pytest.raises(SystemExit) as info:
        main(["verify", "999", "--db", str(scorer.store.path)])
    assert info.value.code == 2
    with pytest.raises(ValueError, match="unknown origin"):
        scorer.store.set_origin(sid, "trusted")
