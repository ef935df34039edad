"""Paired inference between runs (``metric/paired.py``): hand-computed tests, a coverage simulation, rank intervals."""

from __future__ import annotations

import numpy as np
import pytest

from madqa.metric.paired import (
    PairedError,
    holm_significant,
    mcnemar_exact,
    paired_bootstrap_ci,
    paired_difference,
    rank_intervals,
    sign_flip_p,
    unpaired_p,
)


@pytest.mark.parametrize(
    ("only_a", "only_b", "expected"),
    [
        (1, 6, 0.125),  # n = 7: 2 * (C(7,0) + C(7,1)) / 2^7 = 2 * 8 / 128
        (2, 8, 0.109375),  # n = 10: 2 * (1 + 10 + 45) / 1024 = 112 / 1024
        (0, 5, 0.0625),  # n = 5: 2 * 1 / 32
        (3, 3, 1.0),  # 2 * (1 + 6 + 15 + 20) / 64 = 84 / 64, capped at 1
        (0, 0, 1.0),  # no discordant item: no evidence of a difference
    ],
)
def test_mcnemar_exact_by_hand(only_a, only_b, expected):
    assert mcnemar_exact(only_a, only_b) == pytest.approx(expected, abs=1e-15)
    assert mcnemar_exact(only_b, only_a) == mcnemar_exact(only_a, only_b)  # two-sided


def test_paired_difference_counts_shared_items_only():
    # a and b share q2..q5 (q1 only in a, q6 unscored in b). On them: a = 1,1,1,0; b = 0,0,1,1: only_a 2, only_b 1.
    a = {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 1.0, "q5": 0.0, "q6": 1.0}
    b = {"q2": 0.0, "q3": 0.0, "q4": 1.0, "q5": 1.0, "q6": None}
    result = paired_difference(a, b, n_resamples=500, seed=3)
    assert result.n_shared == 4 and (result.only_a, result.only_b) == (2, 1)
    assert result.accuracy_a == 0.75 and result.accuracy_b == 0.5 and result.difference == 0.25
    assert result.test == "mcnemar-exact" and result.p_value == 1.0  # 2 * (1 + 3) / 8 = 1
    low, high = result.ci
    assert -1 <= low <= 0.25 <= high <= 1
    assert paired_difference(a, b, n_resamples=500, seed=3) == result  # seeded


def test_no_shared_item_or_bad_score_is_refused():
    with pytest.raises(PairedError, match="share no scored item"):
        paired_difference({"q1": 1.0}, {"q2": 1.0})
    with pytest.raises(PairedError, match="share no scored item"):
        paired_difference({"q1": 1.0}, {"q1": None})
    with pytest.raises(PairedError, match=r"run B has a score outside \[0, 1\]"):
        paired_difference({"q1": 1.0}, {"q1": 2.0})
    with pytest.raises(PairedError, match="alpha"):
        paired_difference({"q1": 1.0}, {"q1": 0.0}, alpha=1.5)


def test_judge_scores_use_the_sign_flip_test():
    # d = (0.5, 0.5, 0.5): of the 8 equally likely sign patterns, 2 (all + or all -) reach |sum| = 1.5: p = 0.25.
    a = {"q1": 1.0, "q2": 0.5, "q3": 1.0}
    b = {"q1": 0.5, "q2": 0.0, "q3": 0.5}
    result = paired_difference(a, b, n_resamples=20_000, seed=1)
    assert result.test == "sign-flip" and result.p_value == pytest.approx(0.25, abs=0.02)
    assert result.difference == 0.5 and result.ci == (0.5, 0.5)  # every resample of a constant is the constant
    assert sign_flip_p([0.0, 0.0]) == 1.0


def test_paired_bootstrap_ci_covers_at_its_nominal_rate():
    # 400 simulated pairs of runs on 150 items: A right with p = 0.7; B copies A's outcome with p = 0.8 (paired
    # runs agree on most items) and is otherwise right with p = 0.2, so E[B] = 0.8 * 0.7 + 0.2 * 0.2 = 0.6 and
    # the true difference is 0.1. The 95% interval must cover it in 95% +- 3.5 points of the runs (the binomial
    # standard error of 400 runs is 1.1 points; the percentile bootstrap of a mean runs a little short at n = 150).
    rng = np.random.default_rng(12345)
    runs, n, covered = 400, 150, 0
    for sim in range(runs):
        a = rng.random(n) < 0.7
        b = np.where(rng.random(n) < 0.8, a, rng.random(n) < 0.2)
        low, high = paired_bootstrap_ci(a.astype(float) - b.astype(float), n_resamples=400, seed=sim)
        covered += low <= 0.1 <= high
    assert abs(covered / runs - 0.95) <= 0.035, covered


