"""A damaged board database at start-up (issue 23, defect 6): garbage, a truncated file, an index that no longer
matches its table (``quick_check`` passes it), a b-tree page overwritten. Each is moved aside (kept, 0600) and the
board is restored from a local fake Hub mirror, or, with no mirror, the Space serves the configuration page saying
where the copy is, and ``madqa space`` fails with one line and exit status 2 (no traceback)."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio")

import helpers.space_fixtures as space_fixtures
from helpers.space_fixtures import FORM, gold, results

#: The shared ``scorer`` fixture, made visible to pytest in this module.
scorer_fixture = space_fixtures.scorer_fixture

DAMAGES = ("garbage", "truncated", "index", "page")


def _integrity(path: Path, pragma: str = "integrity_check") -> list[Any]:
    con = sqlite3.connect(path)
    try:
        return con.execute(f"PRAGMA {pragma}").fetchall()
    finally:
        con.close()


def _opens(path: Path) -> bool:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] > 0
    except sqlite3.DatabaseError:
        return False
    finally:
        con.close()


def damage(board: Path, target: Path, kind: str) -> bytes:
    """A damaged copy of the board ``board`` at ``target``; its bytes."""
    work = target.with_name("work.sqlite")
    shutil.copy(board, work)
    con = sqlite3.connect(work)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    sha = con.execute("SELECT file_sha256 FROM submissions").fetchone()[0]
    con.close()
    data = work.read_bytes()
    work.unlink()
    if kind == "garbage":
        out = b"this is not an SQLite database\n" * 64
    elif kind == "truncated":
        out = data[: len(data) // 3]
    elif kind == "index":  # one character of a stored value changed: the index no longer matches the table
        at = data.index(sha.encode())
        out = data[:at] + (b"0" if data[at : at + 1] != b"0" else b"1") + data[at + 1 :]
    else:  # bytes in the middle of a b-tree page overwritten: the first page where that opens but is damaged
        for page in range(1, len(data) // 4096):
            mid = page * 4096 + 2048
            out = data[:mid] + b"\xff" * 512 + data[mid + 512 :]
            target.write_bytes(out)
            if _opens(target) and _integrity(target) != [("ok",)]:
                break
        else:
            raise AssertionError("no page of the board could be damaged that way")
    target.write_bytes(out)
    target.chmod(0o600)
    assert _integrity(target) != [("ok",)] if kind in ("index", "page") else True
    if kind == "index":
        assert _opens(target) and _integrity(target, "quick_check") == [("ok",)]  # why integrity_check
    return out


@pytest.fixture(name="board")
def board_fixture(scorer, layout, tmp_path: Path) -> tuple[Path, Path]:
    """A board with one accepted submission, and the folder of its mirror files (the fake Hub repo's contents)."""
    from madqa.space.hub import HubMirror
    from madqa.space.submission import clean_form

    mirror = HubMirror("me/subs", None, tmp_path / "hub" / "submissions")
    mirror._scheduler = type("NoPush", (), {"lock": threading.Lock()})()  # local files only
    scorer.store.mirror = mirror
    scorer.submit_text(results(gold(layout), 4), clean_form(FORM))
    return scorer.store.path, tmp_path / "hub"


def _env(built_home: Path, db: Path, **extra: str) -> dict[str, str]:
    return {"MADQA_HOME": str(built_home), "MADQA_SPACE_DB": str(db), "MADQA_SPACE_SCORE_WORKERS": "0", **extra}


def _kept(db: Path) -> Path:
    [kept] = [p for p in db.parent.iterdir() if p.name.startswith(f"{db.name}.damaged-")]
    return kept


@pytest.mark.parametrize("kind", DAMAGES)
def test_a_damaged_board_is_kept_aside_and_restored_from_the_mirror(
    kind: str, board, built_home: Path, tmp_path: Path, monkeypatch
) -> None:
    import huggingface_hub

    from madqa.space.startup import start

    source, hub = board
    db = tmp_path / "space" / "board.sqlite"
    db.parent.mkdir()
    bad = damage(source, db, kind)
    pulls: list[str] = []

    def fake_snapshot(repo_id: str, **kw: Any) -> str:  # the mirror repo's files, as snapshot_download gives them
        pulls.append(repo_id)
        return str(hub)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    services = start(_env(built_home, db, MADQA_SPACE_HUB_REPO="me/subs", HF_TOKEN="hf_fake_token_0123"), seed=False)
    kept = _kept(db)
    assert kept.read_bytes() == bad and stat.S_IMODE(kept.stat().st_mode) == 0o600  # kept as it was, owner-only
    assert pulls and pulls[0] == "me/subs" and services.store.count() == 1  # the board came back from the mirror
    assert _integrity(db) == [("ok",)]


@pytest.mark.parametrize("kind", DAMAGES)
def test_without_a_mirror_the_space_serves_a_page_saying_where_the_copy_is(
    kind: str, board, built_home: Path, tmp_path: Path, monkeypatch, caplog
) -> None:
    import gradio as gr

    from madqa.space.startup import serve

    db = tmp_path / "board.sqlite"
    bad = damage(board[0], db, kind)
    launched: list[Any] = []
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **kw: launched.append(self))

    def no_app(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a damaged board must not be served")

    serve(no_app, _env(built_home, db))
    [page] = launched
    text = " ".join(str(getattr(b, "value", "")) for b in page.blocks.values())
    kept = _kept(db)
    assert "damaged" in text and str(kept) in text and "MADQA_SPACE_DB" in text and "Traceback" not in text
    assert kept.read_bytes() == bad and stat.S_IMODE(kept.stat().st_mode) == 0o600 and not db.exists()
    assert not any(r.exc_info for r in caplog.records if r.levelno >= logging.ERROR)


@pytest.mark.parametrize("kind", ["garbage", "page"])
def test_madqa_space_fails_with_one_line_and_exit_2(
    kind: str, board, built_home: Path, tmp_path: Path, monkeypatch, capsys, caplog
) -> None:
    from madqa.cli import main

    db = tmp_path / "board.sqlite"
    damage(board[0], db, kind)
    for key, value in _env(built_home, db).items():
        monkeypatch.setenv(key, value)
    for key in ("MADQA_SPACE_LABELS", "MADQA_SPACE_LABELS_REPO", "MADQA_SPACE_HUB_REPO", "MADQA_DATASET"):
        monkeypatch.delenv(key, raising=False)
    assert main(["space", "--port", "7996"]) == 2
    out = capsys.readouterr()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and "damaged" in r.getMessage()]
    assert errors and str(_kept(db)) in caplog.text
    assert "Traceback" not in out.err + out.out + caplog.text and not any(r.exc_info for r in caplog.records)


