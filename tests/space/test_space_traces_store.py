"""A submission's traces URL end to end (issue 42): the form field is stored with the submission (a refused URL
stores nothing), a database of the previous versions opens with its rows and gains the column, the Hub mirror
keeps the field, and the board's data (the API's export) carries it (the launched Space's API:
``test_space_traces_api.py``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio")

import helpers.space_fixtures as space_fixtures  # noqa: E402
from helpers.space_fixtures import FORM, gold, results  # noqa: E402

from madqa.space.traces_link import TRACES_LABEL  # noqa: E402

#: The shared ``scorer`` fixture, made visible to pytest in this module.
scorer_fixture = space_fixtures.scorer_fixture
DATASET = "https://huggingface.co/datasets/me/madqa-traces"
BUCKET = "https://hf.co/buckets/me/traces/bm25"
REFUSED = f"form: the field '{TRACES_LABEL}' must be a Hugging Face dataset or bucket URL"

_ITEMS = """CREATE TABLE item_scores (submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    item_id TEXT NOT NULL, score REAL, correct INTEGER, anls REAL, page_f1 REAL, doc_f1 REAL, steps INTEGER,
    error TEXT, source TEXT, missing INTEGER NOT NULL, PRIMARY KEY (submission_id, item_id));"""
_FORM_COLUMNS = """system TEXT NOT NULL, submitter TEXT NOT NULL, agent TEXT NOT NULL, model TEXT NOT NULL,
    contact TEXT NOT NULL, models_used TEXT NOT NULL, training_data TEXT NOT NULL, compute TEXT NOT NULL"""
#: The schemas of earlier releases, verbatim: the first one, and the one just before the traces column.
OLD_SCHEMAS = {
    "first release": f"""
CREATE TABLE submissions (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, origin TEXT NOT NULL,
    {_FORM_COLUMNS}, mode TEXT NOT NULL, metric_version TEXT NOT NULL, file_sha256 TEXT NOT NULL,
    report TEXT NOT NULL);
{_ITEMS}""",
    "before traces": f"""
CREATE TABLE submissions (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, origin TEXT NOT NULL,
    {_FORM_COLUMNS}, mode TEXT NOT NULL, metric_version TEXT NOT NULL, file_sha256 TEXT NOT NULL, report TEXT NOT NULL,
    content_sha256 TEXT, idem_key TEXT, system_type TEXT);
{_ITEMS}
CREATE TABLE accepted_events (submission_id INTEGER PRIMARY KEY REFERENCES submissions(id) ON DELETE CASCADE,
    identity TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX accepted_events_identity ON accepted_events(identity, at);""",
}


def _write(tmp_path: Path, text: str, name: str = "results.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_form_field_is_stored_and_a_refused_url_stores_nothing(scorer, layout, tmp_path: Path) -> None:
    from madqa.space.board_tab import board_data
    from madqa.space.submission import SubmissionError

    rows = gold(layout)
    for n, bad in enumerate(["javascript:alert(1)", "https://huggingface.co@evil.com/datasets/a/b", "http://x.y/z"]):
        with pytest.raises(SubmissionError) as info:
            scorer.submit(_write(tmp_path, results(rows, 2 + n)), {**FORM, "traces": bad})
        assert str(info.value).startswith(REFUSED), info.value
    assert scorer.store.count() == 0  # refused before scoring: nothing stored
    first = scorer.submit(_write(tmp_path, results(rows, 2)), {**FORM, "traces": DATASET + "/"}).id
    second = scorer.submit(_write(tmp_path, results(rows, 3)), {**FORM, "system": "no traces"}).id
    assert scorer.store.submission(first).form["traces"] == DATASET  # stored as checked (no trailing slash)
    assert scorer.store.submission(second).form["traces"] == ""
    with sqlite3.connect(scorer.store.path) as con:  # not given: NULL, as on the rows of older databases
        assert con.execute("SELECT id, traces FROM submissions ORDER BY id").fetchall() == [
            (first, DATASET),
            (second, None),
        ]
    data = board_data(scorer.store)  # what the API's /refresh and /search export
    column = data["headers"].index("Traces")
    ids = data["headers"].index("#")
    assert {row[ids]: row[column] for row in data["data"]} == {first: DATASET, second: ""}


@pytest.mark.parametrize("schema", sorted(OLD_SCHEMAS))
def test_an_older_database_opens_keeps_its_rows_and_gains_the_column(
    schema: str, scorer, layout, tmp_path: Path
) -> None:
    from madqa.space.leaderboard import board_frame
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer, clean_form

    rows = gold(layout)
    done = scorer.evaluate_text(results(rows, 3))
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as con:
        con.executescript(OLD_SCHEMAS[schema])
        con.execute(
            "INSERT INTO submissions (id, created, origin, system, submitter, agent, model, contact, models_used, "
            "training_data, compute, mode, metric_version, file_sha256, report) VALUES (1, '2025-01-01 00:00:00', "
            "'user', 'old sys', 'bob', 'a', 'm', 'c', 'm', 'none', '1h', 'anls', ?, 'f00', ?)",
            (done.report["metric_version"], json.dumps(done.report)),
        )
        con.executemany(
            "INSERT INTO item_scores (submission_id, item_id, score, missing) VALUES (1, ?, ?, 0)",
            [(it["id"], it["score"]) for it in done.items],
        )
    store = SubmissionStore(path)
    with sqlite3.connect(path) as con:
        assert "traces" in {r[1] for r in con.execute("PRAGMA table_info(submissions)")}
    (old,) = store.submissions()
    assert (old.id, old.form["system"], old.form["traces"]) == (1, "old sys", "")
    assert store.count_items() == len(rows)
    new = Scorer.from_labels(layout.test_labels, store, n_resamples=5)
    sid = new.submit_text(results(rows, 9), clean_form({**FORM, "traces": BUCKET})).id
    board = board_frame(SubmissionStore(path).submissions())  # opened again: the migration is done once
    assert dict(zip(board["#"], board["Traces"], strict=True)) == {1: "", sid: BUCKET}


class _Files:
    """A mirror that writes the Hub mirror's files (:meth:`madqa.space.hub.HubMirror.save`'s format)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir()

    def save(self, sid: int, header: dict[str, Any], items: list[list[Any]]) -> None:
        from madqa.space.storage import ITEM_FIELDS

        record = {"id": sid, "header": dict(header), "items": [dict(zip(ITEM_FIELDS, r, strict=True)) for r in items]}
        (self.folder / f"sub-{sid:06d}.json").write_text(json.dumps(record), encoding="utf-8")


def test_the_mirror_keeps_the_traces_and_restores_older_files(scorer, layout, tmp_path: Path) -> None:
    from madqa.space.hub import rebuild_from_folder
    from madqa.space.storage import SubmissionStore

    rows = gold(layout)
    scorer.store.mirror = _Files(tmp_path / "mirror")
    scorer.submit(_write(tmp_path, results(rows, 2)), {**FORM, "traces": DATASET})
    scorer.submit(_write(tmp_path, results(rows, 3)), {**FORM, "system": "older file"})
    older = tmp_path / "mirror" / "sub-000002.json"
    record = json.loads(older.read_text(encoding="utf-8"))
    assert record["header"]["traces"] is None
    del record["header"]["traces"]  # a file mirrored before the column existed
    older.write_text(json.dumps(record), encoding="utf-8")
    restored = SubmissionStore(tmp_path / "restored.sqlite")
    assert rebuild_from_folder(restored, tmp_path / "mirror") == 2
    assert [s.form["traces"] for s in restored.submissions()] == [DATASET, ""]
