"""The Whoosh collector checks its search's deadline while collecting (agents/corpus/search/whoosh_deadline.py; issue
29).

Since issue 39 the deadline is the search's wall-clock safety net (what a query may cost is bounded beforehand by
work limits, ``tests/agents/corpus/test_search_work_limits.py``), and ``SearchTimeoutError`` is an infrastructure
error.

Documented: the wrapping collector "checks a Deadline every CHECK_EVERY pages". With an injected clock that jumps
past the limit once the search has started, a query matching many pages must stop with ``SearchTimeoutError``;
with a clock that stands still, or with no limit, it collects what the searcher's own collector does.
"""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("whoosh")

from whoosh.fields import ID, TEXT, Schema  # noqa: E402
from whoosh.filedb.filestore import RamStorage  # noqa: E402
from whoosh.query import Term  # noqa: E402

from madqa.agents.corpus.search.base import Deadline, SearchTimeoutError  # noqa: E402
from madqa.agents.corpus.search.whoosh_deadline import CHECK_EVERY, deadline_collector_class  # noqa: E402

PAGES = 5 * CHECK_EVERY


@pytest.fixture(scope="module")
def index():
    ix = RamStorage().create_index(Schema(id=ID(stored=True), text=TEXT))
    writer = ix.writer()
    for i in range(PAGES):
        writer.add_document(id=str(i), text=f"invoice total page{i}")
    writer.commit()
    return ix


def _collect(ix, deadline: Deadline) -> list[str]:
    with ix.searcher() as searcher:
        collector = deadline_collector_class()(searcher.collector(limit=None), deadline)
        searcher.search_with_collector(Term("text", "invoice"), collector)
        return [hit["id"] for hit in collector.results()]


def test_collecting_stops_once_the_clock_passes_the_deadline(index) -> None:
    ticks = itertools.count()  # each reading of the clock is one second later
    deadline = Deadline("invoice", 2.5, clock=lambda: float(next(ticks)))
    with pytest.raises(SearchTimeoutError):
        _collect(index, deadline)
    assert next(ticks) < PAGES // CHECK_EVERY + 3  # stopped at the first checks past the limit, not at the end


def test_collecting_checks_the_clock_every_check_every_pages(index) -> None:
    readings: list[int] = []
    deadline = Deadline("invoice", 1e9, clock=lambda: float(readings.append(1) or 0))
    assert len(_collect(index, deadline)) == PAGES
    assert len(readings) >= 1 + PAGES // CHECK_EVERY  # at the start, then once per CHECK_EVERY pages


def test_without_a_limit_everything_is_collected(index) -> None:
    assert len(_collect(index, Deadline("invoice", None))) == PAGES
