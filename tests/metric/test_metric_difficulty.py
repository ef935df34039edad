"""Item difficulty across systems (paper H.4): p-values, bands, anomalous items, human-only failures.

Every expected number is computed by hand in the comment next to it, on the small run set ``OUT`` below.
"""

from __future__ import annotations

import doctest

import pytest

from madqa.metric import difficulty
from madqa.metric.difficulty import (
    anomalous_items,
    difficulty_spectrum,
    human_only_failures,
    item_p_values,
    outcomes_from_items,
    system_accuracy,
    weak_strong_split,
)
from madqa.metric.schema import ItemScore

T, F, N = True, False, None

# Four systems on eight items. q6 is unscored for B, q7 is answered by A alone, q8 is unscored everywhere.
OUT = {
    "A": {"q1": T, "q2": F, "q3": T, "q4": F, "q5": F, "q6": F, "q7": T, "q8": N},
    "B": {"q1": T, "q2": F, "q3": T, "q4": F, "q5": T, "q6": N},
    "C": {"q1": T, "q2": F, "q3": F, "q4": T, "q5": T, "q6": T},
    "D": {"q1": T, "q2": F, "q3": F, "q4": T, "q5": T, "q6": T},
}


def test_doctests():
    result = doctest.testmod(difficulty)
    assert result.attempted > 0 and result.failed == 0


def test_p_values_use_the_systems_that_scored_each_item():
    pv = item_p_values(OUT)
    got = {it.id: (it.n_systems, it.n_correct, it.p) for it in pv.items}
    assert got == {
        "q1": (4, 4, 1.0),  # 4/4
        "q2": (4, 0, 0.0),  # 0/4
        "q3": (4, 2, 0.5),  # A, B right: 2/4
        "q4": (4, 2, 0.5),  # C, D right: 2/4
        "q5": (4, 3, 0.75),  # B, C, D: 3/4
        "q6": (3, 2, pytest.approx(2 / 3)),  # B unscored: C, D right of A, C, D: 2/3
        "q7": (1, 1, 1.0),  # only A answered it: 1/1
    }
    assert [it.id for it in pv.items] == ["q1", "q2", "q3", "q4", "q5", "q6", "q7"]  # first-seen order
    assert pv.unobserved_ids == ("q8",)  # nobody scored q8: no p-value, counted, never p = 0
    assert pv.by_id()["q5"].p == 0.75


def test_spectrum_bands_are_strict_at_the_papers_limits():
    s = difficulty_spectrum(item_p_values(OUT))
    # p: q1 1.0, q2 0, q3 .5, q4 .5, q5 .75, q6 .667, q7 1.0 -> easy (> .9): q1, q7; hard (< .1): q2; rest: 4
    assert (s.easy, s.hard, s.discriminating) == (("q1", "q7"), ("q2",), ("q3", "q4", "q5", "q6"))
    assert s.n == 7 and s.n_unobserved == 1
    assert s.easy_share == pytest.approx(2 / 7)  # 2 of 7
    assert s.hard_share == pytest.approx(1 / 7)  # 1 of 7
    assert s.discriminating_share == pytest.approx(4 / 7)  # 4 of 7
    # Boundaries: 9/10 = 0.9 is not "> 90 %", 1/10 = 0.1 is not "< 10 %": both discriminating.
    ten = {f"s{i}": {"e": i < 9, "h": i < 1} for i in range(10)}
    b = difficulty_spectrum(item_p_values(ten))
    assert b.easy == () and b.hard == () and b.discriminating == ("e", "h")


def test_spectrum_of_nothing_has_no_shares():
    s = difficulty_spectrum(item_p_values({"A": {"x": None}}))
    assert s.n == 0 and s.easy_share is None and s.hard_share is None and s.discriminating_share is None
    assert s.n_unobserved == 1
    with pytest.raises(ValueError, match="hard_below"):
        difficulty_spectrum(item_p_values(OUT), easy_above=0.2, hard_below=0.5)


