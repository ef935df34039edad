"""A search limit that is the same on every machine (issue 39): work limits decide a query's result, the wall-clock
safety net only ever makes an infrastructure error.

Both backends run on one synthetic corpus built here (2,000 pages of random six-letter words): the work limits
(words expanded, page entries read) are counted from it exactly, and the clocks are injected, so no result here
depends on how fast or how loaded the machine is.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.search_corpus import BACKENDS, synthetic_pages
from helpers.ticks import Ticks

from madqa.agents.corpus.search import (
    DEFAULT_SEARCH_TIMEOUT,
    MAX_EXPANSION_TERMS,
    MAX_POSTINGS,
    QuerySyntaxError,
    QueryTooBroadError,
    SearchLimits,
    SearchTimeoutError,
    open_index,
)
from madqa.agents.corpus.search.query import analyze
from madqa.agents.harness.errors import RETRYABLE, classify, kind_of_line

#: The wall-clock limit the searches had before issue 39: a search past it showed the model "narrow the query".
OLD_LIMIT_S = 5.0
#: What one unit of work between two clock readings costs on a quiet machine (Whoosh opens an expanded word's posting
#: list in 0.1 to 0.2 ms), and how much slower the slow clock says the machine is.
QUIET_TICK_S, SLOWER = 0.0002, 100


def _pages() -> list[dict[str, Any]]:
    pages = synthetic_pages(seed=39, words=20_000, n_pages=2000)
    pages[2]["text"] = "bell maintenance schedule " + pages[2]["text"]
    return pages


PAGES = _pages()
#: Pages each word is on (its page entries in either index).
DF = Counter(w for p in PAGES for w in set(analyze(p["text"])))


def _entries(pred: Any) -> int:
    return sum(n for w, n in DF.items() if pred(w))


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("work_limits_index")


def _open(root: Path, backend: str) -> Any:
    if backend == "tantivy":
        pytest.importorskip("tantivy", reason="the tantivy backend needs the optional tantivy package")
    return open_index(PAGES, root, backend=backend, progress=False)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def index(request: pytest.FixtureRequest, index_root: Path) -> Iterator[Any]:
    """A fresh handle on the module's index (built once per backend), with the default limits."""
    idx = _open(index_root, request.param)
    yield idx
    idx.close()


class _Renderer:
    def text(self, document: str, page: int) -> str:
        return f"text of {document} p{page}"


def _tool(index: Any) -> Any:
    from madqa.agents.search_loop.tools import SearchDocumentsTool

    return SearchDocumentsTool(index, _Renderer(), top_k=5, observe="text")  # type: ignore[arg-type]


def test_the_defaults() -> None:
    limits = SearchLimits()
    assert (limits.timeout, limits.max_terms, limits.max_postings) == (DEFAULT_SEARCH_TIMEOUT, 5000, 500_000)
    assert limits.settings() == {
        "search_timeout": 120.0,
        "search_max_terms": MAX_EXPANSION_TERMS,
        "search_max_postings": MAX_POSTINGS,
    }
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="max_postings must be a positive integer or None"):
            SearchLimits(max_postings=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "entries", "heaviest"),
    [
        ("engine OR maintenance OR bell", DF["engine"] + DF["maintenance"] + DF["bell"], "bell"),  # a tie: by name
        ('"bell helicopter" OR schedule', DF["bell"] + DF["helicopter"] + DF["schedule"], '"bell helicopter"'),
        ("engine NOT maintenance", DF["engine"] + DF["maintenance"], "engine"),
        ("ba*", _entries(lambda w: w.startswith("ba")), "ba*"),
        ("[baba TO bado] OR engine", _entries(lambda w: "baba" <= w <= "bado") + DF["engine"], "[baba TO bado]"),
        ("*ka AND NOT bell", _entries(lambda w: w.endswith("ka")) + DF["bell"], "*ka"),
    ],
)
def test_page_entries_are_counted_exactly(index: Any, query: str, entries: int, heaviest: str) -> None:
    """A query reading exactly max_postings page entries runs; one entry fewer allowed and it is refused, with the
    total and the part that reads the most. Plain words, phrases, NOT parts and every pattern's words count."""
    index.limits = SearchLimits(max_postings=entries)
    index.search(query)
    index.limits = SearchLimits(max_postings=entries - 1)
    with pytest.raises(QueryTooBroadError) as info:
        index.search(query)
    assert (info.value.postings, info.value.part, info.value.terms) == (entries, heaviest, None)
    assert str(info.value).startswith(
        f"The query {query!r} is too broad: its words are on {entries:,} pages in all "
        f"(each word counted on every page it is on; {heaviest} alone on "
    )
    assert f"a search reads at most {entries - 1:,}. Use fewer and more specific words" in str(info.value)


