"""Per-item definitions: ANLS* thresholds, Page/Doc F1 (F.2), hop type, H.3 error taxonomy."""

from __future__ import annotations

import doctest

import pytest

from madqa.metric import scoring
from madqa.metric.schema import Citation, Prediction, Reference
from madqa.metric.scoring import anls_star, doc_f1, doc_key, error_type, f1, hop_type, page_f1, score_item


def ref(variants=(("Paris",),), evidence=(("a.pdf", 2),), rid="q1") -> Reference:
    ev = tuple(Citation(d, p) for d, p in evidence)
    return Reference(rid, "Q?", tuple(tuple(v) for v in variants), ev, hop_type(ev) or "single")


def pred(answer=("Paris",), citations=(), steps=1) -> Prediction:
    return Prediction("q1", None, tuple(answer), tuple(Citation(d, p) for d, p in citations), steps, 1)


@pytest.mark.parametrize(
    ("answer", "variants", "expected"),
    [
        (["Paris"], [["paris"]], 1.0),  # case-insensitive
        ([" paris  "], [["Paris"]], 1.0),  # whitespace
        (["Pari"], [["Paris"]], 0.8),  # 1 - 1/5
        (["abxy"], [["abcd"]], 0.5),  # exactly at the threshold: kept
        (["axyz"], [["abcd"]], 0.0),  # 1 - 3/4 = 0.25 < 0.5: zeroed
        (["x"], [["abc"], ["x"]], 1.0),  # max over variants
        (["alpha"], [["alpha", "beta"]], 0.5),  # list: 1 of 2 matched
        (["alpha"], [["alpha", "beta", "gamma"]], pytest.approx(1 / 3)),
        (["beta", "alpha"], [["alpha", "beta"]], 1.0),  # order-free matching
        ([], [["x"]], 0.0),
        (["x", "extra"], [["x"]], 0.5),  # hallucinated item penalised
    ],
)
def test_anls_star_values(answer, variants, expected):
    assert anls_star(answer, variants) == expected


@pytest.mark.parametrize(
    "answer", [["Paris"], [""], [" "], ["a", "a"], [" x ", "Y"], [], ["12,345 kg", "item 3 of 7"], ["é", "ß"]]
)
def test_an_answer_identical_to_a_variant_scores_what_anls_star_gives(answer):
    """The shortcut for an answer equal to a variant (no Levenshtein work) is the package's own value."""
    from anls_star import anls_score

    assert anls_star(answer, [["other"], answer]) == float(anls_score(list(answer), list(answer))) == 1.0


def test_anls_mode_correctness_threshold():
    assert score_item(ref(variants=[["abcd"]]), pred(["abxy"])).correct is True
    assert score_item(ref(variants=[["abcd"]]), pred(["axyz"])).correct is False
    assert score_item(ref(variants=[["abcd"]]), pred(["abxy"])).score == 1.0  # binary in anls mode


def test_f1_definitions():
    assert f1({1, 2}, {2, 3}) == 0.5
    assert f1(set(), {1}) == 0.0  # no citations
    assert f1({9}, {1}) == 0.0
    assert f1({1}, set()) == 0.0
    assert f1({1, 2, 3, 4}, {1}) == pytest.approx(2 * 0.25 * 1 / 1.25)


def test_page_and_doc_f1_unique_units_and_duplicates():
    ev = [Citation("a.pdf", 2), Citation("a.pdf", 5)]
    dup = [Citation("a.pdf", 2), Citation("a.pdf", 2), Citation("a.pdf", 2)]
    assert page_f1(dup, ev) == pytest.approx(2 / 3)  # P = 1, R = 1/2
    assert doc_f1(dup, ev) == 1.0
    assert page_f1([], ev) == 0.0 and doc_f1([], ev) == 0.0
    # wrong page of the right document: doc 1, page 0
    assert page_f1([Citation("a.pdf", 9)], ev) == 0.0
    assert doc_f1([Citation("a.pdf", 9)], ev) == 1.0
    # a whole-document citation (page None) counts for Doc F1 only
    assert page_f1([Citation("a.pdf", None)], ev) == 0.0
    assert doc_f1([Citation("a.pdf", None)], ev) == 1.0
    # cross-doc: one of two documents, with one extra document
    ev2 = [Citation("a.pdf", 1), Citation("b.pdf", 1)]
    assert doc_f1([Citation("a.pdf", 1), Citation("z.pdf", 3)], ev2) == 0.5
    assert page_f1([Citation("a.pdf", 1), Citation("z.pdf", 3)], ev2) == 0.5


def test_doc_key_normalisation():
    assert doc_key("corpus/sub/Report.PDF") == "Report"
    assert doc_key("C:\\docs\\report.pdf ") == "report"
    assert doc_key("report") == doc_key("report.pdf")
    assert doc_key("Report") != doc_key("report")  # case kept
    assert page_f1([Citation("x/a.pdf", 2)], [Citation("a", 2)]) == 1.0


def test_hop_type_matches_loading_script_definition():
    from madqa.loading_script.features import hop_type as dataset_hop_type

    cases = [
        [("a.pdf", 2)],
        [("a.pdf", 2), ("a.pdf", 2)],
        [("a.pdf", 2), ("a.pdf", 5)],
        [("a.pdf", 2), ("b.pdf", 1)],
        [],
    ]
    for case in cases:
        ours = hop_type([Citation(d, p) for d, p in case])
        theirs = dataset_hop_type([{"document": d, "page": p} for d, p in case])
        assert ours == theirs, case


def test_error_taxonomy():
    assert error_type([], 1.0, 1.0) == "no_answer"  # empty answer wins over citations
    assert error_type(["  "], 0.0, 0.0) == "no_answer"
    assert error_type(["x"], 0.0, 0.0) == "retrieval"
    assert error_type(["x"], 0.0, 0.4) == "navigation"
    assert error_type(["x"], 0.3, 1.0) == "comprehension"
    r = ref(evidence=[("a.pdf", 2)])
    assert score_item(r, pred(["Rome"], [])).error == "retrieval"
    assert score_item(r, pred(["Rome"], [("b.pdf", 2)])).error == "retrieval"
    assert score_item(r, pred(["Rome"], [("a.pdf", 3)])).error == "navigation"
    assert score_item(r, pred(["Rome"], [("a.pdf", 2)])).error == "comprehension"
    assert score_item(r, pred([], [("a.pdf", 2)])).error == "no_answer"
    assert score_item(r, pred(["Paris"], [])).error is None  # correct items have no error
    missing = score_item(r, None)
    assert (missing.correct, missing.error, missing.source, missing.missing, missing.page_f1) == (
        False,
        "no_answer",
        "missing",
        True,
        0.0,
    )


def test_judge_scores_pass_through_and_unscored():
    r = ref()
    partial = score_item(r, pred(["Paris, France"]), score=0.5, source="judge")
    assert (partial.score, partial.correct, partial.error) == (0.5, True, None)
    unscored = score_item(r, pred(["Paris, France"]), score=None, source="unscored")
    assert (unscored.score, unscored.correct, unscored.error) == (None, None, None)


def test_module_doctests():
    assert doctest.testmod(scoring).failed == 0