def test_system_accuracy_and_weak_strong_split():
    acc = system_accuracy(OUT)
    # A: q1, q3, q7 right of 7 scored (q8 unscored) = 3/7; B: q1, q3, q5 of 5 = 0.6; C, D: q1, q4, q5, q6 of 6
    assert acc == pytest.approx({"A": 3 / 7, "B": 0.6, "C": 4 / 6, "D": 4 / 6})
    # sorted A .43, B .6, C .67, D .67 (C before D by name): weak = lower 2, strong = upper 2, no median
    assert weak_strong_split(acc) == (("A", "B"), ("C", "D"), None)
    # five systems: the third (median) is in neither group; a system without accuracy is left out
    five = {"e": 0.5, "a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "x": None}
    assert weak_strong_split(five) == (("a", "b"), ("d", "e"), "c")
    assert weak_strong_split({"a": 0.3}) == ((), (), "a")


def test_anomalous_items_by_the_majority_flip_rule():
    res = anomalous_items(OUT)
    assert res is not None
    assert res.weak == ("A", "B") and res.strong == ("C", "D") and res.middle is None
    # q3: weak A, B right (p_weak 1.0 > .5), strong C, D wrong (p_strong 0 < .5) -> anomalous
    # q4: the reverse; q5: p_weak = 1/2 = .5, not > .5 -> no; q6: weak only A scored (wrong) -> 0 -> no
    # q7: no strong system scored it -> unjudged; q8: nobody -> unjudged
    assert [(i.id, i.p_weak, i.p_strong) for i in res.items] == [("q3", 1.0, 0.0)]
    assert (res.n_judged, res.n_unjudged) == (6, 2)  # q1..q6 judged, q7 and q8 not
    assert res.share == pytest.approx(1 / 6)  # 1 of 6 judged


def test_anomalous_items_rank_by_the_given_accuracy():
    # Ranked by this accuracy: C .1, D .2 | B .8, A .9 -> weak C, D; strong B, A.
    res = anomalous_items(OUT, accuracy={"A": 0.9, "B": 0.8, "C": 0.1, "D": 0.2})
    assert res is not None and res.weak == ("C", "D") and res.strong == ("B", "A")
    # q4: weak C, D right (1.0), strong B, A wrong (0) -> yes
    # q5: weak 1.0, strong B right, A wrong (.5, not < .5) -> no
    # q6: weak C, D right (1.0), strong: B unscored, A wrong (0) -> yes
    assert [(i.id, i.p_weak, i.p_strong) for i in res.items] == [("q4", 1.0, 0.0), ("q6", 1.0, 0.0)]
    assert res.accuracy == {"A": 0.9, "B": 0.8, "C": 0.1, "D": 0.2}


def test_anomalous_items_need_two_ranked_systems():
    assert anomalous_items({"A": {"q": True}}) is None
    assert anomalous_items({"A": {"q": None}, "B": {"q": True}}) is None  # A has no accuracy: one ranked system
    assert anomalous_items({}) is None


def test_human_only_failures_use_the_model_p_values():
    pv = item_p_values(OUT)
    human = {"q1": F, "q2": F, "q5": F, "q6": F, "q3": T, "q9": F, "q4": N}
    res = human_only_failures(pv, human)
    # failed: q1, q2, q5, q6, q9; q9 has no model p-value (counted apart); q4 unscored is not a failure
    # model p: q1 1.0 >= .7 yes, q2 0 no, q5 .75 yes, q6 .667 no
    assert res.ids == ("q1", "q5")
    assert (res.n_human_failures, res.n_no_model_p, res.min_p) == (4, 1, 0.7)


def test_human_only_failures_include_the_threshold():
    ten = {f"m{i}": {"x": i < 7, "y": i < 6} for i in range(10)}  # p(x) = 7/10 = .7, p(y) = 6/10 = .6
    res = human_only_failures(item_p_values(ten), {"x": False, "y": False})
    assert res.ids == ("x",) and res.n_human_failures == 2


def test_outcomes_from_scored_items():
    def item(i, correct):
        return ItemScore(i, None if correct is None else float(correct), correct, 0, 0, 0, 1, None, "anls")

    runs = {"S": [item("a", True), item("b", False), item("c", None)]}
    assert outcomes_from_items(runs) == {"S": {"a": True, "b": False, "c": None}}


def test_anomaly_needs_a_strict_majority_on_both_sides():
    # accuracies (items a..f): w1 3/6 = .5, w2 0/6 -> weak w2, w1; s1 (b, d, e, f) 4/6, s2 (c, d, e, f) 4/6
    out = {
        "w1": {"a": T, "b": T, "c": T, "d": F, "e": F, "f": F},
        "w2": {"a": F, "b": F, "c": F, "d": F, "e": F, "f": F},
        "s1": {"a": F, "b": T, "c": F, "d": T, "e": T, "f": T},
        "s2": {"a": F, "b": F, "c": T, "d": T, "e": T, "f": T},
    }
    res = anomalous_items(out)
    assert res is not None and res.weak == ("w2", "w1") and res.strong == ("s1", "s2")
    # a: p_weak 1/2 = .5 (not > .5), p_strong 0 -> not anomalous: half the weak systems is not "easy"
    # b, c: p_weak .5, p_strong 1/2 = .5 -> no; d, e, f: p_weak 0 -> no
    assert res.items == () and res.n_judged == 6 and res.share == 0.0
    # With w2 right on a too: p_weak 2/2 = 1 > .5 and p_strong 0 < .5 -> anomalous.
    res = anomalous_items({**out, "w2": {**out["w2"], "a": T}})
    assert res is not None and [i.id for i in res.items] == ["a"]
