"""A submission survives a crash at any commit point: stored means its private part is scored or queued.

``tests/helpers/crash_child.py`` runs the real submission path (store, private part) in a process killed with SIGKILL
at
each COMMIT of the submission (just before it, just after it). The next start resumes the private queue and the
client retries with its submission key, as the Space's page does after a lost answer. After that, every stored
submission has its private part scored, nothing is stored twice, and nothing waits in the queue.

With the queue row written after the submission's transaction (as before issue 39), the kill right after the
first COMMIT leaves a submission with no private part, and this test fails.
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import TESTS

pytest.importorskip("gradio")

CHILD = TESTS / "helpers" / "crash_child.py"
ORPHANS = (
    "SELECT id FROM submissions WHERE id NOT IN (SELECT submission_id FROM private_reports) "
    "AND id NOT IN (SELECT submission_id FROM private_queue)"
)


def _child(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHILD), str(db), *args], capture_output=True, text=True, timeout=600)


def _state(db: Path) -> dict[str, list[tuple[object, ...]]]:
    con = sqlite3.connect(db)
    try:
        return {
            "submissions": con.execute("SELECT id, idem_key IS NOT NULL FROM submissions").fetchall(),
            "orphans": con.execute(ORPHANS).fetchall(),
            "queue": con.execute("SELECT submission_id FROM private_queue").fetchall(),
            "reports": con.execute("SELECT submission_id, status FROM private_reports").fetchall(),
        }
    finally:
        con.close()


@pytest.mark.slow
def test_a_kill_at_any_commit_point_loses_no_private_part(tmp_path: Path) -> None:
    clean = _child(tmp_path / "clean.sqlite", "submit", "none")
    assert clean.returncode == 0, clean.stderr[-2000:]
    commits = int(clean.stdout.split("COMMITS ")[1].split()[0])
    assert commits >= 2  # the submission's own transaction and its private result, at least
    for point in [f"{when}:{n}" for n in range(1, commits + 1) for when in ("before", "after")]:
        db = tmp_path / f"{point.replace(':', '-')}.sqlite"
        killed = _child(db, "submit", point)
        assert killed.returncode == -9, (point, killed.returncode, killed.stderr[-2000:])
        acknowledged = [ln.split()[1] for ln in killed.stdout.splitlines() if ln.startswith("ACK ")]
        crashed = _state(db) if db.exists() else None
        again = _child(db, "restart")
        assert again.returncode == 0, (point, again.stderr[-2000:])
        (answer,) = [ln.split()[1:] for ln in again.stdout.splitlines() if ln.startswith("ACK ")]
        state = _state(db)
        assert len(state["submissions"]) == 1, (point, state)  # the retry never stores it twice
        assert state["orphans"] == [] and state["queue"] == [], (point, crashed, state)
        assert state["reports"] == [(int(answer[0]), "scored")], (point, state)
        if acknowledged:  # an answer the submitter saw is the one stored: the retry is answered from the store
            assert answer == [acknowledged[0], "replayed"], (point, answer)
        if crashed is not None:  # the invariant held at the moment of the crash, not only after the restart
            assert crashed["orphans"] == [], (point, crashed)


def test_a_retry_queues_a_private_part_that_an_older_store_lacks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from helpers.crash_child import FORM, KEY, build, results_text

    db = tmp_path / "db.sqlite"
    scorer, refs = build(db)
    first = scorer.submit_text(results_text(refs), FORM, key=KEY, identity="hf:old")
    assert scorer.private.drain(60)
    con = sqlite3.connect(db)
    with con:  # what a store written before issue 39 could hold after a crash: no result, nothing queued
        con.execute("DELETE FROM private_reports")
        con.execute("DELETE FROM private_item_scores")
    con.close()
    again, _ = build(db)
    with caplog.at_level(logging.ERROR, logger="madqa.space.private_part"):
        assert again.resume_private() == 0
    assert f"#{first.id}" in caplog.text and "not on the Ladder" in caplog.text  # the operator is told
    retry = again.submit_text(results_text(refs), FORM, key=KEY, identity="hf:old")
    assert (retry.id, retry.replayed) == (first.id, True)
    assert again.private.drain(60)
    (result,) = again.private.scores.results()
    assert (result.submission_id, result.identity, result.status) == (first.id, "hf:old", "scored")
    assert again.private.scores.orphans() == [] and again.private.scores.pending() == []
    # a second retry queues nothing more: the part is scored
    assert not again.private.ensure(first.id, "hf:old", results_text(refs))
