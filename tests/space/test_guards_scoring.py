"""Scoring-critical guarantees the mutation check (scripts/mutants.py) found thinly tested (issue 29).

* the Ladder (space/ladder.py): an identity's published value changes only when a private accuracy beats it by
  *more than* the margin η, and then rises by at least η (so at most ``1/η`` changes in a life);
* the public part only (space/submission.py): with the scoring pools in use (the Space's configuration), what a
  submitter is shown is computed from the public items alone, exactly as without pools.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from madqa.bench.space import synthetic_references
from madqa.space.ladder import ladder, round_to
from madqa.space.private_part import PrivateResult


def _r(sid: int, acc: float, who: str = "u") -> PrivateResult:
    return PrivateResult(sid, who, "scored", acc, {})


@pytest.mark.parametrize("margin", [0.01, 0.05])
def test_the_ladder_moves_only_beyond_its_margin_and_then_by_at_least_the_margin(margin: float) -> None:
    assert ladder([_r(1, 0.40), _r(2, 0.40 + margin * 0.6)], margin)[0].submission_id == 1  # within the margin
    assert ladder([_r(1, 0.40), _r(2, 0.40 + margin)], margin)[0].submission_id == 1  # "more than": not equal
    (moved,) = ladder([_r(1, 0.40), _r(2, 0.40 + margin * 1.6)], margin)
    assert moved.submission_id == 2 and moved.value == round_to(0.40 + margin * 1.6, margin)
    rng = random.Random(29)
    for _ in range(40):
        accs = [min(1.0, max(0.0, 0.3 + rng.gauss(0, 0.05) + 0.004 * i)) for i in range(30)]
        history = [ladder([_r(i + 1, a) for i, a in enumerate(accs[: k + 1])], margin)[0] for k in range(len(accs))]
        changes = 0
        for before, after in zip(history, history[1:], strict=False):
            if after.submission_id != before.submission_id:
                changes += 1
                assert after.value >= before.value + margin - 1e-9, (before, after)
                assert accs[after.submission_id - 1] > before.value + margin
            else:
                assert after.value == before.value
        assert changes <= int(1 / margin + 1e-9)


def _text(refs: list[Any], right: set[str]) -> str:
    return "".join(
        json.dumps({"id": r.id, "answer": [r.answer_variants[0][0] if r.id in right else "no"], "steps": 1 + i % 5})
        + "\n"
        for i, r in enumerate(refs)
    )


def test_with_scoring_pools_only_the_public_part_is_scored_and_shown(tmp_path: Path) -> None:
    from madqa.loading_script.label_parts import private_ids
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    refs = synthetic_references(40)
    hidden = private_ids([{"id": r.id, "hop_type": r.hop_type, "domain": ""} for r in refs], seed=1)
    plain = Scorer(refs, SubmissionStore(tmp_path / "a.sqlite"), n_resamples=20, private_ids=hidden)
    pooled = Scorer(refs, SubmissionStore(tmp_path / "b.sqlite"), n_resamples=20, private_ids=hidden)
    pooled.use_pools(workers=1)
    try:
        public = {r.id for r in refs} - set(hidden)
        assert hidden and public
        text = _text(refs, set(sorted(public)[::2]))
        shown = pooled.evaluate_text(text)
        assert shown.report["n"] == len(public) and {it["id"] for it in shown.items} == public
        assert shown.report == plain.evaluate_text(text).report
        more = pooled.evaluate_text(_text(refs, set(sorted(public)[::2]) | set(hidden)))  # private answers change
        assert more.report == shown.report and more.items == shown.items
        private = pooled.evaluate_private(text)
        assert private.report["n"] == len(hidden) and {it["id"] for it in private.items} == set(hidden)
    finally:
        for pool in (pooled.pool, pooled.private_pool):
            if pool is not None:
                pool.close()