def test_both_backends_refuse_alike(index_root: Path) -> None:
    """The same limits refuse the same queries with the same words on either engine (the units are the index's)."""
    queries = [
        "ba*",
        "ba* OR be*",
        "engine OR maintenance OR bell",
        "[baba TO bado] OR ba*",
        "[baba TO bado]",
        "b*",
        "*",
        '"bell helicopter"',
        "zz*",
        "bell NOT engine",
    ]
    limits = SearchLimits(max_terms=900, max_postings=_entries(lambda w: w.startswith("ba")) + 5)
    seen: dict[str, dict[str, str]] = {}
    for backend in BACKENDS:
        index = _open(index_root, backend)
        index.limits = limits
        seen[backend] = {}
        for query in queries:
            try:
                seen[backend][query] = f"{len(index.search(query, k=5))} pages"
            except QueryTooBroadError as exc:
                seen[backend][query] = str(exc)
        index.close()
    assert seen["whoosh"] == seen["tantivy"]
    refused = {q for q, text in seen["whoosh"].items() if "too broad" in text}
    assert refused == {"ba* OR be*", "b*", "[baba TO bado] OR ba*", "*"}, seen["whoosh"]  # words x2, entries, all


def test_same_pages_and_observation_with_a_clock_100x_slower(index: Any) -> None:
    """Accepted or refused, every query gets the same pages and the same observation whether the clock says the
    machine is quiet or 100 times slower: only the safety net reads the clock, and it is far off either way.

    With Whoosh the slow clock passes the former 5 s limit during a search (it is read before each expanded word's
    posting list), so the former wall-clock limit would have told the model to narrow that query.
    """
    queries = [
        "engine",
        "ba*",
        "*ka",
        "[baba TO bado]",
        '"bell helicopter"',
        "bell NOT engine",
        "[a TO z]",
        "*?*",
        "engine maintenance",
    ]
    runs: dict[float, tuple[list[str], list[Any]]] = {}
    spans: list[float] = []
    for tick in (QUIET_TICK_S, QUIET_TICK_S * SLOWER):
        clock = Ticks(tick)
        index.limits = SearchLimits(clock=clock)
        tool = _tool(index)
        observations = []
        for query in queries:
            start, calls = clock.now, clock.calls
            observations.append(tool.forward(query))
            if tick > QUIET_TICK_S:
                spans.append(clock.now - start)
                assert clock.calls - calls >= (2 if "too broad" not in observations[-1] else 1), (
                    query
                )  # the clock was read
        runs[tick] = (observations, [h.as_dict() for h in tool.history])
    quiet, slow = runs[QUIET_TICK_S], runs[QUIET_TICK_S * SLOWER]
    assert slow == quiet
    assert sum(1 for o in quiet[0] if "too broad" in o) == 2 and sum(1 for o in quiet[0] if "found" in o) == 7
    assert max(spans) < DEFAULT_SEARCH_TIMEOUT
    if index.backend == "whoosh":
        assert max(spans) > OLD_LIMIT_S, spans


