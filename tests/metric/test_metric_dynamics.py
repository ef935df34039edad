"""Search dynamics (H.5, H.6) and what goes with accuracy (H.1, §5.2), against hand-computed values.

``dynamics.py`` and ``correlates.py`` are tested here; each expected number has its hand computation next to it.
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from madqa.metric import correlates, dynamics
from madqa.metric.correlates import (
    HopDistance,
    binned_accuracy,
    correlation,
    cosine_distance,
    distance_vs_accuracy,
    elapsed_seconds,
    hop_distance,
    summarize,
    system_correlation,
    time_vs_accuracy,
)
from madqa.metric.dynamics import (
    Excluded,
    SearchStep,
    Trajectory,
    drift_accuracy_correlation,
    drift_by_system,
    first_hit,
    parse_search_history,
    recovery_after_failure,
    retrieval_by_iteration,
    single_vs_multi_query,
    trajectories,
    trajectory_drift,
)
from madqa.metric.schema import Citation as C
from madqa.metric.schema import ItemScore

R2 = math.sqrt(2)


@pytest.mark.parametrize("module", [dynamics, correlates])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def step(query, *pages):
    return SearchStep(query, tuple(C(d, p) for d, p in pages))


GOLD = {
    "i1": [C("a.pdf", 3)],
    "i2": [C("b", 1), C("c", 2)],
    "i3": [C("a", 5)],
    "i4": [C("d", 1)],
    "i7": [C("a", 1)],
    "i8": [C("a", 1)],
}
TRAJ = [
    # i1: miss, gold doc (page 1 of a), gold page a/3 -> first doc hit 2, first page hit 3
    Trajectory("i1", (step("x", ("x", 1)), step("y", ("dir/a.PDF", 1)), step("z", ("a.pdf", 3))), True),
    # i2: the one query returns c/2 (a gold page) -> doc and page hit at 1
    Trajectory("i2", (step("q", ("c", 2), ("z", 9)),), True),
    # i3: gold doc a at 1 (page 4, not 5), then an empty result -> doc hit 1, no page hit
    Trajectory("i3", (step("q", ("a", 4)), step("r")), False),
    # i4: two misses, unscored
    Trajectory("i4", (step("q", ("y", 1)), step("r", ("y", 2))), None),
    Trajectory("i5", (step("q", ("a", 1)),), False),  # no gold evidence -> excluded (no_gold)
    Trajectory("i6", None, True),  # no search_history -> excluded (no_history)
    Trajectory("i7", (SearchStep("q", None),), True),  # query strings only -> excluded (no_pages)
    Trajectory("i8", (), False),  # answered without searching: usable, never found anything
]


def test_parse_search_history_reads_both_formats():
    value = [
        "plain query",  # public harness: query only
        {"query": "q", "results": [{"document": "a.pdf", "page": 2}, {"file": "b", "page": 1}], "count": 2},
        {
            "query": "bad",
            "results": [
                {"document": "a", "page": 0},
                {"document": "a", "page": True},
                {"document": " ", "page": 1},
                {"page": 3},
                "x",
                {"document": "a", "page": "3"},
            ],
        },
        {"query": "err", "results": [], "count": 0, "error": "no match"},
        {"query": None},  # no results list: pages unknown
    ]
    assert parse_search_history(value) == (
        SearchStep("plain query", None),
        SearchStep("q", (C("a.pdf", 2), C("b", 1))),
        SearchStep("bad", ()),  # every result unusable
        SearchStep("err", ()),
        SearchStep("", None),
    )
    assert parse_search_history(None) is None
    assert parse_search_history([]) == ()
    with pytest.raises(ValueError, match="must be a list"):
        parse_search_history("q")
    with pytest.raises(ValueError, match="string or an object"):
        parse_search_history([3])


def test_trajectories_pair_lines_with_scored_items():
    def item(i, correct):
        return ItemScore(i, float(correct), correct, 0, 0, 0, 1, None, "anls")

    records = [
        {"id": "a", "search_history": [{"query": "q", "results": [{"document": "d", "page": 1}]}]},
        {"id": "b", "steps": 3},  # the REPL agent: no search_history
        {"question": "no id", "search_history": ["x"]},  # not matched by id
    ]
    got = trajectories(records, [item("a", True), item("b", False), item("c", False)])
    assert got == [
        Trajectory("a", (SearchStep("q", (C("d", 1),)),), True),
        Trajectory("b", None, False),
        Trajectory("c", None, False),  # missing line: no history, excluded by the analyses (counted)
    ]


def test_first_hit_normalises_document_names():
    s = TRAJ[0].searches
    assert first_hit(s, GOLD["i1"], "document") == 2  # "dir/a.PDF" is document a
    assert first_hit(s, GOLD["i1"], "page") == 3
    assert first_hit((), GOLD["i1"], "document") is None


def test_retrieval_by_iteration():
    curve = retrieval_by_iteration(TRAJ, GOLD)
    # usable: i1, i2, i3, i4, i8 -> n = 5; excluded: i6 no history, i7 no pages, i5 no gold
    assert curve.n == 5 and curve.excluded == Excluded(no_history=1, no_pages=1, no_gold=1)
    # first doc hits: i1 2, i2 1, i3 1, i4 -, i8 -; first page hits: i1 3, i2 1, others -
    got = [(p.iteration, p.n_queried, p.doc_hit, p.page_hit, p.doc_found, p.page_found) for p in curve.points]
    expected = [
        # it. 1: queried i1-i4; doc hits i2, i3 = 2/4; page hits i2 = 1/4; found by 1: doc 2/5, page 1/5
        (1, 4, 0.5, 0.25, 0.4, 0.2),
        # it. 2: queried i1, i3, i4; doc hit i1 (a/1) = 1/3; no page hit = 0/3; found: doc 3/5, page 1/5
        (2, 3, 1 / 3, 0.0, 0.6, 0.2),
        # it. 3: queried i1; it hits both = 1/1; found: doc 3/5, page i1, i2 = 2/5
        (3, 1, 1.0, 1.0, 0.6, 0.4),
    ]
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert row == pytest.approx(want)
    longer = retrieval_by_iteration(TRAJ, GOLD, max_iteration=4).points[-1]
    # nobody has a 4th query: per-query rates undefined, cumulative rates stay
    assert (longer.n_queried, longer.doc_hit, longer.page_hit, longer.doc_found) == (0, None, None, 0.6)


def test_retrieval_with_nothing_usable():
    curve = retrieval_by_iteration([Trajectory("i6", None, True)], GOLD)
    assert curve.n == 0 and curve.points == () and curve.excluded.no_history == 1
    pts = retrieval_by_iteration([Trajectory("i8", (), True)], GOLD, max_iteration=1).points
    assert pts[0].n_queried == 0 and pts[0].doc_hit is None and pts[0].doc_found == 0.0  # 0 of 1 found


def test_recovery_after_a_failed_first_query():
    doc = recovery_after_failure(TRAJ, GOLD)
    # with a query: i1-i4 (4); zero queries: i8. First query missed the doc: i1 (found at 2), i4 (never) -> 2
    assert (doc.n_usable, doc.n_zero_queries, doc.n_failed_first, doc.n_recovered) == (4, 1, 2, 1)
    assert doc.recovery_rate == 0.5  # 1 of 2
    # correct among the failed: i1 right, i4 unscored -> 1 of 1
    assert (doc.n_correct, doc.n_unscored, doc.correct_rate) == (1, 1, 1.0)
    assert doc.excluded == Excluded(1, 1, 1) and doc.level == "document"
    page = recovery_after_failure(TRAJ, GOLD, level="page")
    # first query missed the page: i1 (found at 3), i3, i4 -> 3; recovered 1 -> 1/3
    assert (page.n_failed_first, page.n_recovered) == (3, 1)
    assert page.recovery_rate == pytest.approx(1 / 3)
    # correct: i1 right, i3 wrong, i4 unscored -> 1 of 2
    assert (page.n_correct, page.n_unscored, page.correct_rate) == (1, 1, 0.5)
    none = recovery_after_failure(TRAJ[1:2], GOLD)  # i2 hit at once: nothing failed
    assert none.n_failed_first == 0 and none.recovery_rate is None and none.correct_rate is None


def test_single_vs_multi_query_accuracy():
    r = single_vs_multi_query(TRAJ)
    # single (1 query): i2 right, i5 wrong, i7 right -> 2/3; multi: i1 right, i3 wrong -> 1/2 (i4 unscored)
    # zero: i8 wrong -> 0/1; i6 has no history
    assert (r.n_single, r.n_multi, r.n_zero, r.n_no_history, r.n_unscored) == (3, 2, 1, 1, 1)
    assert (r.single, r.multi, r.zero) == pytest.approx((2 / 3, 0.5, 0.0))
    assert r.gap == pytest.approx(1 / 6)  # 2/3 - 1/2
    empty = single_vs_multi_query([])
    assert empty.single is None and empty.multi is None and empty.gap is None


def test_trajectory_drift_is_the_mean_consecutive_cosine_distance():
    # (1,0)->(0,1): 1 - 0 = 1; (0,1)->(1,1): 1 - 1/sqrt2 = 0.29289; mean (1 + 0.29289) / 2 = 0.646447
    assert trajectory_drift([[1, 0], [0, 1], [1, 1]]) == pytest.approx((1 + 1 - 1 / R2) / 2)
    assert trajectory_drift(np.array([[3.0, 0.0], [1.0, 0.0]])) == pytest.approx(0.0)  # same direction
    assert trajectory_drift([[1.0, 0.0], [-2.0, 0.0]]) == pytest.approx(2.0)  # opposite: 1 - (-1)
    assert trajectory_drift([[1.0, 0.0]]) is None and trajectory_drift([]) is None  # k < 2: no step
    with pytest.raises(ValueError, match="zero vector"):
        trajectory_drift([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="same length"):
        cosine_distance([1.0, 0.0], [1.0, 0.0, 0.0])


def test_drift_by_system_and_its_correlation_with_accuracy():
    s = drift_by_system({"S": [0.1, 0.2, 0.3, 0.4, None], "T": [None]})
    # S: n 4, 1 excluded; mean .25; median (.2 + .3) / 2 = .25; q1 at position 3 * .25 = .75 -> .1 + .75 * .1
    # = .175; q3 at 2.25 -> .3 + .25 * .1 = .325; IQR .15
    a = s["S"]
    assert (a.n, a.n_excluded) == (4, 1)
    assert (a.mean, a.median, a.q1, a.q3, a.iqr) == pytest.approx((0.25, 0.25, 0.175, 0.325, 0.15))
    assert s["T"] == summarize([None]) and s["T"].n == 0 and s["T"].median is None and s["T"].n_excluded == 1
    medians = {f"S{i}": summarize([m]) for i, m in enumerate([0.1, 0.2, 0.3, 0.4], 1)} | {"S5": summarize([])}
    acc = {"S1": 0.2, "S2": 0.4, "S3": 0.5, "S4": 0.9, "S5": 0.7, "S6": 0.1}
    c = drift_accuracy_correlation(medians, acc)
    # x .1 .2 .3 .4 (dx -.15 -.05 .05 .15), y .2 .4 .5 .9 (mean .5, dy -.3 -.1 0 .4):
    # sum dx dy = .045 + .005 + 0 + .06 = .11; sum dx2 = .05; sum dy2 = .26; r = .11 / sqrt(.013) = .964764
    # t = r sqrt(2) / sqrt(1 - r2) = 5.1854; two-sided p with 2 df = 1 - t / sqrt(t2 + 2) = .03523
    assert (c.n, c.n_excluded) == (4, 2)  # S5 has no median, S6 no drift at all
    assert c.pearson == pytest.approx(0.11 / math.sqrt(0.013))
    assert c.pearson_p == pytest.approx(0.03523, abs=1e-4)
    assert c.spearman == pytest.approx(1.0)  # same ranks
    assert drift_accuracy_correlation(medians, acc, statistic="mean").pearson == pytest.approx(c.pearson)


def test_correlation_is_undefined_when_too_small_or_constant():
    assert correlation([1, 2], [2, 1]).pearson is None  # 2 pairs
    flat = correlation([1, 1, 1], [1, 2, 3])
    assert flat.n == 3 and flat.pearson is None and flat.spearman is None
    assert system_correlation({"a": 1.0}, {"b": 2.0}).n_excluded == 2
    with pytest.raises(ValueError, match="differ in length"):
        correlation([1.0], [])


def test_binned_accuracy():
    b = binned_accuracy([0.0, 0.1, 0.15, 0.3, 0.59, 0.6, 2.0, None], [1, 0.5, True, False, 1, 0, 0, 1], [0.15, 0.6])
    # (-inf, .15): 0.0 -> 1, 0.1 -> .5: mean .75; [.15, .6): .15 T, .3 F, .59 1: 2/3; [.6, inf): .6, 2.0: 0
    assert [(x.low, x.high, x.n) for x in b.bins] == [(None, 0.15, 2), (0.15, 0.6, 3), (0.6, None, 2)]
    assert [x.accuracy for x in b.bins] == pytest.approx([0.75, 2 / 3, 0.0])
    assert b.n == 7 and b.n_excluded == 1
    assert b.accuracy == pytest.approx(3.5 / 7)  # (1 + .5 + 1 + 0 + 1 + 0 + 0) / 7
    empty = binned_accuracy([], [], [1.0])
    assert empty.accuracy is None and [x.accuracy for x in empty.bins] == [None, None]
    with pytest.raises(ValueError, match="increase"):
        binned_accuracy([1.0], [True], [2.0, 1.0])


def test_hop_distance_of_multi_hop_evidence():
    emb = {("a", 1): [1.0, 0.0], ("a", 4): [0.0, 1.0], ("a", 6): [1.0, 1.0], ("b", 2): [1.0, 0.0]}
    d = hop_distance([C("a.pdf", 1), C("a", 4), C("a", 4), C("a", 6), C("a", None)], emb)
    assert d is not None and d.same_document
    # pairs: (a1, a4) 1 - 0 = 1, gap 3; (a1, a6) 1 - 1/sqrt2, gap 5; (a4, a6) 1 - 1/sqrt2, gap 2
    assert [(p.a.page, p.b.page, p.page_gap) for p in d.pairs] == [(1, 4, 3), (1, 6, 5), (4, 6, 2)]
    assert d.semantic == pytest.approx((1 + 2 * (1 - 1 / R2)) / 3)  # 0.528595
    assert d.physical == pytest.approx(10 / 3)  # (3 + 5 + 2) / 3
    cross = hop_distance([C("a", 1), C("b", 2)], emb)
    assert cross is not None and not cross.same_document and cross.physical is None
    assert cross.semantic == pytest.approx(0.0) and cross.pairs[0].page_gap is None
    assert hop_distance([C("a", 1)], emb) is None  # one page: no pair
    assert hop_distance([C("a", 1), C("c", 9)], emb) is None  # c/9 has no embedding


def test_distance_vs_accuracy():
    def hd(same, sem, phys):
        return HopDistance(same, sem, phys, ())

    dist = {
        "s1": hd(True, 0.1, 1.0),
        "s2": hd(True, 0.2, 5.0),
        "s3": hd(True, 0.5, 2.0),
        "s4": hd(True, 0.7, 3.0),
        "c1": hd(False, 0.65, None),
        "n1": None,
    }
    acc = {"s1": 1.0, "s2": 0.8, "s3": 0.4, "s4": 0.0, "c1": True}
    same = distance_vs_accuracy(dist, acc, same_document=True)
    # bins 0-.15: s1 1.0; .15-.3: s2 .8; .3-.45: none; .45-.6: s3 .4; .6+: s4 0; overall (1 + .8 + .4 + 0) / 4
    assert [x.n for x in same.by_semantic.bins] == [1, 1, 0, 1, 1]
    assert [x.accuracy for x in same.by_semantic.bins] == pytest.approx([1.0, 0.8, None, 0.4, 0.0])
    assert same.by_semantic.accuracy == pytest.approx(0.55)
    # semantic: dx -.275 -.175 .125 .325, dy .45 .25 -.15 -.55: sum dxdy -.365, dx2 .2275, dy2 .59
    assert same.semantic_r.pearson == pytest.approx(-0.365 / math.sqrt(0.2275 * 0.59))  # -0.996269
    assert same.semantic_r.spearman == pytest.approx(-1.0)
    # physical 1 5 2 3: dx -1.75 2.25 -.75 .25; sum dxdy -.25, dx2 8.75 -> r = -.25 / sqrt(8.75 * .59) = -.11003
    assert same.physical_r is not None
    assert same.physical_r.pearson == pytest.approx(-0.25 / math.sqrt(8.75 * 0.59))
    # ranks x 1 4 2 3, y 4 3 2 1: d2 = 9 + 1 + 0 + 4 = 14 -> rho = 1 - 6 * 14 / (4 * 15) = -0.4
    assert same.physical_r.spearman == pytest.approx(-0.4)
    assert same.n_no_distance == 1
    cross = distance_vs_accuracy(dist, acc, same_document=False)
    assert [x.n for x in cross.by_semantic.bins] == [0, 0, 0, 0, 1] and cross.by_semantic.accuracy == 1.0
    assert cross.physical_r is None and cross.semantic_r.pearson is None  # one question


def test_elapsed_seconds():
    assert elapsed_seconds({"elapsed_s": 0}) == 0.0
    assert elapsed_seconds({"elapsed_s": 12.5, "started_at": "x"}) == 12.5
    span = {"started_at": "2026-12-01T08:00:00.000Z", "ended_at": "2026-12-01T08:10:00.500Z"}
    assert elapsed_seconds(span) == 600.5  # 10 min 0.5 s
    assert elapsed_seconds({"elapsed_s": -1, **span}) == 600.5  # a negative elapsed_s is unknown
    for bad in (True, float("nan"), "60"):
        assert elapsed_seconds({"elapsed_s": bad}) is None
    assert elapsed_seconds({}) is None
    assert elapsed_seconds({"started_at": span["ended_at"], "ended_at": span["started_at"]}) is None  # negative
    assert elapsed_seconds({"started_at": "yesterday", "ended_at": span["ended_at"]}) is None
    assert elapsed_seconds({"started_at": "2026-12-01T08:00:00", "ended_at": span["ended_at"]}) is None  # naive


def test_time_vs_accuracy():
    secs = [30, 45, 90, 200, 300, 700, None]
    correct = [True, True, False, True, None, False, True]
    r = time_vs_accuracy(secs, correct)
    # times known: 30 45 90 200 300 700: median (90 + 200) / 2 = 145, mean 1365 / 6 = 227.5,
    # q1 at 1.25 -> 45 + .25 * 45 = 56.25; q3 at 3.75 -> 200 + .75 * 100 = 275
    t = r.seconds
    assert (t.n, t.n_excluded) == (6, 1)
    assert (t.median, t.mean, t.q1, t.q3, t.iqr) == pytest.approx((145, 227.5, 56.25, 275, 218.75))
    # bins <60: 30, 45 right -> 1.0; 60-120: 90 wrong -> 0; 120-240: 200 right -> 1; 240-600: 300 unscored -> none;
    # >= 600: 700 wrong -> 0; binned 5, excluded 2 (unscored 300, unknown time); overall 3/5
    assert [x.n for x in r.bins.bins] == [2, 1, 1, 0, 1]
    assert [x.accuracy for x in r.bins.bins] == [1.0, 0.0, 1.0, None, 0.0]
    assert (r.bins.n, r.bins.n_excluded, r.bins.accuracy) == (5, 2, 0.6)
    # pairs (30,1) (45,1) (90,0) (200,1) (700,0): x mean 213, dx -183 -168 -123 -13 487; dy .4 .4 -.6 .4 -.6
    # sum dxdy = -73.2 - 67.2 + 73.8 - 5.2 - 292.2 = -364; dx2 = 314180; dy2 = 1.2 -> r = -364 / sqrt(377016)
    assert r.r.pearson == pytest.approx(-364 / math.sqrt(314180 * 1.2))  # -0.592819
    assert r.r.n == 5


def test_the_writers_lines_are_read():
    """Contract: the lines `madqa human` and the search agent write give trajectories and response times."""
    from datetime import UTC, datetime, timedelta

    from madqa.agents.search_loop.tools import SearchRecord
    from madqa.space.human.session import QuestionSession, build_human_record

    ticks = iter([datetime(2026, 12, 1, 8, 0, tzinfo=UTC) + timedelta(seconds=s) for s in (0, 10, 20, 95)])
    session = QuestionSession({"id": "i1", "question": "q?"}, clock=lambda: next(ticks))
    session.record_search("alpha", [("a.pdf", 1)])  # t = 10 s
    session.record_search("beta", [("a.pdf", 3), ("b.pdf", 2)])  # t = 20 s
    line = build_human_record(session, ["x"], annotator="ann", batch="b", split="dev", mode="search", gave_up=False)
    assert elapsed_seconds(line) == 95.0  # started at 0, submitted at 95 s
    searches = parse_search_history(line["search_history"])
    assert searches == (step("alpha", ("a.pdf", 1)), step("beta", ("a.pdf", 3), ("b.pdf", 2)))
    assert first_hit(searches, GOLD["i1"], "document") == 1 and first_hit(searches, GOLD["i1"], "page") == 2
    agent = [SearchRecord("gamma", [{"document": "a.pdf", "page": 3}], 1).as_dict(), SearchRecord("bad q").as_dict()]
    assert parse_search_history(agent) == (step("gamma", ("a.pdf", 3)), step("bad q"))