def test_a_sound_board_is_left_alone_and_an_unopenable_one_is_not_moved(board, tmp_path: Path, monkeypatch) -> None:
    from madqa.space.db_health import DatabaseUnusable, check_database

    source = board[0]
    before = source.read_bytes()
    assert check_database(source) is None and check_database(tmp_path / "none.sqlite") is None
    assert source.read_bytes() == before
    folder = tmp_path / "locked"
    folder.mkdir()
    locked = folder / "board.sqlite"
    shutil.copy(source, locked)
    con = sqlite3.connect(locked)
    con.execute("PRAGMA journal_mode=DELETE")  # a rollback journal: a writer's exclusive lock blocks readers
    con.execute("BEGIN EXCLUSIVE")
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **kw: connect(*a, **{**kw, "timeout": 0.1}))
    try:
        with pytest.raises(DatabaseUnusable, match="locked"):
            check_database(locked)  # busy, not damaged
    finally:
        con.rollback()
        con.close()
    assert locked.exists() and not [p for p in folder.iterdir() if ".damaged-" in p.name]


@pytest.mark.parametrize("failure", ["unreachable", "broken mirror file"])
def test_a_failed_restore_is_reported_and_leaves_no_partial_board(
    failure: str, board, built_home: Path, tmp_path: Path, monkeypatch
) -> None:
    """The mirror cannot be read, or its second file is broken after the first was restored: the page says the
    database is damaged and the restore failed, and no half-restored board is left to be served at the next start."""
    import huggingface_hub

    from madqa.space.startup import ConfigError, start

    source, hub = board
    (hub / "submissions" / "sub-000002.json").write_text("{not json", encoding="utf-8")
    db = tmp_path / "space" / "board.sqlite"
    db.parent.mkdir()
    damage(source, db, "garbage")

    def fake_snapshot(repo_id: str, **kw: Any) -> str:
        if failure == "unreachable":
            raise OSError("network is unreachable")
        return str(hub)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    with pytest.raises(ConfigError) as caught:
        start(_env(built_home, db, MADQA_SPACE_HUB_REPO="me/subs", HF_TOKEN="hf_fake_token_0123"), seed=False)
    message = str(caught.value)
    assert "damaged" in message and str(_kept(db)) in message and "from 'me/subs' failed" in message
    assert ("cannot be reached" if failure == "unreachable" else "JSONDecodeError") in message
    assert not db.exists() and "MADQA_SPACE_HUB_REPO" in caught.value.variables