def test_mcnemar_rejects_at_most_alpha_under_the_null():
    # Equal accuracy (both right with p = 0.6, independently): the exact test is conservative, so at most 5% of
    # 2000 simulated pairs (plus 1.5 points for the simulation's own error) are called significant.
    rng = np.random.default_rng(7)
    rejected = 0
    for _ in range(2000):
        a, b = rng.random(100) < 0.6, rng.random(100) < 0.6
        rejected += mcnemar_exact(int(np.sum(a & ~b)), int(np.sum(~a & b))) <= 0.05
    assert rejected / 2000 <= 0.065


#: Six pairs' p-values of four systems A-D, used by the Holm and rank-interval tests.
SIX_P = {
    ("A", "B"): 0.2,
    ("A", "C"): 0.001,
    ("A", "D"): 0.0001,
    ("B", "C"): 0.01,
    ("B", "D"): 0.0002,
    ("C", "D"): 0.02,
}


def test_holm_is_step_down_not_bonferroni():
    # m = 6. Sorted: .0001 <= .05/6, .0002 <= .05/5, .001 <= .05/4, .01 <= .05/3 (.0167; Bonferroni's .0083 would
    # stop here), .02 <= .05/2, .2 > .05: five significant.
    p = dict(SIX_P)
    assert holm_significant(p) == set(p) - {("A", "B")}
    assert holm_significant({**p, ("C", "D"): 0.03}) == set(p) - {("A", "B"), ("C", "D")}  # .03 > .025: stop


def test_rank_intervals_by_hand_on_four_systems():
    estimates = {"A": 0.80, "B": 0.75, "C": 0.60, "D": 0.40}
    p = dict(SIX_P)
    # A and B: nobody significantly better, both beat C and D: [1, 4 - 2]. C: below A, B, above D: [3, 3].
    ranks = rank_intervals(estimates, p)
    assert {k: (v.low, v.high, v.group) for k, v in ranks.items()} == {
        "A": (1, 2, 1),
        "B": (1, 2, 1),
        "C": (3, 3, 2),
        "D": (4, 4, 3),
    }
    assert ranks["A"].text() == "1–2" and ranks["C"].text() == "3"
    # C vs D no longer significant (Holm stops at .03 > .05/2): C and D share 3–4 and a tie group.
    ranks = rank_intervals(estimates, {**p, ("D", "C"): 0.03, ("C", "D"): 0.03})
    assert [(ranks[s].text(), ranks[s].group) for s in "ABCD"] == [("1–2", 1), ("1–2", 1), ("3–4", 2), ("3–4", 2)]


def test_tie_groups_follow_chains_of_non_significant_differences():
    # A ~ B and B ~ C, but A > C: one tie group (no cut separates them significantly); the intervals still differ.
    ranks = rank_intervals({"A": 0.7, "B": 0.6, "C": 0.5}, {("A", "B"): 0.3, ("B", "C"): 0.3, ("A", "C"): 0.001})
    assert [(ranks[s].text(), ranks[s].group) for s in "ABC"] == [("1–2", 1), ("1–3", 1), ("2–3", 1)]
    # a missing pair counts as not significant; one system ranks 1
    assert rank_intervals({"A": 0.5, "B": 0.4}, {})["B"].text() == "1–2"
    assert rank_intervals({"A": 0.5}, {})["A"].text() == "1"


def test_unpaired_p_by_hand():
    # z = 0.1 / hypot(0.03, 0.04) = 0.1 / 0.05 = 2; two-sided normal tail erfc(2 / sqrt 2) = 0.0455
    assert unpaired_p(0.1, 0.03, 0.04) == pytest.approx(0.04550026, abs=1e-8)
    assert unpaired_p(0.0, 0.0, 0.0) == 1.0 and unpaired_p(0.1, 0.0, 0.0) == 0.0


def test_docstring_examples():
    import doctest

    from madqa.metric import paired

    result = doctest.testmod(paired)
    assert result.attempted >= 4 and result.failed == 0
