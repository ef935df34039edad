"""A Space's submission path in a process of its own, killed (SIGKILL) at a chosen commit point of SQLite.

Run by ``tests/space/test_space_crash.py``::

    python tests/helpers/crash_child.py DB submit before:N|after:N|none   # one submission with key "k1", then its
    private part
    python tests/helpers/crash_child.py DB restart                        # the next start: resume, then the client's
    retry

Every SQL statement of the store and the private part is traced (``sqlite3.connect`` is wrapped before the Space's
modules connect). ``before:N`` kills the process as the N-th ``COMMIT`` of the submission begins (that transaction
is lost); ``after:N`` kills it right after the N-th ``COMMIT`` (at the next statement, or before the answer when no
statement follows). Lines on stdout: ``ACK <id>`` once the submitter has its answer, ``COMMITS <n>`` at the end.
The kill is injected where the store commits, not left to timing luck.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: tests/ on the path, as tests/conftest.py puts it for the tests
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.submission_form import submission_form  # noqa: E402

FORM = submission_form(system="crash-test")
KEY = "k1"


class CommitKiller:
    """Counts COMMITs once armed; kills this process at the chosen point."""

    def __init__(self, spec: str) -> None:
        when, _, n = spec.partition(":")
        self.when, self.n = when, int(n or 0)
        self.armed, self.commits, self.after_due = False, 0, False

    def trace(self, statement: str) -> None:
        if not self.armed:
            return
        if self.after_due:
            self.kill()
        if statement.strip().upper() == "COMMIT":
            self.commits += 1
            if self.commits == self.n:
                if self.when == "before":
                    self.kill()
                self.after_due = self.when == "after"

    def checkpoint(self) -> None:
        """Where no statement follows the chosen COMMIT (before the answer, at the end)."""
        if self.after_due:
            self.kill()

    @staticmethod
    def kill() -> None:
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def install(killer: CommitKiller) -> None:
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        con = connect(*args, **kwargs)
        con.set_trace_callback(killer.trace)
        return con

    sqlite3.connect = traced  # type: ignore[assignment]


def build(db: Path) -> tuple[Any, list[Any]]:
    from madqa.bench.space import synthetic_references
    from madqa.loading_script.label_parts import private_ids
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    refs = synthetic_references(40)
    hidden = private_ids([{"id": r.id, "hop_type": r.hop_type, "domain": ""} for r in refs], seed=1)
    return Scorer(refs, SubmissionStore(db), n_resamples=20, private_ids=hidden), refs


def results_text(refs: list[Any]) -> str:
    """Half the items right: a file whose public and private parts both score above zero."""
    return "".join(
        json.dumps({"id": r.id, "answer": [r.answer_variants[0][0] if i % 2 else "no"], "steps": 1}) + "\n"
        for i, r in enumerate(refs)
    )


def main(argv: list[str]) -> int:
    db, phase = Path(argv[0]), argv[1]
    killer = CommitKiller(argv[2] if len(argv) > 2 else "none")
    install(killer)
    scorer, refs = build(db)
    if phase == "restart":
        scorer.resume_private()
    killer.armed = True
    accepted = scorer.submit_text(results_text(refs), FORM, key=KEY, identity="hf:crash")
    killer.checkpoint()
    print(f"ACK {accepted.id} {'replayed' if accepted.replayed else 'stored'}", flush=True)
    if not scorer.private.drain(120):
        print("NOT DRAINED", flush=True)
        return 1
    killer.checkpoint()
    print(f"COMMITS {killer.commits}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
