r"""Page-level full-text search over the ``pages`` corpus: one narrow interface, two engines.

:func:`open_index` turns the pages rows (``document, page, text``; see ``loading_script/features.py``) into a
:class:`SearchIndex` whose only method is :meth:`SearchIndex.search`. The index is stored on disk under
``index_dir`` (by default ``Layout.root / "index"``, never inside the public dataset folder) in a folder named by a
digest of the pages content, the backend and :data:`FORMAT_VERSION`, so a second open with the same pages reuses it
and changed pages build a new one. Building writes into a temporary folder that is renamed into place once complete,
so an interrupted or concurrent build never leaves a half-written index behind.

Backends (details and measurements in their modules):

* ``whoosh`` (default, :mod:`.search_whoosh`): the paper's search tool. Same schema, analyzer (Whoosh's
  ``StandardAnalyzer``: ``\w+(\.?\w+)*`` tokens, lower-cased, stop words and one-character tokens dropped),
  query parser (``QueryParser("text")``, AND by default) and scoring (BM25F, B=0.75, K1=1.2) as the public MADQA
  harness, so a query returns the harness's top-k pages with the same scores and tie order.
* ``tantivy`` (optional extra ``search-tantivy``, :mod:`.search_tantivy`): the same tokens and query syntax (queries
  are parsed by the same Whoosh parser and compiled to Tantivy queries), the same matching pages, and scores equal
  to Whoosh's up to the engines' different rounding of page lengths; builds in seconds and answers in about a
  millisecond. Top-5 lists mostly agree with Whoosh's (`madqa bench search` reports how often).

Differences from the harness's tool, by design: a query that parses to nothing raises :class:`QuerySyntaxError`
(the harness silently returns no pages), as does a query longer than :data:`MAX_QUERY_CHARS`; field queries use
this schema's names (``document:``, ``page:`` instead of ``file:``, ``page_number:``).

Query syntax (both backends, as the paper's tool): words (all must match), ``"quoted phrases"``, ``AND``, ``OR``,
``NOT`` (upper case), parentheses, and wildcards ``*`` (any characters) and ``?`` (one character) inside a word.
A query that parses to nothing raises :class:`QuerySyntaxError`, whose message tells an LLM agent how to rephrase;
a valid query without matches returns ``[]`` (see :func:`no_results_message`).

**Search limits** (:class:`SearchLimits`, set per index by :func:`open_index`; the agents' ``search_documents`` tool,
``madqa run`` and the Space all use them). Without them, match-everything queries take 15 to 38 s each on a
6,000-page Whoosh index (``*``, ``*?*``, ``[a TO z]``; ``madqa bench search --pages 6000``, two busy cores), long
enough to stall a question or the Space. Two guards, in both backends, raise errors of the
:class:`QuerySyntaxError` family whose messages tell an agent how to narrow the query:

* a cheap guard before searching raises :class:`QueryTooBroadError` for a query part that matches every page
  (``*``, ``text:*``, ``document:*``) or every word (a wildcard without a letter: ``?*``, ``*?*``), and for
  wildcards, prefixes and word ranges (``[a TO z]``, ``b*``) that expand to more than ``max_terms`` different words
  in total (:data:`MAX_EXPANSION_TERMS`; counted from the sorted word list, which costs milliseconds). The count,
  not the prefix length, decides: ``b*`` is refused on a big corpus but not on a small one, and ``*port`` passes
  when few words end in ``port``. On 6,000 bench pages a pattern under the cap (``ba*``, 3,916 words) took 0.5 to
  0.8 s on Whoosh and 15 ms on Tantivy (two busy cores); the time limit covers what the count cannot foresee.
* a wall-clock limit per search (``timeout``, :data:`DEFAULT_SEARCH_TIMEOUT`, ``madqa run --search-timeout``)
  raises :class:`SearchTimeoutError`. The engines check a :class:`Deadline` between units of work: Whoosh before
  each expanded word's posting list is opened (also for ``*`` when the guard is off) and every 64 collected
  pages; Tantivy while expanding wildcards in Python and before its (Rust) search starts. Whoosh's own
  ``TimeLimitCollector`` is not used: with ``use_alarm=True`` it installs a ``SIGALRM`` handler, which raises
  ``ValueError`` outside the main thread (``madqa run --workers``, the Space's request threads) and would interrupt
  the main thread rather than the searching one; with ``use_alarm=False`` it checks only between collected pages,
  after the expensive part (opening one posting list per expanded word, or building ``*``'s page set) is over: a
  1 s limit stopped ``*`` after 15 s on 6,000 bench pages. With this deadline, the time limit alone (guard off)
  stopped those queries at 5.0 to 5.2 s. tantivy-py 0.27 offers no time limit or cancellation, so its Rust search
  cannot be stopped once started; the guard bounds that work instead (and Tantivy's unguarded ``*?*`` takes
  under a second there anyway). With both guards the three queries are refused in 0 to 2 ms on Whoosh, and in up
  to 0.35 s on Tantivy (``[a TO z]``: its words are counted by a Python scan of the term dictionary).

``SearchLimits(timeout=None, max_terms=None)`` (:data:`UNLIMITED`) switches both off, as the harness runs.

>>> hit = PageHit("1007969.pdf", 3, 7.25)
>>> hit.document, hit.page
('1007969.pdf', 3)
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import numbers
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

logger = logging.getLogger(__name__)

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
    madqa.agents.search.SearchTimeoutError: The search for 'q' was stopped after 5 s ...
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


def prepare_pages(pages: Iterable[Mapping[str, Any]]) -> list[PageRecord]:
    """Validate pages rows and add ``total_pages`` (the highest page number of each document).

    Row order is kept: it is the index's document order, which breaks score ties (as in the harness).

    Raises:
        ValueError: a row lacks a document name or a positive page number, or a (document, page) repeats.

    >>> [r.total_pages for r in prepare_pages([{"document": "a.pdf", "page": 1, "text": "x"},
    ...                                         {"document": "a.pdf", "page": 2, "text": None}])]
    [2, 2]
    """
    rows: list[tuple[str, int, str]] = []
    seen: set[tuple[str, int]] = set()
    last: dict[str, int] = {}
    for i, row in enumerate(pages):
        document, page = row.get("document"), row.get("page")
        if not isinstance(document, str) or not document:
            raise ValueError(f"pages row {i}: 'document' must be a non-empty string, got {document!r}")
        if isinstance(page, bool) or not isinstance(page, numbers.Integral) or page < 1:
            raise ValueError(f"pages row {i} ({document}): 'page' must be a positive integer, got {page!r}")
        page = int(page)
        if (document, page) in seen:
            raise ValueError(f"pages row {i}: page {page} of {document} appears twice")
        seen.add((document, page))
        last[document] = max(page, last.get(document, 0))
        rows.append((document, page, str(row.get("text") or "")))
    return [PageRecord(d, p, last[d], t) for d, p, t in rows]


def pages_digest(records: Iterable[PageRecord]) -> str:
    """SHA-256 over the indexed content, in order (document, page, total pages, text).

    >>> a = pages_digest([PageRecord("a.pdf", 1, 1, "hello")])
    >>> len(a), a == pages_digest([PageRecord("a.pdf", 1, 1, "hello!")])
    (64, False)
    """
    h = hashlib.sha256()
    for r in records:
        head = f"{len(r.document)}:{r.document}:{r.page}:{r.total_pages}:"
        body = r.text.encode("utf-8", "surrogatepass")
        h.update(head.encode("utf-8", "surrogatepass"))
        h.update(f"{len(body)}:".encode())
        h.update(body)
    return h.hexdigest()


def default_index_dir() -> Path:
    """Where indexes live by default: ``Layout.root / "index"`` (outside the public dataset folder)."""
    from madqa.loading_script.paths import Layout

    return Layout.default().root / "index"


def _read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def open_index(
    pages: Iterable[Mapping[str, Any]],
    index_dir: str | os.PathLike[str] | None = None,
    backend: Backend = DEFAULT_BACKEND,
    progress: bool = True,
    limits: SearchLimits | None = None,
) -> SearchIndex:
    """Open the search index of ``pages``, building it first when it does not exist yet.

    Args:
        pages: pages rows (``document``, ``page`` 1-based, ``text``), e.g. from ``load_pages(dataset)``.
        index_dir: folder holding the indexes (default :func:`default_index_dir`); each index is a sub-folder
            ``<backend>-v<FORMAT_VERSION>-<digest>``, so indexes of different corpora or backends coexist.
        backend: ``"whoosh"`` (the paper's engine) or ``"tantivy"`` (needs ``pip install 'madqa[search-tantivy]'``).
        progress: show a tqdm bar while building.
        limits: per-search limits (default ``SearchLimits()``: :data:`DEFAULT_SEARCH_TIMEOUT` and
            :data:`MAX_EXPANSION_TERMS`); the index's ``limits`` attribute can be changed later.

    Returns:
        A :class:`SearchIndex` (also a context manager with ``close()``) with a ``limits`` attribute.

    Raises:
        ValueError: unknown backend or invalid pages rows.
        ImportError: the backend's package is not installed (the message says what to install).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown search backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    engine = importlib.import_module(f"{__package__}.search_{backend}")
    engine.check_available()
    records = prepare_pages(pages)
    digest = pages_digest(records)
    root = Path(index_dir) if index_dir is not None else default_index_dir()
    folder = root / f"{backend}-v{FORMAT_VERSION}-{digest[:24]}"
    manifest = _read_manifest(folder)
    if manifest is None or manifest.get("digest") != digest:
        if folder.exists():
            logger.warning("discarding incomplete search index at %s", folder)
            shutil.rmtree(folder, ignore_errors=True)
        _build(engine, records, folder, backend, digest, progress)
    else:
        logger.debug("reusing %s search index at %s", backend, folder)
    return engine.open_existing(folder, limits=limits or SearchLimits())


def _build(engine: Any, records: list[PageRecord], folder: Path, backend: str, digest: str, progress: bool) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    start = time.perf_counter()
    try:
        logger.info("building the %s search index of %d pages in %s", backend, len(records), folder)
        engine.build(records, tmp, progress=progress)
        manifest = {
            "backend": backend,
            "format_version": FORMAT_VERSION,
            "digest": digest,
            "pages": len(records),
            "documents": len({r.document for r in records}),
            "build_seconds": round(time.perf_counter() - start, 3),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        try:
            tmp.rename(folder)
        except OSError:
            if _read_manifest(folder) is None:
                raise
            logger.info("another process finished the same index first; using it")
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info("built the %s search index in %.1f s", backend, time.perf_counter() - start)
