"""Whoosh backend of :mod:`madqa.agents.corpus.search`: the paper's engine, with the public MADQA harness's index and
scoring.

It matches the harness (``WhooshSearchEngine`` in ``baselines/bm25-mllm-agent/utils.py`` of ``OxRML/MADQA``):

* schema ``ID`` / ``NUMERIC`` / ``NUMERIC`` / ``TEXT()`` (``StandardAnalyzer``, positions stored, text not stored);
  only the field names follow the pages corpus (``document``, ``page`` instead of ``file``, ``page_number``);
* one writer, one process, one commit: a single segment with the documents in pages-row order;
* ``QueryParser("text", schema)`` (AND by default) and the searcher's default weighting, BM25F (B=0.75, K1=1.2).

A query therefore returns the harness's top-k pages with bit-identical scores and the same order among ties
(frequent: ``NOT`` parts, and wildcards matching 1,024 words or more, or 3 or more in an index of at most 5,000
pages, score a constant 1.0). Whoosh's
quirks come along: its top-k block skipping loses pages of a ``NOT`` query whose excluded word is not in the
index (``robe NOT zzzqqq`` misses pages that ``robe`` ranks first), exactly as in the harness.

What differs only changes speed, never results:

* **Searchers are kept open and reused.** The harness opens a searcher per query, which re-reads the segment and
  dominates its query time. Here idle searchers wait in a pool: a caller takes one (opening another only when all
  are busy) and returns it, so concurrent callers never share a searcher and a slow query blocks no one else.
* **Wildcards are expanded from a cached word list.** Whoosh lists the terms a wildcard matches by walking its
  on-disk lexicon in Python (up to a second for ``*cufi``, tens of milliseconds for ``c?nufi``). The build also
  writes the sorted word list to ``words.txt``; it is read at the first wildcard query, a pattern's words are found
  by bisection and ``fnmatch`` matching, in Whoosh's order, and the query runs with that fixed term list through
  Whoosh's own multi-term code, so scores are unchanged.
* **A wildcard's words are read once** (:func:`~madqa.agents.corpus.search.whoosh_deadline.preloaded_union`). For
  fewer than 1,024 words Whoosh unions them in a tree that its top-k collector re-plans after every page it
  collects, walking the whole tree each time (``hef*``, about 360 words on 6,442 pages: 10-17 s on a loaded machine).
  Instead the tree Whoosh built is read in full, each word's pages scored by its own scorer and summed node by
  node as the tree sums them, into one list: the same pages with bit-identical scores, in the same order
  (tests/agents/corpus/test_search_preload.py compares both paths and the harness). The reading is bounded by the
  search limits (the words and their page entries are counted before, the safety net is checked per word). Queries
  with ``NOT``, ``ANDNOT`` or ``ANDMAYBE`` keep Whoosh's lazy union, whose block skipping has the quirk below.
* **Progress bar and atomic build** (see :func:`madqa.agents.corpus.search.open_index`).

**Search limits** (:class:`madqa.agents.corpus.search.SearchLimits`; why and what in
:mod:`madqa.agents.corpus.search`).
Before searching, :func:`madqa.agents.corpus.search.query.refuse_match_all` refuses ``*`` and letterless wildcards, the
pinning above counts each pattern's words (and word ranges', also expanded from the word list by bisection, with
Whoosh's ``TermRange`` bounds) against ``max_terms``, and the page entries of every word (the reader's
``doc_frequency``, one lookup per word, expanded ones included) are counted against ``max_postings``. During the
search the safety net's :class:`~madqa.agents.corpus.search.Deadline`
is checked before each expanded word's posting list is opened (``PinnedTerms.matcher`` builds the same union as
Whoosh's ``MultiTerm.matcher``, from term queries that check the deadline first) and every 64 pages collected (a
wrapping collector around the searcher's own top-k collector, whose block skipping is unchanged), so results are
identical with or without limits. (With the guard off, ``*`` is kept and its page set is built with a deadline
check per word, so the time limit alone bounds every query.)

Measured by ``madqa bench search`` (18,619 synthetic pages, 12.2M tokens, 300 queries, k=5, two shared cores):
build 216 s (harness set-up 235 s), 159 MiB on disk, peak RSS 736 MiB; top-5 identical to the harness for all 300
queries. Side by side with the harness set-up in one process (3 passes, load average 21-24): p50 15.8 ms and p95
137 ms against 471 ms and 740 ms, p95 5.5x lower (5.4-5.8x per pass; 2.9x before the wildcard unions were
preloaded). The slowest queries are now those that read many page entries (the widest wildcards, ``NOT`` queries,
phrases, ANDs and ORs of common words, and single common words), whose postings Whoosh reads and scores in Python:
work the harness pays too.

**Why the build uses one process.** Two processes writing one segment each built 1.5x faster here (3,000 bench
pages: 22 s instead of 33 s; Whoosh's own ``procs=2, multisegment=True`` writer also stores the workers' documents
in completion order, which alone changes tie order). But several Whoosh behaviours are per segment: a wildcard that
matches exactly one word *in a segment* is BM25-scored there but scores 1.0 where it matches several; the block
skipping above strikes wherever the excluded word is missing from a segment (``robe NOT rareki`` on the bench corpus
lost its top four pages); and per-term scores are summed in a per-segment order, so exact ties become 1-ulp
differences. Keeping row order across the segments and pinning wildcard expansions fixed the first, not the others;
merging the segments back into one costs more than the parallel build saves. So the index is built exactly as the
harness builds it, once per pages digest.
"""

