"""The search package's shared vocabulary: results, errors, per-search limits and the index protocol.

Every backend (:mod:`.whoosh_backend`, :mod:`.tantivy_backend`) and every user of an index (the agents' tools, the
human-baseline app, the benchmarks) speaks in these types; :mod:`.index` opens an index, :mod:`.query` parses
queries. The package docstring (:mod:`madqa.agents.search`) explains the limits and the differences from the
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
#: Default wall-clock limit of one search (seconds): far above a normal query (milliseconds), short enough that a
#: runaway query does not stall an agent's question or the Space.
DEFAULT_SEARCH_TIMEOUT = 5.0
#: Most different words the wildcards, prefixes and word ranges of one query may expand to. Whoosh opens one
#: posting list per word (about 0.1 to 0.2 ms each), and above 1,024 words a wildcard scores a constant 1.0, so
#: wider patterns cost seconds and rank nothing.
MAX_EXPANSION_TERMS = 5000

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
    """A query refused before searching: it matches every page or expands to too many words.

    Attributes:
        query: the query as given.
        part: the offending part of the query (e.g. ``"*"``, ``"b*"``, ``"[a TO z]"``).
        terms: how many words the part expands to (``None`` when it matches everything outright).
    """

    def __init__(self, query: str, message: str, *, part: str, terms: int | None = None) -> None:
        """Keep the offending part and its expansion size next to the message."""
        super().__init__(query, message)
        self.part, self.terms = part, terms


class SearchTimeoutError(QuerySyntaxError):
    """A search stopped at its wall-clock limit; the message tells an agent to narrow the query.

    Attributes:
        query: the query as given.
        seconds: the limit that was reached.
    """

    def __init__(self, query: str, seconds: float) -> None:
        """Write the narrowing advice for ``query``."""
        super().__init__(
            query,
            f"The search for {query!r} was stopped after {seconds:g} s (the time limit of one search). Narrow the "
            "query: use more specific words, fewer wildcards, or a longer prefix before * or ? (e.g. invoic* "
            "rather than in*).",
        )
        self.seconds = seconds


class Deadline:
    """The time limit of one search, checked by the engines between units of work.

    >>> ticks = iter([0.0, 1.0, 9.0])
    >>> d = Deadline("q", 5.0, clock=lambda: next(ticks))
    >>> d.check()
    >>> d.check()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    madqa.agents.search.base.SearchTimeoutError: The search for 'q' was stopped after 5 s ...
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
    """Per-search limits of an index (see the module docstring).

    Attributes:
        timeout: wall-clock seconds one search may take (``None``: no limit).
        max_terms: most words the wildcards, prefixes and word ranges of one query may expand to; ``None`` also
            lets match-everything queries (``*``, ``?*``) run.
        clock: monotonic clock in seconds (tests inject one).

    >>> SearchLimits().timeout, SearchLimits().max_terms
    (5.0, 5000)
    >>> SearchLimits(timeout=0)
    Traceback (most recent call last):
    ...
    ValueError: the search timeout must be a positive number of seconds or None, got 0
    """

    timeout: float | None = DEFAULT_SEARCH_TIMEOUT
    max_terms: int | None = MAX_EXPANSION_TERMS
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Reject limits that would refuse every search."""
        if self.timeout is not None and (isinstance(self.timeout, bool) or not self.timeout > 0):
            raise ValueError(f"the search timeout must be a positive number of seconds or None, got {self.timeout!r}")
        if self.max_terms is not None and (isinstance(self.max_terms, bool) or not self.max_terms >= 1):
            raise ValueError(f"max_terms must be a positive integer or None, got {self.max_terms!r}")

    def deadline(self, query: str) -> Deadline:
        """A deadline for one search of ``query``, starting now."""
        return Deadline(query, self.timeout, self.clock)


#: No time limit and no breadth guard: the behaviour of the public harness.
UNLIMITED = SearchLimits(timeout=None, max_terms=None)


@runtime_checkable
class SearchIndex(Protocol):
    """A page-level search index (the only thing agents need from a search engine)."""

    def search(self, query: str, k: int = 5) -> list[PageHit]:
        """Return at most ``k`` pages matching ``query``, best first.

        Raises:
            QuerySyntaxError: the query parses to nothing (empty, only stop words or operators, bad quoting).
            QueryTooBroadError: (a ``QuerySyntaxError``) the query matches every page or expands to too many words.
            SearchTimeoutError: (a ``QuerySyntaxError``) the search ran past the index's time limit.
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

