r"""Page-level full-text search over the ``pages`` corpus: one narrow interface, two engines.

:func:`open_index` turns the pages rows (``document, page, text``; see ``loading_script/features.py``) into a
:class:`SearchIndex` whose only method is :meth:`SearchIndex.search`, stored on disk and reused while the pages stay
the same (:mod:`.index`). Modules: :mod:`.base` (results, errors, limits, the protocol), :mod:`.index` (open and
build), :mod:`.query` (the query parser both engines share), :mod:`.whoosh_backend`, :mod:`.tantivy_backend`.

Backends (details and measurements in their modules):

* ``whoosh`` (default, :mod:`.whoosh_backend`): the paper's search tool. Same schema, analyzer (Whoosh's
  ``StandardAnalyzer``: ``\w+(\.?\w+)*`` tokens, lower-cased, stop words and one-character tokens dropped),
  query parser (``QueryParser("text")``, AND by default) and scoring (BM25F, B=0.75, K1=1.2) as the public MADQA
  harness, so a query returns the harness's top-k pages with the same scores and tie order.
* ``tantivy`` (optional extra ``search-tantivy``, :mod:`.tantivy_backend`): the same tokens and query syntax (queries
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

from .base import (
    BACKENDS,
    DEFAULT_BACKEND,
    DEFAULT_SEARCH_TIMEOUT,
    FORMAT_VERSION,
    MANIFEST,
    MAX_EXPANSION_TERMS,
    MAX_QUERY_CHARS,
    SYNTAX_HELP,
    UNLIMITED,
    Backend,
    Deadline,
    PageHit,
    PageRecord,
    QuerySyntaxError,
    QueryTooBroadError,
    SearchIndex,
    SearchLimits,
    SearchTimeoutError,
    no_results_message,
)
from .index import default_index_dir, open_index, pages_digest, prepare_pages

__all__ = [
    "BACKENDS",
    "Backend",
    "DEFAULT_BACKEND",
    "DEFAULT_SEARCH_TIMEOUT",
    "Deadline",
    "FORMAT_VERSION",
    "MANIFEST",
    "MAX_EXPANSION_TERMS",
    "MAX_QUERY_CHARS",
    "PageHit",
    "PageRecord",
    "QuerySyntaxError",
    "QueryTooBroadError",
    "SYNTAX_HELP",
    "SearchIndex",
    "SearchLimits",
    "SearchTimeoutError",
    "UNLIMITED",
    "default_index_dir",
    "no_results_message",
    "open_index",
    "pages_digest",
    "prepare_pages",
]