from __future__ import annotations

import bisect
import fnmatch
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from madqa.agents.corpus.search.base import Deadline, PageHit, PageRecord, QuerySyntaxError, SearchLimits
from madqa.agents.corpus.search.query import (
    ExpansionBudget,
    count_postings,
    describe_part,
    parse_query,
    refuse_match_all,
    whoosh_schema,
)
from madqa.agents.corpus.search.whoosh_deadline import (
    deadline_collector_class,
    deadline_every_class,
    pinned_terms_class,
)

if TYPE_CHECKING:
    from whoosh.searching import Searcher

logger = logging.getLogger(__name__)

#: The text field's words, one per line, in lexicon order (written by :func:`build`).
WORDS_FILE = "words.txt"
#: Posting-pool memory of the writer (the harness's ``limitmb``; it changes memory and speed, not the index).
LIMITMB = 512


def check_available() -> None:
    """Raise an actionable ImportError when Whoosh is missing."""
    try:
        import whoosh  # noqa: F401
    except ImportError as exc:  # pragma: no cover - whoosh is a main dependency
        raise ImportError("the whoosh search backend needs Whoosh: pip install 'whoosh>=2.7.4'") from exc


def build(records: Sequence[PageRecord], folder: Path, *, progress: bool = True) -> None:
    """Write a single-segment Whoosh index of ``records`` (in order) into the empty folder ``folder``."""
    from tqdm.auto import tqdm
    from whoosh.index import create_in

    ix = create_in(str(folder), whoosh_schema())
    writer = ix.writer(limitmb=LIMITMB)
    try:
        with tqdm(total=len(records), desc="whoosh index", unit="page", disable=not progress) as bar:
            for r in records:
                writer.add_document(document=r.document, page=r.page, total_pages=r.total_pages, text=r.text)
                bar.update()
            bar.set_postfix_str("writing postings")
            writer.commit()
    except BaseException:
        if not writer.is_closed:
            writer.cancel()
        raise
    with ix.reader() as reader:
        words = "\n".join(w.decode("utf-8") for w in reader.lexicon("text"))
    (folder / WORDS_FILE).write_text(words, encoding="utf-8")


def open_existing(folder: Path, limits: SearchLimits | None = None) -> WhooshIndex:
    """Open a complete index folder."""
    return WhooshIndex(folder, limits=limits)


