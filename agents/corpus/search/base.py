"""The search package's shared vocabulary: results, errors, per-search limits and the index protocol.

Every backend (:mod:`.whoosh_backend`, :mod:`.tantivy_backend`) and every user of an index (the agents' tools, the
human-baseline app, the benchmarks) speaks in these types; :mod:`.index` opens an index, :mod:`.query` parses
queries. The package docstring (:mod:`madqa.agents.corpus.search`) explains the limits and the differences from the
public harness.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

Backend = Literal["whoosh", "tantivy"]
BACKENDS: tuple[Backend, ...] = ("whoosh", "tantivy")
DEFAULT_BACKEND: Backend = "whoosh"

#: Bump when the on-disk layout, the analysis or the schema changes: old indexes are then rebuilt.
FORMAT_VERSION = 1
#: File written last into a complete index folder.
MANIFEST = "madqa-index.json"
#: Longest query accepted (characters); longer input is almost certainly not a search query.
MAX_QUERY_CHARS = 2000
#: The work limits of one search. They are counted in units that do not depend on the machine's speed (words a
#: pattern expands to, page entries read), before the engine starts, so a query is answered or refused alike on
#: every machine, under any load, by both backends (issue 39: a 5 s wall-clock limit stopped ``dib*`` at 5.02 s on a
#: busy machine and let it answer in 1.9 to 3.8 s on a quiet one, so a trajectory depended on the load).
#:
#: Most different words the wildcards, prefixes and word ranges of one query may expand to. Whoosh opens one
#: posting list per word (about 0.1 to 0.2 ms each), and above 1,024 words a wildcard scores a constant 1.0, so
#: wider patterns cost seconds and rank nothing.
MAX_EXPANSION_TERMS = 5000
#: Most page entries (postings) one query may read: the sum, over the query's words, plain and expanded (phrases and
#: ``NOT`` parts included), of the number of pages each word is on. What a search costs grows with it (Whoosh
#: scores or unions each entry in Python, 8 to 18 µs each below) and it is known before searching, from the index's
#: document frequencies. 500,000 is above 26 times the release's page count (18,619), so no query of up to 26 plain
#: words, whatever they are (the seed baselines send at most 24), can be refused on the release. Measured by
#: ``madqa bench limits`` on 18,619 synthetic bench pages (two shared cores): the 300 bench queries read at
#: most 37,050 entries, 24-word OR queries of random page words at most 62,246, and one of the corpus's 24 most
#: frequent words 234,684 (1.8 to 1.9 s on Whoosh); none is refused. The limit is not higher because Whoosh's time
#: grows past it: an OR of the most frequent words grown to 498,038 entries took 4.2 s (load average about 2), one
#: grown to 1,196,139 entries 21.7 s (load average 4 to 9).
MAX_POSTINGS = 500_000
#: Default safety net of one search (wall-clock seconds). It is no limit on the query: the costliest queries the
#: work limits accept took at most 4.2 s on Whoosh in the measurements above (498,038 entries; ``ga*``, 4,639
#: words, 1.0 to 1.7 s) and 7 ms on Tantivy, so the net, about 30 times that, only catches a stalled engine or a
#: machine tens of times slower than those two shared cores. Its hit is an infrastructure failure of the question
#: (error kind ``search``, rerun by ``--retry-errors``), never an observation the model reacts to.
DEFAULT_SEARCH_TIMEOUT = 120.0

#: The query syntax in one line, for error messages and tool descriptions.
SYNTAX_HELP = (
    'words (all must match), "quoted phrases", AND / OR / NOT in upper case, parentheses, '
    "and wildcards inside a word: * for any characters, ? for one character (e.g. invoic*, colo?r)"
)


@dataclass(frozen=True)
class PageHit:
    """One search result: a page of a document and its relevance score (higher is better).

    Attributes:
        document: the PDF's file name, as in the pages corpus (e.g. ``"1007969.pdf"``).
        page: 1-based page number.
        score: the engine's relevance score (BM25F for Whoosh, BM25 for Tantivy; constant 1.0 parts for wildcards).
    """

    document: str
    page: int
    score: float


class QuerySyntaxError(ValueError):
    """A query that cannot be searched; the message is written for an LLM agent to act on.

    Attributes:
        query: the query as given.
    """

    def __init__(self, query: str, message: str) -> None:
        """Keep the query next to the actionable message."""
        super().__init__(message)
        self.query = query


class QueryTooBroadError(QuerySyntaxError):
    """A query refused before searching: it matches every page, expands to too many words or would read too many
    page entries. Decided from the index alone (never the clock), so the same on every machine and both backends.

    Attributes:
        query: the query as given.
        part: the offending part of the query (e.g. ``"*"``, ``"b*"``, ``"[a TO z]"``; for too many page entries,
            the part that reads the most).
        terms: how many words the part expands to (``None`` when it matches everything outright, or when the page
            entries decided).
        postings: the page entries the whole query would read, when they decided (else ``None``).
    """

    def __init__(
        self, query: str, message: str, *, part: str, terms: int | None = None, postings: int | None = None
    ) -> None:
        """Keep the offending part and its size next to the message."""
        super().__init__(query, message)
        self.part, self.terms, self.postings = part, terms, postings


class SearchTimeoutError(RuntimeError):
    """A search abandoned at its wall-clock safety net: an infrastructure failure, not a verdict on the query.

    Not a :class:`QuerySyntaxError`: the agents' search tool lets it through, so the question ends as an error line
    of kind ``search`` (:mod:`madqa.agents.harness.errors`), which ``--retry-errors`` runs again, instead of showing
    the
    model a message that would depend on the machine's load. A ``RuntimeError``, not a ``TimeoutError``: tool
    runners (inspect's) turn a ``TimeoutError`` into a tool message for the model.

    Attributes:
        query: the query as given.
        seconds: the safety net that was reached.
    """

    def __init__(self, query: str, seconds: float) -> None:
        """Say what happened and what becomes of the question."""
        super().__init__(
            f"the search for {query!r} ran past the {seconds:g} s safety net of one search (far longer than any "
            "query inside the work limits takes: an overloaded machine or a stalled engine); the question is "
            "recorded as an infrastructure error, which --retry-errors runs again"
        )
        self.query, self.seconds = query, seconds


class Deadline:
    """The wall-clock safety net of one search, checked by the engines between units of work.

    >>> ticks = iter([0.0, 1.0, 9.0])
    >>> d = Deadline("q", 5.0, clock=lambda: next(ticks))
    >>> d.check()
    >>> d.check()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    madqa.agents.corpus.search.base.SearchTimeoutError: the search for 'q' ran past the 5 s safety net of one ...
    """

    __slots__ = ("query", "seconds", "clock", "end")

    def __init__(self, query: str, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        """Start the clock now; ``seconds=None`` never expires."""
        self.query, self.seconds, self.clock = query, seconds, clock
        self.end = clock() + seconds if seconds is not None else None

    @property
    def active(self) -> bool:
        """Whether this deadline can expire (engines skip their checks otherwise)."""
        return self.end is not None

    def check(self) -> None:
        """Raise :class:`SearchTimeoutError` once the limit has passed."""
        if self.end is not None and self.clock() > self.end:
            raise SearchTimeoutError(self.query, float(self.seconds or 0.0))


@dataclass(frozen=True)
class SearchLimits:
    """Per-search limits of an index (see the module docstring): two work limits and a safety net.

    Attributes:
        timeout: the wall-clock safety net in seconds (``None``: none); its hit raises :class:`SearchTimeoutError`.
        max_terms: most words the wildcards, prefixes and word ranges of one query may expand to; ``None`` also
            lets match-everything queries (``*``, ``?*``) run.
        max_postings: most page entries one query may read (:data:`MAX_POSTINGS`; ``None``: no limit).
        clock: monotonic clock in seconds (tests inject one); only the safety net reads it.

    >>> SearchLimits().timeout, SearchLimits().max_terms, SearchLimits().max_postings
    (120.0, 5000, 500000)
    >>> SearchLimits(timeout=0)
    Traceback (most recent call last):
    ...
    ValueError: the search timeout must be a positive number of seconds or None, got 0
    """

    timeout: float | None = DEFAULT_SEARCH_TIMEOUT
    max_terms: int | None = MAX_EXPANSION_TERMS
    max_postings: int | None = MAX_POSTINGS
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Reject limits that would refuse every search."""
        if self.timeout is not None and (isinstance(self.timeout, bool) or not self.timeout > 0):
            raise ValueError(f"the search timeout must be a positive number of seconds or None, got {self.timeout!r}")
        for name in ("max_terms", "max_postings"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")

    def settings(self) -> dict[str, float | int | None]:
        """The limits as a results line's ``config`` records them (what decides a query's result, and the net).

        >>> SearchLimits(timeout=None, max_postings=None).settings()
        {'search_timeout': None, 'search_max_terms': 5000, 'search_max_postings': None}
        """
        return {
            "search_timeout": self.timeout,
            "search_max_terms": self.max_terms,
            "search_max_postings": self.max_postings,
        }

    def deadline(self, query: str) -> Deadline:
        """A deadline for one search of ``query``, starting now."""
        return Deadline(query, self.timeout, self.clock)


#: No safety net and no work limit: the behaviour of the public harness.
UNLIMITED = SearchLimits(timeout=None, max_terms=None, max_postings=None)


@runtime_checkable
class SearchIndex(Protocol):
    """A page-level search index (the only thing agents need from a search engine)."""

    def search(self, query: str, k: int = 5) -> list[PageHit]:
        """Return at most ``k`` pages matching ``query``, best first.

        Raises:
            QuerySyntaxError: the query parses to nothing (empty, only stop words or operators, bad quoting).
            QueryTooBroadError: (a ``QuerySyntaxError``) the query matches every page, expands to too many words or
                would read too many page entries (the work limits: the same on every machine).
            SearchTimeoutError: (not a ``QuerySyntaxError``) the search ran past the index's safety net.
            ValueError: ``k`` is not positive.
        """
        ...


def no_results_message(query: str) -> str:
    """The observation a search tool should show an agent when a valid query matched no page.

    >>> print(no_results_message("bell 407 accessories"))  # doctest: +ELLIPSIS
    No pages matched 'bell 407 accessories'. Try synonyms or abbreviations, fewer words (every word must match), ...
    """
    return (
        f"No pages matched {query!r}. Try synonyms or abbreviations, fewer words (every word must match), "
        "OR between alternatives, or a wildcard (e.g. report* for report, reports, reporting)."
    )


@dataclass(frozen=True)
class PageRecord:
    """One row as indexed: the pages columns plus the document's page count (``total_pages``)."""

    document: str
    page: int
    total_pages: int
    text: str
