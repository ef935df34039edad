"""The Whoosh backend's preloaded wildcard unions (issue 47): a prefix or wildcard of a few hundred words is read
in full into one scored list instead of Whoosh's lazily re-planned union tree. Same pages, same scores (bit for
bit), same order as the lazy path and as the public harness's set-up; the work stays inside the search limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from madqa.agents.corpus.search import Deadline, SearchTimeoutError, open_index, whoosh_deadline

EDGE = ["rep* NOT colour", "(rep* OR colo*) AND engine", "ka* OR bu*", "r?p*rt", "*port", "report ANDMAYBE rep*"]


@pytest.fixture
def union_trees(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Whoosh picks its union tree (what the release-size index gets) even on a small index, and the kinds of
    matcher ``preloaded_union`` returned are recorded, so a test can see that the new path ran."""
    from whoosh.query import Or

    monkeypatch.setattr(
        Or, "matcher_type", Or.DEFAULT_MATCHER
    )  # Whoosh's own switch: otherwise arrays below 5,001 pages
    seen: list[str] = []
    real = whoosh_deadline.preloaded_union

    def recording(matcher, deadline=None):  # type: ignore[no-untyped-def]
        out = real(matcher, deadline)
        seen.append(type(out).__name__)
        return out

    monkeypatch.setattr(whoosh_deadline, "preloaded_union", recording)
    return seen


def _pages_with_scores(index, query: str, k: int) -> list[tuple[str, int, float]]:  # type: ignore[no-untyped-def]
    return [(h.document, h.page, h.score) for h in index.search(query, k)]


def _compare(pages: list[dict], queries: list[str], folder: Path, seen: list[str]) -> None:  # type: ignore[type-arg]
    from madqa.bench.search_index import HarnessStyleWhoosh

    harness = HarnessStyleWhoosh.build(pages, folder / "harness")
    ours = open_index(pages, folder / "ours", progress=False)
    for query in queries:
        for k in (5, 50):
            ours.preload_unions = False  # type: ignore[attr-defined]
            lazy = _pages_with_scores(ours, query, k)
            ours.preload_unions = True  # type: ignore[attr-defined]
            assert _pages_with_scores(ours, query, k) == lazy, query
            assert _pages_with_scores(harness, query, k) == lazy, query
    assert seen.count("PreloadedMatcher") >= 10, seen  # the new path ran, not only the unchanged one


@pytest.mark.slow
def test_same_results_as_the_lazy_union_and_the_harness_on_a_synthetic_corpus(
    tmp_path: Path, union_trees: list[str]
) -> None:
    from madqa.bench.search_corpus import CorpusSpec, synthetic_pages, synthetic_queries

    pages = synthetic_pages(CorpusSpec(seed=7).scaled(120))
    queries = synthetic_queries(pages, 120, seed=7)  # 120: every kind of query (prefixes come 86th to 95th)
    assert sum("*" in q or "?" in q for q in queries) >= 10
    _compare(pages, queries + EDGE, tmp_path, union_trees)


def test_same_results_as_the_lazy_union_and_the_harness_on_the_sample(
    built_home: Path, tmp_path: Path, union_trees: list[str]
) -> None:
    from madqa.loading_script.load import load_pages

    pages = [dict(p) for p in load_pages("sample")]
    words = sorted({w for p in pages for w in (p.get("text") or "").lower().split() if w.isalpha() and len(w) > 4})
    prefixes = sorted({w[:3] + "*" for w in words})[:40] + sorted({w[:2] + "?" + w[3:5] + "*" for w in words})[:10]
    _compare(pages, prefixes + EDGE + ["invoice OR tot*", "total* AND amount"], tmp_path, union_trees)


def test_negated_queries_keep_the_lazy_union(tmp_path: Path, union_trees: list[str]) -> None:
    """With NOT, ANDNOT or ANDMAYBE anywhere, the lazy union (and its block-skipping quirk) stays, as the harness."""
    from madqa.bench.search_corpus import CorpusSpec, synthetic_pages

    index = open_index(synthetic_pages(CorpusSpec(seed=7).scaled(60)), tmp_path, progress=False)
    for query in ("ka* NOT bu", "ka* ANDNOT bu", "ka* ANDMAYBE bu", "(ka* OR bu*) AND NOT ce"):
        index.search(query, 5)
    assert union_trees == []


def test_preloading_checks_the_deadline_before_each_word(tmp_path: Path, union_trees: list[str]) -> None:
    """Reading the words is bounded: before the search the limits count the words and their page entries (the
    same budget as the lazy path), and while reading, the safety net is checked before each word's postings."""
    from madqa.agents.corpus.search import QueryTooBroadError, SearchLimits
    from madqa.bench.search_corpus import CorpusSpec, synthetic_pages

    index = open_index(synthetic_pages(CorpusSpec(seed=7).scaled(60)), tmp_path, progress=False)
    ours = index._ix  # type: ignore[attr-defined]
    from whoosh.query import Prefix

    from madqa.agents.corpus.search.whoosh_deadline import pinned_terms_class

    with ours.searcher() as searcher:
        words = tuple(w for w in searcher.lexicon("text") if w.startswith(b"ka"))
        assert len(words) >= 3
        ticks = iter([0.0] + [0.0] * 2 + [10.0] * 100)  # the clock passes the deadline after two words
        deadline = Deadline("ka*", 5.0, clock=lambda: next(ticks))
        pinned = pinned_terms_class()(Prefix("text", "ka"), words, deadline, True)
        with pytest.raises(SearchTimeoutError):
            whoosh_deadline.preloaded_union(pinned._matcher(searcher), deadline)
    index.limits = SearchLimits(max_postings=10)  # type: ignore[attr-defined]
    with pytest.raises(QueryTooBroadError):
        index.search("ka*", 5)
    assert union_trees == []  # refused by the budget before any posting list was read