class WhooshIndex:
    """A Whoosh page index with a pool of reusable searchers (safe to share between threads).

    Attributes:
        folder: the index folder.
        limits: per-search limits (time and breadth); assign another :class:`SearchLimits` to change them.
        preload_unions: read the words of a pattern in full before collecting (``preloaded_union``; same results,
            seconds faster on wide prefixes); ``False`` keeps Whoosh's lazy union (the tests compare the two).
    """

    backend = "whoosh"

    def __init__(self, folder: str | os.PathLike[str], limits: SearchLimits | None = None) -> None:
        """Open the index and one searcher."""
        from whoosh.index import open_dir

        self.folder = Path(folder)
        self.limits = limits or SearchLimits()
        self._ix = open_dir(str(self.folder))
        self._schema = self._ix.schema
        self._lock = threading.Lock()
        self._idle: list[Searcher] = [self._ix.searcher()]
        self._opened = 1
        self._closed = False
        self._words: list[str] | None = None  # sorted words of the text field, loaded at the first wildcard
        self.preload_unions = True

    def __repr__(self) -> str:
        """Folder and number of searchers opened."""
        return f"WhooshIndex({str(self.folder)!r}, searchers={self._opened})"

    def _acquire(self) -> Searcher:
        with self._lock:
            if self._closed:
                raise RuntimeError("the search index is closed")
            if self._idle:
                return self._idle.pop()
            self._opened += 1
            count = self._opened
        logger.debug("opening searcher #%d for a concurrent caller", count)
        return self._ix.searcher()

    def _release(self, searcher: Searcher) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(searcher)
                return
        searcher.close()

    def search(self, query: str, k: int = 5) -> list[PageHit]:
        """Top ``k`` pages for ``query`` (syntax and errors: see :mod:`madqa.agents.corpus.search`)."""
        from whoosh.query.qcore import QueryError

        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        limits = self.limits
        deadline = limits.deadline(query)
        parsed = parse_query(query, self._schema)
        if limits.max_terms is not None:
            refuse_match_all(parsed, query)
        searcher = self._acquire()
        try:
            budget = ExpansionBudget(query, limits.max_terms, limits.max_postings)
            if _has_patterns(parsed):
                preload = self.preload_unions and not _has_negation(parsed)
                parsed = self._pin(parsed, searcher, budget, deadline, preload)
            if limits.max_postings is not None:
                count_postings(parsed, budget, self._doc_freq(searcher))
                budget.finish()
            deadline.check()
            if deadline.active:
                collector = deadline_collector_class()(searcher.collector(limit=k), deadline)
                searcher.search_with_collector(parsed, collector)
                results = collector.results()
            else:
                results = searcher.search(parsed, limit=k)
            return [PageHit(str(hit["document"]), int(hit["page"]), float(hit.score)) for hit in results]
        except QueryError as exc:
            raise QuerySyntaxError(query, f"Could not search for {query!r} ({exc}); simplify the query.") from exc
        finally:
            self._release(searcher)

    def _lexicon(self, searcher: Searcher) -> list[str]:
        with self._lock:
            if self._words is None:
                path = self.folder / WORDS_FILE
                if path.is_file():
                    text = path.read_text(encoding="utf-8")
                    self._words = text.split("\n") if text else []
                else:  # an index written without the list: read Whoosh's lexicon (slower)
                    self._words = [w.decode("utf-8") for w in searcher.reader().lexicon("text")]
                logger.debug("loaded %d words for wildcard expansion", len(self._words))
            return self._words

    def _pin(
        self, query: Any, searcher: Searcher, budget: ExpansionBudget, deadline: Deadline, preload: bool = False
    ) -> Any:
        """Replace each wildcard, prefix or word range on the text field by its expansion (same terms, same order).

        Raises:
            QueryTooBroadError: the expansions exceed the budget.
            SearchTimeoutError: the deadline passed while expanding.
        """
        from whoosh.query import Every, Prefix, TermRange, Wildcard

        if isinstance(query, Every):  # only reached with the guard off (max_terms=None)
            return deadline_every_class()(query.fieldname, query.boost, deadline) if deadline.active else query
        if isinstance(query, TermRange) and query.fieldname == "text":
            found = _in_range(self._lexicon(searcher), query)
        elif isinstance(query, (Prefix, Wildcard)) and query.fieldname == "text" and query.text not in ("", "*"):
            words = self._lexicon(searcher)
            if isinstance(query, Prefix):
                found = _with_prefix(words, query.text)
            else:
                pattern = re.compile(fnmatch.translate(query.text))
                found = [w for w in _with_prefix(words, query._find_prefix(query.text)) if pattern.match(w)]
        elif query.is_leaf():
            return query
        else:
            return query.apply(lambda child: self._pin(child, searcher, budget, deadline, preload))
        part = describe_part(query)
        budget.add(part, len(found))
        if budget.max_postings is not None:
            doc_freq = self._doc_freq(searcher)
            budget.add_postings(part, sum(doc_freq(w) for w in found))
        deadline.check()
        return pinned_terms_class()(query, tuple(w.encode("utf-8") for w in found), deadline, preload)

    @staticmethod
    def _doc_freq(searcher: Searcher) -> Callable[[str], int]:
        """Pages a word of the text field is on (0 for a word not in the index)."""
        reader = searcher.reader()
        return lambda word: int(reader.doc_frequency("text", word))

    def close(self) -> None:
        """Close the searchers; searches after this raise ``RuntimeError``."""
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, []
        for searcher in idle:
            searcher.close()

    def __enter__(self) -> WhooshIndex:
        """Use as a context manager that closes the index."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the index."""
        self.close()


def _has_patterns(query: Any) -> bool:
    from whoosh.query import Every, Prefix, TermRange, Wildcard

    return any(isinstance(q, (Prefix, Wildcard, TermRange, Every)) for q in query.leaves())


def _has_negation(query: Any) -> bool:
    """Whether ``query`` has a ``NOT``, ``ANDNOT`` or ``ANDMAYBE`` part (where Whoosh's block skipping has quirks)."""
    from whoosh.query import AndMaybe, AndNot, Not

    todo = [query]
    while todo:
        q = todo.pop()
        if isinstance(q, (Not, AndNot, AndMaybe)):
            return True
        todo.extend(q.children())
    return False


def _with_prefix(words: list[str], prefix: str) -> list[str]:
    """The sorted words that start with ``prefix`` (all words for an empty prefix)."""
    if not prefix:
        return words
    lo = bisect.bisect_left(words, prefix)
    if ord(prefix[-1]) < 0x10FFFF:
        hi = bisect.bisect_left(words, prefix[:-1] + chr(ord(prefix[-1]) + 1), lo)
    else:  # pragma: no cover - a prefix ending in the last code point
        hi = lo
        while hi < len(words) and words[hi].startswith(prefix):
            hi += 1
    return words[lo:hi]


def _in_range(words: list[str], q: Any) -> list[str]:
    """The sorted words inside a ``TermRange``, with the bounds Whoosh's ``TermRange._btexts`` applies.

    Words are in code-point order, which is the UTF-8 byte order of Whoosh's lexicon.
    """
    lo = 0 if q.start is None else bisect.bisect_left(words, q.start)
    if q.start is not None and q.startexcl and lo < len(words) and words[lo] == q.start:
        lo += 1
    if q.end is None:
        return words[lo:]
    hi = bisect.bisect_left(words, q.end, lo) if q.endexcl else bisect.bisect_right(words, q.end, lo)
    return words[lo:hi]
