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
enough to stall a question or the Space. What a query gets must not depend on the machine's speed (issue 39: a
5 s wall-clock limit stopped ``dib*`` at 5.02 s on a busy machine, while it answered in 1.9 to 3.8 s on a quiet
one, so a trajectory and a score depended on the load). So the limits on a query count *work*, in units read
from the index before searching, never from a clock; both backends count the same units and refuse with the same
:class:`QueryTooBroadError` text, whose message tells an agent how to narrow the query:

* a cheap guard refuses a query part that matches every page (``*``, ``text:*``, ``document:*``) or every word (a
  wildcard without a letter: ``?*``, ``*?*``);
* **words expanded** (``max_terms``, :data:`MAX_EXPANSION_TERMS`, ``madqa run --search-max-terms``): wildcards,
  prefixes and word ranges (``[a TO z]``, ``b*``) may expand to at most 5,000 different words in all, counted from
  the sorted word list (milliseconds). The count, not the prefix length, decides: ``b*`` is refused on a big
  corpus but not on a small one, and ``*port`` passes when few words end in ``port``;
* **page entries read** (``max_postings``, :data:`MAX_POSTINGS`, ``--search-max-postings``): the query's words,
  plain and expanded, phrases and ``NOT`` parts included, may be on at most 500,000 pages in all (each word
  counted on every page it is on: the postings the engine reads and scores), from the index's document
  frequencies. Refused past the limit once the whole query is counted, naming the total and the heaviest part.

Then one **safety net** (``timeout``, :data:`DEFAULT_SEARCH_TIMEOUT` = 120 s, ``madqa run --search-timeout``), far
above what any query inside the work limits takes, for a stalled engine or a grossly overloaded machine. Its hit
raises :class:`SearchTimeoutError`, which is *not* a :class:`QuerySyntaxError`: the agents' tool lets it through,
and the question ends as an error line of kind ``search`` (:mod:`madqa.agents.harness.errors`), which
``--retry-errors``
runs again; the model never sees it, so it cannot steer a trajectory. The engines check a :class:`Deadline`
between units of work: Whoosh before each expanded word's posting list is opened (also for ``*`` when the guard
is off) and every 64 collected pages; Tantivy while expanding wildcards in Python and before its (Rust) search
starts. Whoosh's own ``TimeLimitCollector`` is not used: with ``use_alarm=True`` it installs a ``SIGALRM``
handler, which raises ``ValueError`` outside the main thread (``madqa run --workers``, the Space's request
threads); with ``use_alarm=False`` it checks only between collected pages, after the expensive part is over.
tantivy-py 0.27 offers no time limit or cancellation, so its Rust search cannot be stopped once started; the work
limits bound it instead. Each results line records the three limits in its ``config`` (``search_timeout``,
``search_max_terms``, ``search_max_postings``); ``--resume`` compares the two work limits, not the net.

``SearchLimits(timeout=None, max_terms=None, max_postings=None)`` (:data:`UNLIMITED`) switches them all off, as
the harness runs.

>>> hit = PageHit("1007969.pdf", 3, 7.25)
>>> hit.document, hit.page
('1007969.pdf', 3)
"""

from __future__ import annotations

from madqa.agents.corpus.search.base import (
    BACKENDS,
    DEFAULT_BACKEND,
    DEFAULT_SEARCH_TIMEOUT,
    FORMAT_VERSION,
    MANIFEST,
    MAX_EXPANSION_TERMS,
    MAX_POSTINGS,
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
from madqa.agents.corpus.search.index import default_index_dir, open_index, pages_digest, prepare_pages

__all__ = [
    "BACKENDS",
    "Backend",
    "DEFAULT_BACKEND",
    "DEFAULT_SEARCH_TIMEOUT",
    "Deadline",
    "FORMAT_VERSION",
    "MANIFEST",
    "MAX_EXPANSION_TERMS",
    "MAX_POSTINGS",
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
