"""The launched Space's guards over HTTP on 127.0.0.1: rate limit vs. X-Forwarded-For spoofing (fake clock, window
expiry, restart), idempotent retry after a failure between commit and response, the upload gate and clean-up."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gradio_client import Client, handle_file  # noqa: E402
from helpers.guarded_space import FORM, Clock, Space
from helpers.space_fixtures import gold as gold_rows  # noqa: E402

pytestmark = pytest.mark.server


def files_named(folder: Path, *names: str) -> list[Path]:
    """Files called one of ``names`` under ``folder``; a folder the Space deletes mid-walk is skipped, where
    ``Path.rglob`` raised FileNotFoundError (CI of stop 53)."""
    return [Path(top, name) for top, _, files in os.walk(folder) for name in files if name in names]


@pytest.fixture()
def space(layout, tmp_path: Path) -> Iterator[Space]:
    app = Space(layout, tmp_path / "db.sqlite", Clock(1000.0))
    try:
        yield app
    finally:
        app.close()


def result_file(folder: Path, rows: list[dict[str, Any]], correct: int) -> Path:
    path = folder / f"r{correct}-{uuid.uuid4().hex[:6]}.jsonl"
    lines = [
        {"id": r["id"], "answer": r["answer_variants"][0] if i < correct else ["x"], "steps": 1}
        for i, r in enumerate(rows)
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def send(client: Client, path: Path, *extra: Any) -> str:
    return str(client.predict(handle_file(str(path)), *FORM, *extra, api_name="/submit")[0])


def test_forwarded_for_does_not_evade_the_limit_and_the_window_expires(space, layout, tmp_path: Path) -> None:
    rows, clock = gold_rows(layout), space.services.limiter.clock
    spoofed = iter(space.client(f"203.0.113.{n}") for n in range(1, 50))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "nope", "answer": []}\n', encoding="utf-8")
    for _ in range(3):  # rejected files do not use the quota
        assert send(next(spoofed), bad).startswith("**Rejected:** bad.jsonl line 1")
    assert send(next(spoofed), result_file(tmp_path, rows, 1)).startswith("**Accepted**")
    clock.now = 1050.0
    assert send(next(spoofed), result_file(tmp_path, rows, 2)).startswith("**Accepted**")
    for n in range(3):  # 2 per 100 s, whatever the forwarded headers claim
        message = send(next(spoofed), result_file(tmp_path, rows, 3 + n))
        assert message.startswith("**Rejected:** rate limit: at most 2 accepted submissions per 100 s"), message
    clock.now = 1099.0
    assert "rate limit" in send(next(spoofed), result_file(tmp_path, rows, 6))
    clock.now = 1100.0  # the first acceptance leaves the window at exactly t + 100 s
    assert send(next(spoofed), result_file(tmp_path, rows, 7)).startswith("**Accepted**")
    assert "rate limit" in send(next(spoofed), result_file(tmp_path, rows, 8))
    store = space.services.store
    assert store.count() == 3
    import sqlite3

    with sqlite3.connect(store.path) as con:
        assert {r[0] for r in con.execute("SELECT identity FROM accepted_events")} == {"ip:127.0.0.1"}


def test_the_limit_survives_a_restart(layout, tmp_path: Path) -> None:
    rows, clock, db = gold_rows(layout), Clock(1000.0), tmp_path / "db.sqlite"
    first = Space(layout, db, clock)
    try:
        assert send(first.client(), result_file(tmp_path, rows, 1)).startswith("**Accepted**")
    finally:
        first.close()
    clock.now = 1010.0
    second = Space(layout, db, clock)
    try:  # one slot left after the restart, not two
        assert send(second.client(), result_file(tmp_path, rows, 2)).startswith("**Accepted**")
        assert "rate limit" in send(second.client("198.51.100.7"), result_file(tmp_path, rows, 3))
    finally:
        second.close()


def test_a_retry_after_a_failure_between_commit_and_response_is_not_a_duplicate(
    space, layout, tmp_path: Path, monkeypatch
) -> None:
    import madqa.space.app as app_module

    rows, store = gold_rows(layout), space.services.store
    real, failures = app_module.format_accepted, []

    def fail_once(accepted):
        if not failures:
            failures.append(accepted.id)
            raise ConnectionResetError("response lost")
        return real(accepted)

    monkeypatch.setattr(app_module, "format_accepted", fail_once)
    client, path = space.client(), result_file(tmp_path, rows, 4)
    message, _, key_out = client.predict(handle_file(str(path)), *FORM, "retry-key-1", api_name="/submit")
    assert "internal error" in message and "submit again" in message and key_out == "retry-key-1"
    assert store.count() == 1  # stored although the submitter saw an error
    message, _, key_out = client.predict(handle_file(str(path)), *FORM, "retry-key-1", api_name="/submit")
    assert message.startswith(f"**Accepted** as submission #{failures[0]}") and "nothing new was stored" in message
    assert store.count() == 1 and key_out not in ("", "retry-key-1")  # the next file gets a fresh key
    assert "already submitted as #" in send(client, path)  # without the key it is a duplicate file
    assert send(client, result_file(tmp_path, rows, 5)).startswith("**Accepted**")  # the retry used no quota


def test_uploads_only_take_results_files_and_are_deleted_after_scoring(space, layout, tmp_path: Path) -> None:
    import httpx
    from gradio.utils import get_upload_folder

    upload = space.url + "gradio_api/upload"
    for name in ("evil.exe", "notes.txt", "page.html", "results.jsonl.sh", "noext"):
        response = httpx.post(upload, files={"files": (name, b"MZ\x90\x00 payload", "application/octet-stream")})
        assert response.status_code == 415, (name, response.status_code)
    mixed = [("files", ("ok.jsonl", b"{}", "text/plain")), ("files", ("bad.py", b"print()", "text/plain"))]
    assert httpx.post(upload, files=mixed).status_code == 415
    multipart = {"content-type": "multipart/form-data; boundary=x"}
    chunked = httpx.post(upload, content=iter([b"--x\r\n"]), headers=multipart)
    assert chunked.status_code == 411
    too_big = {"files": ("big.jsonl", b"x" * (1024 * 1024 + 70_000), "text/plain")}
    assert httpx.post(upload, files=too_big).status_code == 413
    assert not files_named(Path(get_upload_folder()), "evil.exe", "bad.py")
    ok = httpx.post(upload, files={"files": ("Fine.JSON", b"{}\n", "application/json")})
    assert ok.status_code == 200 and ok.json()[0].endswith("Fine.JSON")
    text_file = tmp_path / "x.txt"
    text_file.write_text("{}\n", encoding="utf-8")
    with pytest.raises(Exception):  # noqa: B017 - the client uploads through the same gate
        send(space.client(), text_file)
    rows = gold_rows(layout)
    accepted, rejected = result_file(tmp_path, rows, 2), tmp_path / f"bad-{uuid.uuid4().hex[:6]}.jsonl"
    rejected.write_text('{"id": "nope", "answer": []}\n', encoding="utf-8")
    assert send(space.client(), accepted).startswith("**Accepted**")
    assert send(space.client(), rejected).startswith("**Rejected:**")
    leftover = files_named(Path(get_upload_folder()), accepted.name, rejected.name)
    assert not leftover, leftover
