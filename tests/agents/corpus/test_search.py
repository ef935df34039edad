"""The page search index: query syntax on both backends, parity with the harness, caching, errors, threads."""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

import pytest

from madqa.agents.corpus import search as search_mod
from madqa.agents.corpus.search import PageHit, QuerySyntaxError, SearchIndex, open_index, prepare_pages

TEXTS = {
    ("alpha.pdf", 1): "Annual report of the Bell 407 helicopter: accessories and engine specifications.",
    ("alpha.pdf", 2): "The engine overhaul report lists reports on incorporation.",
    ("alpha.pdf", 3): "Colour and color charts; the reporting period ended in 2019.",
    ("beta.pdf", 1): "Incorporation of the company: date 12 March 1999, U.S. office.",
    ("beta.pdf", 2): "Accessories catalogue: mirrors, lamps, Bell brackets.",
    ("beta.pdf", 3): "",
    ("gamma.pdf", 1): "Engine specifications without accessories; annual report.",
    ("gamma.pdf", 2): "rapport repart report e-mail contact",
}
PAGES = [{"document": d, "page": p, "text": t, "text_source": "pdf"} for (d, p), t in TEXTS.items()]
ALL = set(TEXTS)

#: query -> the pages it must match (every match, so k is large).
SYNTAX_CASES = {
    "engine specifications": {("alpha.pdf", 1), ("gamma.pdf", 1)},  # AND by default
    "engine AND specifications": {("alpha.pdf", 1), ("gamma.pdf", 1)},
    "engine OR incorporation": {("alpha.pdf", 1), ("alpha.pdf", 2), ("gamma.pdf", 1), ("beta.pdf", 1)},
    "engine NOT accessories": {("alpha.pdf", 2)},
    "NOT engine": ALL - {("alpha.pdf", 1), ("alpha.pdf", 2), ("gamma.pdf", 1)},
    "(engine OR lamps) AND accessories": {("alpha.pdf", 1), ("gamma.pdf", 1), ("beta.pdf", 2)},
    '"Bell 407"': {("alpha.pdf", 1)},
    '"407 Bell"': set(),
    '"Bell 407" AND accessories': {("alpha.pdf", 1)},
    '"report of the Bell"': {("alpha.pdf", 1)},  # stop words inside a phrase are skipped, as in Whoosh
    "report*": {("alpha.pdf", 1), ("alpha.pdf", 2), ("alpha.pdf", 3), ("gamma.pdf", 1), ("gamma.pdf", 2)},
    "rep?rt": {("alpha.pdf", 1), ("alpha.pdf", 2), ("gamma.pdf", 1), ("gamma.pdf", 2)},
    "colo*r": {("alpha.pdf", 3)},
    "r?p*rt": {("alpha.pdf", 1), ("alpha.pdf", 2), ("gamma.pdf", 1), ("gamma.pdf", 2)},
    "incorporat* AND date": {("beta.pdf", 1)},
    "U.S. office": {("beta.pdf", 1)},
    "e-mail": {("gamma.pdf", 2)},
    "ENGINE Specifications": {("alpha.pdf", 1), ("gamma.pdf", 1)},
    "document:beta.pdf": {("beta.pdf", 1), ("beta.pdf", 2), ("beta.pdf", 3)},
    "zebra": set(),
}


def _tantivy_or_skip(backend: str) -> None:
    if backend == "tantivy":
        pytest.importorskip("tantivy")


@pytest.fixture(scope="module", params=["whoosh", "tantivy"])
def backend(request: pytest.FixtureRequest) -> str:
    _tantivy_or_skip(request.param)
    return str(request.param)


