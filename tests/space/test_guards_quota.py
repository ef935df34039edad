"""The Space's quota counts submissions being scored (space/submission.py, ``Scorer._in_flight``; issue 29).

Documented: "stored in the window + in flight must stay under the limit"; files sent at once beyond the quota are
refused before any scoring work. Here with a quota of 3, one already stored and two held in scoring at once.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from helpers.submission_form import submission_form

from madqa.bench.space import results_text, synthetic_references
from madqa.space.submission import clean_form


@pytest.fixture
def scorer(tmp_path: Path) -> Any:
    """A scorer of 60 synthetic references with a store of its own."""
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    return Scorer(synthetic_references(60), SubmissionStore(tmp_path / "db.sqlite"), n_resamples=10)


def test_stored_plus_in_flight_submissions_never_exceed_the_quota(scorer) -> None:
    from madqa.space.submission import RateLimiter, SubmissionError

    refs, form = scorer.references, clean_form(submission_form(training_data="t", compute="c"))
    limiter = RateLimiter(3, 3600)
    real = scorer.evaluate_text
    held, release, scored = threading.Semaphore(0), threading.Event(), []
    lock = threading.Lock()

    def slow(text: str) -> Any:
        with lock:
            scored.append(text)
            hold = len(scored) in (2, 3)  # the 2nd and 3rd files are held in scoring
        if hold:
            held.release()
            release.wait(30)
        return real(text)

    scorer.evaluate_text = slow  # type: ignore[method-assign]

    def submit(seed: int, who: str = "ip:a") -> Any:
        return scorer.submit_text(results_text(refs, seed), form, identity=who, limiter=limiter)

    submit(1)  # stored: one of three used
    done: list[Any] = []
    threads = [threading.Thread(target=lambda s=s: done.append(submit(s))) for s in (2, 3)]
    for t in threads:
        t.start()
    try:
        assert held.acquire(timeout=30) and held.acquire(timeout=30)  # two in flight now
        for seed in (4, 5):
            with pytest.raises(SubmissionError, match="rate limit"):
                submit(seed)  # 1 stored + 2 in flight = the whole quota
        assert len(scored) == 3  # refused before scoring
        submit(6, who="ip:b")  # another identity goes on meanwhile
    finally:
        release.set()
        for t in threads:
            t.join(30)
    assert len(done) == 2 and scorer.store.count() == 4
    with pytest.raises(SubmissionError, match="rate limit"):
        submit(7)
    assert len(scored) == 4


def test_in_flight_count_is_released_after_a_refusal(scorer) -> None:
    """A file refused while scoring (invalid) does not keep its quota share: the quota is for stored ones."""
    from madqa.space.submission import RateLimiter, SubmissionError

    refs, form = scorer.references, clean_form(submission_form(training_data="t", compute="c"))
    limiter = RateLimiter(1, 3600)
    with pytest.raises(SubmissionError):
        scorer.submit_text('{"not": "a results file"}\n', form, identity="ip:a", limiter=limiter)
    scorer.submit_text(results_text(refs, 1), form, identity="ip:a", limiter=limiter)
    with pytest.raises(SubmissionError, match="rate limit"):
        scorer.submit_text(results_text(refs, 2), form, identity="ip:a", limiter=limiter)


def test_a_submission_being_stored_is_never_counted_twice(scorer) -> None:
    """The moment a row is written, the submission is both stored and (until released) in flight: a check made in
    that moment must not count it twice. With a quota of 2 and one submission being stored, a second one is within
    the quota; were it counted twice (stored 1 + in flight 1 = 2), it would be refused (a loaded clean-clone run
    saw a quota of 3 accept 2 of 8 files sent at once)."""
    from madqa.space.submission import RateLimiter, SubmissionError

    refs, form = scorer.references, clean_form(submission_form(training_data="t", compute="c"))
    limiter = RateLimiter(2, 3600)
    real_add, outcome = scorer.store.add, []

    def check_meanwhile() -> None:  # another file's quota check, made while the first one's row is being written
        try:
            with scorer._in_flight("ip:a", limiter.rule("ip:a"), []):
                outcome.append("within the quota")
        except SubmissionError as exc:
            outcome.append(str(exc))

    def add_then_check(*args: Any, **kwargs: Any) -> int:
        sid = real_add(*args, **kwargs)
        if not outcome:
            other = threading.Thread(target=check_meanwhile)
            other.start()
            other.join(2)  # done at once if the check does not wait for the storing to end (the race)
        return sid

    scorer.store.add = add_then_check  # type: ignore[method-assign]
    scorer.submit_text(results_text(refs, 1), form, identity="ip:a", limiter=limiter)
    deadline = threading.Event()
    for _ in range(300):  # the check waited for the storing to end; it ends after it
        if outcome:
            break
        deadline.wait(0.1)
    assert outcome == ["within the quota"]
