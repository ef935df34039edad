"""Shared by the Space identity and database tests: a submission form, gold rows, results texts, a settable clock
and a ``scorer`` over the built sample's test labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers.submission_form import submission_form

pytest.importorskip("gradio")

FORM = submission_form(system="sys", submitter="tester", compute="1h")


def gold(layout) -> list[dict[str, Any]]:
    return [json.loads(x) for x in layout.test_labels.read_text(encoding="utf-8").splitlines() if x.strip()]


def results(
    rows: list[dict[str, Any]],
    correct: int,
    steps: int | None = 1,
    wrong: str = "zzzz-wrong",
    extra: dict[str, Any] | None = None,
) -> str:
    """A valid results text, the first ``correct`` rows answered with the gold and the others ``[wrong]``; different
    ``correct``/``steps`` give different files. ``steps=None``: 1, 2, 3, 1, … steps by row; ``extra``: more fields on
    every line (e.g. the model and token counts)."""
    return "".join(
        json.dumps(
            {
                "id": r["id"],
                "answer": r["answer_variants"][0] if i < correct else [wrong],
                "citations": r["evidence"],
                "steps": 1 + i % 3 if steps is None else steps,
                **(extra or {}),
            }
        )
        + "\n"
        for i, r in enumerate(rows)
    )


class Clock:
    """A settable clock."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(name="scorer")
def scorer_fixture(layout, tmp_path: Path):
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    return Scorer.from_labels(layout.test_labels, SubmissionStore(tmp_path / "db.sqlite"), n_resamples=20)