@pytest.fixture(scope="module")
def shared_index(backend: str, tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """One fixture index per backend for the read-only tests."""
    return open_index(PAGES, tmp_path_factory.mktemp("index"), backend=backend, progress=False)  # type: ignore[arg-type]


@pytest.fixture
def index(backend: str, tmp_path: Path) -> SearchIndex:
    """A fresh index for tests that close it."""
    return open_index(PAGES, tmp_path / "index", backend=backend, progress=False)  # type: ignore[arg-type]


def _pages(hits: list[PageHit]) -> set[tuple[str, int]]:
    return {(h.document, h.page) for h in hits}


@pytest.mark.parametrize("query", list(SYNTAX_CASES))
def test_syntax_matches_expected_pages(shared_index: SearchIndex, query: str) -> None:
    assert _pages(shared_index.search(query, k=100)) == SYNTAX_CASES[query]


def test_results_are_ranked_page_hits(shared_index: SearchIndex) -> None:
    hits = shared_index.search("engine report", k=5)
    assert all(isinstance(h, PageHit) and isinstance(h.page, int) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(shared_index.search("report*", k=2)) == 2
    assert isinstance(shared_index, SearchIndex)


@pytest.mark.parametrize("query", ["", "   ", "the of", "AND OR NOT", '"', "a", "x" * 2001, "(", "can't"])
def test_unsearchable_queries_raise_a_helpful_error(shared_index: SearchIndex, query: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        shared_index.search(query)
    message = str(info.value)
    assert isinstance(info.value, ValueError) and info.value.query == query
    assert "Query syntax" in message or "distinctive words" in message


def test_stop_word_message_names_the_cause(shared_index: SearchIndex) -> None:
    with pytest.raises(QuerySyntaxError, match="stop words"):
        shared_index.search("the of and")


@pytest.mark.parametrize("k", [0, -1, True, 2.5])
def test_bad_k(shared_index: SearchIndex, k: object) -> None:
    with pytest.raises(ValueError):
        shared_index.search("engine", k=k)  # type: ignore[arg-type]


def test_no_results_message_is_actionable() -> None:
    assert "synonyms" in search_mod.no_results_message("zebra") and "zebra" in search_mod.no_results_message("zebra")


def test_reopen_reuses_the_index_and_gives_identical_results(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_index(PAGES, tmp_path, backend=backend, progress=False)  # type: ignore[arg-type]
    expected = {q: first.search(q, 10) for q in SYNTAX_CASES}
    first.close()  # type: ignore[attr-defined]
    engine = importlib.import_module(f"madqa.agents.corpus.search.{backend}_backend")

    def no_rebuild(*args: object, **kwargs: object) -> None:
        raise AssertionError("the index was rebuilt although the pages did not change")

    monkeypatch.setattr(engine, "build", no_rebuild)
    again = open_index([dict(p) for p in PAGES], tmp_path, backend=backend, progress=False)  # type: ignore[arg-type]
    assert {q: again.search(q, 10) for q in SYNTAX_CASES} == expected


def test_changed_pages_rebuild(backend: str, tmp_path: Path) -> None:
    open_index(PAGES, tmp_path, backend=backend, progress=False)  # type: ignore[arg-type]
    changed = [dict(p) for p in PAGES]
    changed[-1]["text"] = "zebra crossing"
    index = open_index(changed, tmp_path, backend=backend, progress=False)  # type: ignore[arg-type]
    assert _pages(index.search("zebra")) == {("gamma.pdf", 2)}
    assert len([p for p in tmp_path.iterdir() if p.name.startswith(backend)]) == 2  # both versions kept


def test_incomplete_index_folder_is_rebuilt(tmp_path: Path) -> None:
    open_index(PAGES, tmp_path, progress=False)
    (folder,) = tmp_path.iterdir()
    (folder / search_mod.MANIFEST).unlink()
    index = open_index(PAGES, tmp_path, progress=False)
    assert _pages(index.search("lamps")) == {("beta.pdf", 2)}
    assert (folder / search_mod.MANIFEST).is_file()


def test_concurrent_searches_from_threads(shared_index: SearchIndex) -> None:
    queries = list(SYNTAX_CASES)
    expected = {q: shared_index.search(q, 10) for q in queries}
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(offset: int) -> None:
        try:
            barrier.wait()
            for i in range(60):
                q = queries[(i + offset) % len(queries)]
                assert shared_index.search(q, 10) == expected[q]
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_whoosh_matches_the_harness_exactly(tmp_path: Path) -> None:
    """Same pages, scores and order as the public harness's Whoosh set-up, on the fixture and a synthetic corpus."""
    from madqa.bench.search_corpus import CorpusSpec, synthetic_pages, synthetic_queries
    from madqa.bench.search_index import HarnessStyleWhoosh

    pages = PAGES + synthetic_pages(CorpusSpec(seed=3).scaled(80))
    harness = HarnessStyleWhoosh.build(pages, tmp_path / "harness")
    ours = open_index(pages, tmp_path / "ours", progress=False)
    edge = ["*port", "r?p*rt", "?ngine", "report NOT zzzzz", "rep* NOT colour", "(rep* OR colo*) AND NOT e*"]
    queries = [q for q in SYNTAX_CASES if not q.startswith("document:")] + edge + synthetic_queries(pages, 60, seed=3)
    for query in queries:
        for k in (5, 50):
            assert ours.search(query, k) == harness.search(query, k), query


def test_whoosh_wildcards_without_the_word_list(tmp_path: Path) -> None:
    """An index folder without ``words.txt`` expands wildcards from Whoosh's lexicon, with the same results."""
    from madqa.agents.corpus.search.whoosh_backend import WORDS_FILE, WhooshIndex

    index = open_index(PAGES, tmp_path, progress=False)
    expected = {q: index.search(q, 10) for q in ("report*", "rep?rt", "*port", "colo*r OR lamps")}
    folder = index.folder  # type: ignore[attr-defined]
    (folder / WORDS_FILE).unlink()
    assert {q: WhooshIndex(folder).search(q, 10) for q in expected} == expected


@pytest.mark.slow
def test_tantivy_matches_whoosh_pages_for_wildcards_and_boolean_queries(tmp_path: Path) -> None:
    """Same matching pages as Whoosh (every match), and mostly the same top 5."""
    pytest.importorskip("tantivy")
    from madqa.bench.search_corpus import CorpusSpec, synthetic_pages, synthetic_queries

    pages = synthetic_pages(CorpusSpec(seed=5).scaled(100))
    whoosh = open_index(pages, tmp_path, backend="whoosh", progress=False)
    tantivy = open_index(pages, tmp_path, backend="tantivy", progress=False)
    queries = synthetic_queries(pages, 120, seed=5) + ["*bu", "?a*", "ka?e OR *ci", "NOT ka*"]
    assert sum("*" in q or "?" in q for q in queries) >= 15
    same_top = 0
    for query in queries:
        assert _pages(tantivy.search(query, 1000)) == _pages(whoosh.search(query, 1000)), query
        same_top += _pages(tantivy.search(query, 5)) == _pages(whoosh.search(query, 5))
    assert same_top / len(queries) >= 0.8


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"document": "", "page": 1, "text": "x"}], "document"),
        ([{"document": "a.pdf", "page": 0, "text": "x"}], "positive integer"),
        ([{"document": "a.pdf", "page": "2", "text": "x"}], "positive integer"),
        ([{"document": "a.pdf", "page": 1, "text": "x"}, {"document": "a.pdf", "page": 1, "text": "y"}], "twice"),
    ],
)
def test_invalid_pages_rows(rows: list[dict[str, object]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        prepare_pages(rows)


def test_unknown_backend(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="backend"):
        open_index(PAGES, tmp_path, backend="lucene")  # type: ignore[arg-type]


def test_closed_index_refuses_searches(index: SearchIndex) -> None:
    index.close()  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError):
        index.search("engine")


def test_analyzer_equals_whoosh_standard_analyzer() -> None:
    from whoosh.analysis import StandardAnalyzer

    from madqa.agents.corpus.search.query import analyze

    samples = [t for t in TEXTS.values()] + ["İstanbul ÜBER straße 3.5kg e.g. a_b __x__ 1.2.3 ﬁne Ⅻ", "x.y. Z"]
    analyzer = StandardAnalyzer()
    for text in samples:
        assert analyze(text) == [t.text for t in analyzer(text)], text


def test_bench_helpers_measure_and_report(tmp_path: Path) -> None:
    """The bench's in-process parts: corpus shape, one set-up's measurement, agreement and the report."""
    import pickle

    from madqa.bench.search import format_report
    from madqa.bench.search_corpus import CorpusSpec, document_lengths, synthetic_pages, synthetic_queries
    from madqa.bench.search_index import agreement, measure_setup

    lengths = document_lengths(CorpusSpec())
    assert (len(lengths), sum(lengths), max(lengths), sorted(lengths)[len(lengths) // 2]) == (800, 18619, 859, 5)
    pages = synthetic_pages(CorpusSpec().scaled(30))
    with open(tmp_path / "pages.pickle", "wb") as f:
        pickle.dump(pages, f)
    queries = synthetic_queries(pages, 20)
    row = measure_setup("whoosh", str(tmp_path / "pages.pickle"), str(tmp_path / "ix"), queries, 5)
    ref = measure_setup("harness", str(tmp_path / "pages.pickle"), str(tmp_path / "h"), queries, 5)
    row["agreement"] = agreement(row.pop("top"), ref.pop("top"))
    assert row["agreement"] == {"identical": 1.0, "jaccard": 1.0}
    report = {
        "corpus": {"pages": 30, "documents": 3, "tokens": 1, "seed": 0},
        "corpus_seconds": 0.1,
        "queries": 20,
        "k": 5,
        "cpus": 2,
        "setups": {"harness": ref, "whoosh": row},
        "notes": ["n"],
        "render": None,
    }
    text = "\n".join(format_report(report))
    assert "identical 100.0%" in text and "whoosh backend" in text
