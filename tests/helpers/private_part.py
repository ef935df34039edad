"""Shared by the tests (moved out of test_space_private_part.py, which other tests imported)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.submission_form import submission_form
from madqa.bench.space import synthetic_references  # noqa: E402
from madqa.loading_script.label_parts import private_ids  # noqa: E402
from madqa.space.storage import SubmissionStore  # noqa: E402
from madqa.space.submission import Scorer  # noqa: E402

FORM = submission_form()


def _scorer(tmp_path: Path, n: int = 40, **kwargs: Any) -> tuple[Scorer, list[Any]]:
    refs = synthetic_references(n)
    hidden = private_ids([{"id": r.id, "hop_type": r.hop_type, "domain": ""} for r in refs], seed=1)
    return Scorer(refs, SubmissionStore(tmp_path / "db.sqlite"), n_resamples=20, private_ids=hidden, **kwargs), refs


def _text(refs: list[Any], right: set[str], tag: str = "") -> str:
    return "".join(
        json.dumps(
            {"id": r.id, "answer": [r.answer_variants[0][0] if r.id in right else f"no{tag}"], "steps": 1 + i % 7}
        )
        + "\n"
        for i, r in enumerate(refs)
    )