def test_the_safety_net_is_raised_past_the_model(index: Any) -> None:
    """The net's hit is no observation: the tool records it and raises; it is not a QuerySyntaxError, and its
    error kind is a retryable infrastructure one."""
    index.limits = SearchLimits(timeout=2.0, clock=Ticks(10.0))
    tool = _tool(index)
    with pytest.raises(SearchTimeoutError) as info:
        tool.forward("ba*")
    assert not isinstance(info.value, QuerySyntaxError) and not isinstance(info.value, TimeoutError)
    assert (info.value.query, info.value.seconds) == ("ba*", 2.0)
    assert classify(info.value) == "search" and "search" in RETRYABLE
    # inspect's runner ends the sample with the error's text: the line's kind is read from it
    assert kind_of_line({"error": f"SearchTimeoutError: {info.value}", "final_state": "error"}) == "search"
    record = tool.history[-1]
    assert record.count == 0 and record.results == [] and record.error == f"SearchTimeoutError: {info.value}"
    assert "ran past the 2 s safety net of one search" in record.error and "--retry-errors" in record.error


@pytest.mark.slow
def test_a_safety_net_hit_is_an_infrastructure_error_line(layout, tmp_path: Path, monkeypatch) -> None:
    """End to end: a search past the net ends its question as an error line of kind ``search`` after that one
    model call (the model never sees it); the limits are in the line's ``config``; ``--retry-errors`` reruns it."""
    from madqa.agents.harness.runner import RunConfig, run_benchmark
    from madqa.agents.search_loop import resources as prepare

    fake = "py:helpers.fake_runs:fake_model"
    normal = prepare.search_limits
    monkeypatch.setattr(
        prepare, "search_limits", lambda config: SearchLimits(timeout=config.search_timeout, clock=Ticks(1000.0))
    )
    out = tmp_path / "r.jsonl"
    summary = run_benchmark(RunConfig(model=fake, limit=2), out)
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert summary.errors == 2 and len(lines) == 2
    for line in lines:
        assert line["error_kind"] == "search" and line["error"].startswith("SearchTimeoutError: the search for ")
        assert line["answer"] == [] and line["attempts"] == 1
        assert [h["query"] for h in line["search_history"]] == ["riverton OR invoice OR menu"]
        assert line["search_history"][0]["error"].startswith("SearchTimeoutError: ")
        assert len(line["trajectory"]) == 1 and line["trajectory"][0]["error"].startswith("SearchTimeoutError: ")
        assert line["trajectory"][0]["observation"] is None  # nothing was shown to the model
        config = line["config"]
        assert (config["search_timeout"], config["search_max_terms"], config["search_max_postings"]) == (
            DEFAULT_SEARCH_TIMEOUT,
            MAX_EXPANSION_TERMS,
            MAX_POSTINGS,
        )
    monkeypatch.setattr(prepare, "search_limits", normal)
    retry = run_benchmark(
        RunConfig(model=fake, limit=2, options={"search_timeout": 300.0}), out, resume=True, retry_errors=True
    )
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert retry.errors == 0 and [line["attempts"] for line in lines] == [2, 2]  # a larger net is no other setting
    assert all(line["error"] is None and line["answer"] == ["17.85"] for line in lines)


def test_the_human_app_asks_to_search_again(index: Any) -> None:
    from madqa.space.human.corpus import HumanCorpus

    index.limits = SearchLimits(timeout=2.0, clock=Ticks(10.0))
    corpus = HumanCorpus(index, None, None, {})  # type: ignore[arg-type]  # the renderers are not used to search
    outcome = corpus.search("engine")
    assert outcome.pages == () and outcome.refused
    assert (
        outcome.error
        == "the search server is overloaded and this search was abandoned; please search again in a moment"
    )


def test_the_shell_agents_search_lets_the_safety_net_through(index: Any) -> None:
    """The shell agent's ``search`` (over a retriever that may be BM25 on this index) records the net's hit and
    raises it, as ``search_documents`` does; other failures stay observations."""
    from madqa.agents.baselines.shell.corpus import CorpusMap
    from madqa.agents.baselines.shell.tools import FileSearchTool
    from madqa.agents.corpus.retrieval.rankers import BM25Retriever

    index.limits = SearchLimits(timeout=2.0, clock=Ticks(10.0))
    tool = FileSearchTool(BM25Retriever(index), {}, CorpusMap.of(PAGES[:3]))
    with pytest.raises(SearchTimeoutError):
        tool.forward("engine maintenance")
    assert tool.history[-1].error.startswith("SearchTimeoutError: the search for ")
    index.limits = SearchLimits()
    assert tool.forward("engine maintenance").startswith("search 'engine maintenance': ")
