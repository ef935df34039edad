"""Scoring off the request threads: same results as in-process, a CPU budget per submission, a bounded queue."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from helpers.submission_form import submission_form

from madqa.bench.space import results_text, synthetic_references
from madqa.bench.space_burst import worst_case_text
from madqa.metric.report import ReportOptions
from madqa.space.scoring_pool import BUSY_MESSAGE, PoolLimits, ScoringPool
from madqa.space.submission import SubmissionError, evaluate_results


@pytest.fixture(scope="module")
def refs() -> list[Any]:
    return synthetic_references(300)


def test_pool_scores_exactly_like_the_request_thread(refs) -> None:
    pool = ScoringPool(refs, {"d1": "dev"}, n_resamples=100, limits=PoolLimits(workers=1, cpu_s=120))
    try:
        text = results_text(refs, 3)
        expected = evaluate_results(text, refs, {r.id for r in refs}, {}, options=ReportOptions(n_resamples=100))
        assert pool.evaluate(text) == expected
        with pytest.raises(SubmissionError, match="line 1: field 'id' 'd1' is a dev question"):
            pool.evaluate('{"id": "d1", "answer": ["x"]}\n')  # the user's own mistake comes back as it is
    finally:
        pool.close()


@pytest.mark.slow
def test_a_costly_legal_file_is_stopped_by_the_cpu_budget_and_the_pool_recovers(refs) -> None:
    worst = worst_case_text(refs, 20 * 1024 * 1024, 0)  # legal: ~300 lines at the answer caps, ~55 ms each
    evaluate_results(
        worst.splitlines()[0] + "\n", refs, {r.id for r in refs}, {}, options=ReportOptions(n_resamples=10)
    )  # parses fine
    pool = ScoringPool(refs, n_resamples=10, limits=PoolLimits(workers=1, cpu_s=1))
    try:
        with pytest.raises(SubmissionError, match="more than the Space's budget of 1 CPU seconds"):
            pool.evaluate(worst)
        assert pool.killed == 1
        done = pool.evaluate(results_text(refs, 1))  # a fresh process took over
        assert done.report["n"] == len(done.items) == len(refs)
    finally:
        pool.close()


@pytest.mark.slow
def test_a_full_queue_turns_submissions_away_without_waiting_forever(refs) -> None:
    pool = ScoringPool(refs, n_resamples=10, limits=PoolLimits(workers=1, cpu_s=3, queue_timeout_s=0.2))
    outcome: list[str] = []
    try:

        def busy() -> None:
            try:
                pool.evaluate(worst_case_text(refs, 20 * 1024 * 1024, 1))
            except SubmissionError as exc:
                outcome.append(str(exc))

        worker = threading.Thread(target=busy)
        worker.start()
        for _ in range(1000):  # until the only scoring process is taken (no timing assumption)
            if pool._idle.qsize() == 0:
                break
            time.sleep(0.01)
        with pytest.raises(SubmissionError) as caught:
            pool.evaluate(results_text(refs, 2))
        assert str(caught.value) == BUSY_MESSAGE
        worker.join()
        assert outcome and "budget" in outcome[0]
    finally:
        pool.close()


def test_automatic_budget_grows_with_the_test_split(refs) -> None:
    pool = ScoringPool(refs[:10], limits=PoolLimits(workers=1))
    try:
        small = pool.limits.cpu_s
    finally:
        pool.close()
    pool = ScoringPool(refs, limits=PoolLimits(workers=1))
    try:
        assert pool.limits.cpu_s > small >= 30
    finally:
        pool.close()


def test_files_sent_at_once_cannot_be_scored_beyond_the_quota(refs, tmp_path) -> None:
    """With one submission left, a second file sent while the first is being scored is refused before scoring:
    otherwise it would be scored (its timing observed) and only then refused, a probe that costs no quota."""
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import RateLimiter, Scorer, clean_form

    form = clean_form(submission_form(training_data="t", compute="c"))
    scorer = Scorer(refs, SubmissionStore(tmp_path / "db.sqlite"), n_resamples=10)
    limiter = RateLimiter(1, 3600)
    entered, release, calls = threading.Event(), threading.Event(), []
    real = scorer.evaluate_text

    def slow(text: str) -> Any:
        calls.append(1)
        if len(calls) == 1:  # only the first file is held in scoring
            entered.set()
            release.wait(30)
        return real(text)

    scorer.evaluate_text = slow  # type: ignore[method-assign]
    first: list[Any] = []
    t = threading.Thread(
        target=lambda: first.append(scorer.submit_text(results_text(refs, 1), form, identity="ip:a", limiter=limiter))
    )
    t.start()
    assert entered.wait(30)
    try:
        with pytest.raises(SubmissionError, match="being scored"):
            scorer.submit_text(results_text(refs, 2), form, identity="ip:a", limiter=limiter)
        assert len(calls) == 1  # the second file was never scored
        scorer.submit_text(results_text(refs, 3), form, identity="ip:b", limiter=limiter)  # others go on meanwhile
        assert len(calls) == 2
    finally:
        release.set()
        t.join()
    assert first and scorer.store.count() == 2
    with pytest.raises(SubmissionError, match="rate limit"):  # and afterwards the stored one uses the quota
        scorer.submit_text(results_text(refs, 4), form, identity="ip:a", limiter=limiter)
    assert len(calls) == 2
