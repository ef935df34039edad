r"""Tantivy backend of :mod:`madqa.agents.corpus.search` (optional: ``pip install 'madqa[search-tantivy]'``).

Same interface, tokens and query syntax as the Whoosh backend, on the Tantivy engine (Rust): builds in seconds
instead of minutes and answers in about a millisecond. It is built to agree with Whoosh as far as Tantivy allows:

* **Tokens.** Text is analysed in Python by :func:`madqa.agents.corpus.search.query.analyze` (Whoosh's
  ``StandardAnalyzer``:
  ``\w+(\.?\w+)*``, lower case, no stop words or one-character tokens, positions renumbered) and indexed with
  Tantivy's whitespace tokenizer, so both engines hold the same terms at the same positions.
* **Parsing.** Queries are parsed by Whoosh's ``QueryParser`` (:func:`madqa.agents.corpus.search.query.parse_query`)
  and the
  parse tree is compiled to Tantivy queries, instead of going through Tantivy's own parser. That parser differs in
  ways that silently change results: OR is its default (``conjunction_by_default=True`` would fix only that);
  ``repor*`` becomes the term ``repor`` and ``rep?rt`` a phrase; ``-``/``+`` prefixes, ``:`` and ``[...]`` have
  other meanings; and its analysis would drop Whoosh's stop-word and short-token rules.
* **Wildcards** (``*``, ``?``) are expanded against the term dictionary exactly as Whoosh expands them (words
  sharing the literal prefix, filtered by ``fnmatch.translate``) rather than run as Tantivy regex queries, whose
  constant score would ignore Whoosh's scoring rules: one word, its BM25; 2 words, or up to 1,023 words in an
  index of more than 5,000 pages, the sum of their BM25 scores; otherwise a constant 1.0.
* **Scoring.** Tantivy's BM25 uses the same K1=1.2, B=0.75 and length normalisation as Whoosh's BM25F but another
  IDF (``ln(1 + (N - n + 0.5) / (n + 0.5))`` instead of Whoosh's ``ln(N / (n + 1)) + 1``); each term is boosted by
  the ratio of the two, so scores equal Whoosh's up to the engines' different 8-bit quantisation of page lengths.
  Phrases score as the sum of their words (as Whoosh's phrase query does), ``NOT x`` parts add 1.0 (Whoosh's
  inverse matcher), ranges score 1.0.

Measured by ``madqa bench search`` (18,619 synthetic pages, 300 queries, k=5, two shared cores): build 8.1 s,
29 MiB on disk, peak RSS 371 MiB, query p50 0.54 ms, p95 1.2 ms; top-5 identical to Whoosh's for 70% of the
queries, mean Jaccard 0.962 (the differences are near-equal or equal scores ordered differently).

Remaining differences from the Whoosh backend, all minor:

* ties (equal scores, e.g. pure wildcard or ``NOT`` queries) are broken by Tantivy's document order, which is row
  order within a segment but not guaranteed across segments (the bench corpus builds into one segment);
* Whoosh's block-skipping quirk (pages lost from ``robe NOT zzzqqq`` when the excluded word is not indexed, see
  :mod:`.whoosh_backend`) does not exist here: Tantivy returns the pages ``robe`` finds;
* length quantisation makes near-equal scores order differently now and then (the bench reports top-5 agreement);
* ranges over words (``[apple TO banana]``) are expanded over the whole term dictionary: correct but slow;
* ``document:`` and ``page:`` terms work as in Whoosh; a whole-field wildcard ``*`` matches pages that have text.

**Search limits** (:class:`madqa.agents.corpus.search.SearchLimits`; why and what in
:mod:`madqa.agents.corpus.search`): the same
work limits as Whoosh's (:func:`madqa.agents.corpus.search.query.refuse_match_all`, then each wildcard's, prefix's and
word
range's words counted against ``max_terms`` while compiling, and every word's page entries, from the searcher's
``doc_freq``, against ``max_postings``), counted in the same units and order, so a query is refused or accepted
alike, with the same message, by both backends. tantivy-py 0.27 offers no time limit or cancellation
(``Searcher.search`` takes none, and the Rust search runs to completion once called), so the safety net's
:class:`~madqa.agents.corpus.search.Deadline` is checked while wildcards are expanded in Python (every 4,096 words) and
once more before the Rust search starts; the work limits bound that search. On 6,000 bench pages ``*?*`` took 0.6
to 0.9 s here without limits, nearly all of it the Python expansion.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from madqa.agents.corpus.search.base import Deadline, PageHit, PageRecord, QuerySyntaxError, SearchLimits
from madqa.agents.corpus.search.query import (
    ExpansionBudget,
    analyze,
    count_postings,
    describe_part,
    parse_query,
    refuse_match_all,
    whoosh_schema,
)

logger = logging.getLogger(__name__)

#: Name under which the whitespace analyzer is registered (registration is per process, not stored in the index).
TOKENIZER = "madqa_whoosh_tokens"
#: Writer memory budget (bytes); one indexing thread keeps documents in row order.
WRITER_HEAP = 256_000_000
#: Whoosh's ``Or.TOO_MANY_CLAUSES`` and the index size above which it sums wildcard terms' scores.
_WHOOSH_MANY_CLAUSES = 1024
_WHOOSH_BIG_INDEX = 5000
_K1 = 1.2
#: Words examined between two deadline checks while expanding a pattern.
_CHECK_EVERY = 4096


def check_available() -> None:
    """Raise an actionable ImportError when the tantivy package is missing."""
    try:
        import tantivy  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "the tantivy search backend needs the tantivy package: pip install 'madqa[search-tantivy]' "
            "(or pip install tantivy), or use the default whoosh backend"
        ) from exc


def _schema() -> Any:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("document", stored=True, tokenizer_name="raw")
    sb.add_integer_field("page", stored=True, indexed=True, fast=True)
    sb.add_integer_field("total_pages", stored=True, indexed=True, fast=True)
    sb.add_text_field("text", stored=False, tokenizer_name=TOKENIZER, index_option="position")
    return sb.build()


def _register(index: Any) -> None:
    import tantivy

    index.register_tokenizer(TOKENIZER, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())


def build(records: Sequence[PageRecord], folder: Path, *, progress: bool = True) -> None:
    """Write a Tantivy index of ``records`` into the empty folder ``folder``."""
    import tantivy
    from tqdm.auto import tqdm

    index = tantivy.Index(_schema(), path=str(folder))
    _register(index)
    writer = index.writer(WRITER_HEAP, 1)
    with tqdm(total=len(records), desc="tantivy index", unit="page", disable=not progress) as bar:
        for r in records:
            doc = tantivy.Document()
            doc.add_text("document", r.document)
            doc.add_integer("page", r.page)
            doc.add_integer("total_pages", r.total_pages)
            doc.add_text("text", " ".join(analyze(r.text)))
            writer.add_document(doc)
            bar.update()
        bar.set_postfix_str("committing")
        writer.commit()
        writer.wait_merging_threads()


def open_existing(folder: Path, limits: SearchLimits | None = None) -> TantivyIndex:
    """Open a complete index folder."""
    return TantivyIndex(folder, limits=limits)


@lru_cache(maxsize=1)
def _parse_schema() -> Any:
    return whoosh_schema()


class TantivyIndex:
    """A Tantivy page index; one searcher serves all threads (Tantivy searchers are thread-safe).

    Attributes:
        folder: the index folder.
        limits: per-search limits (time and breadth); assign another :class:`SearchLimits` to change them.
    """

    backend = "tantivy"

    def __init__(self, folder: str | os.PathLike[str], limits: SearchLimits | None = None) -> None:
        """Open the index and its searcher."""
        import tantivy

        self.folder = Path(folder)
        self.limits = limits or SearchLimits()
        self._index = tantivy.Index.open(str(self.folder))
        _register(self._index)
        self._schema = self._index.schema
        self._searcher: Any = self._index.searcher()
        self._docs = int(self._searcher.num_docs)

    def __repr__(self) -> str:
        """Folder and page count."""
        return f"TantivyIndex({str(self.folder)!r}, pages={self._docs})"

    def search(self, query: str, k: int = 5) -> list[PageHit]:
        """Top ``k`` pages for ``query`` (syntax and errors: see :mod:`madqa.agents.corpus.search`)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        searcher = self._searcher
        if searcher is None:
            raise RuntimeError("the search index is closed")
        limits = self.limits
        deadline = limits.deadline(query)
        parsed = parse_query(query, _parse_schema())
        if limits.max_terms is not None:
            refuse_match_all(parsed, query)
        budget = ExpansionBudget(query, limits.max_terms, limits.max_postings)
        compiled = _Compiler(self._schema, searcher, self._docs, query, budget, deadline).compile(parsed)
        if limits.max_postings is not None:  # the plain words and phrases; patterns were counted while compiling
            count_postings(parsed, budget, lambda word: int(searcher.doc_freq("text", word)))
            budget.finish()
        deadline.check()  # the last chance: the Rust search below cannot be interrupted
        result = searcher.search(compiled, limit=k, count=False)
        hits = []
        for score, address in result.hits:
            doc = searcher.doc(address)
            hits.append(PageHit(str(doc.get_first("document")), int(doc.get_first("page")), float(score)))
        return hits

    def close(self) -> None:
        """Drop the searcher; searches after this raise ``RuntimeError``."""
        self._searcher = None

    def __enter__(self) -> TantivyIndex:
        """Use as a context manager that closes the index."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the index."""
        self.close()


class _Compiler:
    """Compile one parsed Whoosh query into a Tantivy query for one searcher."""

    def __init__(
        self, schema: Any, searcher: Any, docs: int, query: str, budget: ExpansionBudget, deadline: Deadline
    ) -> None:
        import tantivy

        self.t = tantivy
        self.schema, self.searcher, self.docs, self.query = schema, searcher, docs, query
        self.budget, self.deadline = budget, deadline

    def matching(self, terms: Any, keep: Any) -> list[tuple[str, int]]:
        """The ``(word, doc_freq)`` pairs of ``terms`` that ``keep`` accepts, checking the deadline as it goes."""
        check, found = self.deadline.check, []
        for i, (t, n) in enumerate(terms):
            if keep(t):
                found.append((t, n))
            if i % _CHECK_EVERY == _CHECK_EVERY - 1:
                check()
        return found

    def unsupported(self, what: str) -> QuerySyntaxError:
        return QuerySyntaxError(
            self.query,
            f"Could not search for {self.query!r}: {what} is not supported by this search engine. "
            'Use words, "phrases", AND / OR / NOT and * or ? wildcards.',
        )

    def compile(self, q: Any) -> Any:
        from whoosh import query as wq

        Q, Occur = self.t.Query, self.t.Occur  # noqa: N806
        if isinstance(q, wq.Term):
            out = self.term(q.fieldname, q.text)
        elif isinstance(q, wq.Phrase):
            out = self.phrase(q)
        elif isinstance(q, wq.Every):
            out = Q.all_query() if q.fieldname in (None, "", "*") else self.const(self.expand_all(q.fieldname))
        elif isinstance(q, (wq.Prefix, wq.Wildcard, wq.TermRange)):
            out = self.multi_term(q)
        elif isinstance(q, wq.NumericRange):
            out = self.numeric_range(q)
        elif isinstance(q, wq.Not):
            out = Q.boolean_query([(Occur.Must, self.const(Q.all_query())), (Occur.MustNot, self.compile(q.query))])
        elif isinstance(q, wq.AndNot):
            out = Q.boolean_query([(Occur.Must, self.compile(q.a)), (Occur.MustNot, self.compile(q.b))])
        elif isinstance(q, wq.AndMaybe):
            out = Q.boolean_query([(Occur.Must, self.compile(q.a)), (Occur.Should, self.compile(q.b))])
        elif isinstance(q, wq.Require):
            out = Q.boolean_query(
                [(Occur.Must, self.compile(q.a)), (Occur.Must, Q.boost_query(self.compile(q.b), 0.0))]
            )
        elif isinstance(q, wq.And):
            out = Q.boolean_query([(Occur.Must, self.compile(s)) for s in q.subqueries])
        elif isinstance(q, wq.Or):
            out = Q.boolean_query([(Occur.Should, self.compile(s)) for s in q.subqueries])
        else:
            raise self.unsupported(f"the query part {q!r}")
        boost = float(getattr(q, "boost", 1.0))
        return out if boost == 1.0 else Q.boost_query(out, boost)

    def const(self, q: Any, score: float = 1.0) -> Any:
        return self.t.Query.const_score_query(q, score)

    def term(self, field: str, text: Any, doc_freq: int | None = None) -> Any:
        Q = self.t.Query  # noqa: N806
        if field == "text":
            word = text.decode("utf-8") if isinstance(text, bytes) else str(text)
            base = Q.term_query(self.schema, "text", word)
            n = int(self.searcher.doc_freq("text", word)) if doc_freq is None else doc_freq
            return base if n == 0 else Q.boost_query(base, _idf_ratio(self.docs, n))
        if field == "document":  # Whoosh's ID field is not scored: a match weighs 1.0
            name = text.decode("utf-8") if isinstance(text, bytes) else str(text)
            return self.const(Q.term_query(self.schema, "document", name))
        if field in ("page", "total_pages"):
            value = _parse_schema()[field].from_bytes(text) if isinstance(text, bytes) else int(text)
            return self.const(Q.term_query(self.schema, field, int(value)))
        raise self.unsupported(f"the field {field!r}")

    def phrase(self, q: Any) -> Any:
        Q, Occur = self.t.Query, self.t.Occur  # noqa: N806
        if q.fieldname != "text":
            raise self.unsupported(f"a phrase in the field {q.fieldname!r}")
        names = [str(w) for w in q.words]
        words: list[str | tuple[int, str]] = list(names)
        slop = max(0, int(getattr(q, "slop", 1)) - 1)  # Whoosh's slop 1 means adjacent words
        # The phrase filters (weight 0); the words score, as Whoosh's phrase query sums its terms' scores.
        clauses = [(Occur.Must, Q.boost_query(Q.phrase_query(self.schema, "text", words, slop), 0.0))]
        clauses += [(Occur.Must, self.term("text", w)) for w in names]
        return Q.boolean_query(clauses)

    def expand_all(self, field: str) -> Any:
        return self.t.Query.regex_query(self.schema, field, ".*")

    def multi_term(self, q: Any) -> Any:
        from whoosh import query as wq

        Q, Occur = self.t.Query, self.t.Occur  # noqa: N806
        if q.fieldname != "text":
            raise self.unsupported(f"a wildcard or range in the field {q.fieldname!r}")
        if isinstance(q, wq.Prefix):
            found = self.searcher.terms_with_prefix("text", q.text)
        elif isinstance(q, wq.Wildcard):
            pattern = re.compile(fnmatch.translate(q.text))
            prefix = q._find_prefix(q.text)  # Whoosh's literal prefix (up to the first * ? or [)
            found = self.matching(self.searcher.terms_with_prefix("text", prefix), pattern.match)
        else:  # TermRange over words
            start, end = q.start or "", q.end
            found = self.matching(
                self.searcher.terms_with_prefix("text", ""),
                lambda t: (
                    (t > start or (t == start and not q.startexcl))
                    and (end is None or t < end or (t == end and not q.endexcl))
                ),
            )
        part = describe_part(q)
        self.budget.add(part, len(found))
        self.budget.add_postings(part, sum(n for _, n in found))
        self.deadline.check()
        if not found:
            return Q.empty_query()
        found.sort()
        if len(found) == 1:
            return self.term("text", *found[0])
        if len(found) < _WHOOSH_MANY_CLAUSES and (len(found) == 2 or self.docs > _WHOOSH_BIG_INDEX):
            return Q.boolean_query([(Occur.Should, self.term("text", t, n)) for t, n in found])
        return self.const(Q.term_set_query(self.schema, "text", [t for t, _ in found]))

    def numeric_range(self, q: Any) -> Any:
        if q.fieldname not in ("page", "total_pages"):
            raise self.unsupported(f"a range in the field {q.fieldname!r}")
        lower = None if q.start is None else int(q.start) + (1 if q.startexcl else 0)
        upper = None if q.end is None else int(q.end) - (1 if q.endexcl else 0)
        if lower is None and upper is None:
            return self.t.Query.all_query()
        query = self.t.Query.range_query(self.schema, q.fieldname, self.t.FieldType.Integer, lower, upper)
        return self.const(query)


def _idf_ratio(docs: int, n: int) -> float:
    """Whoosh's IDF over Tantivy's, so a boosted Tantivy BM25 term score equals Whoosh's BM25F score."""
    whoosh_idf = math.log(docs / (n + 1)) + 1.0
    tantivy_idf = math.log(1.0 + (docs - n + 0.5) / (n + 0.5))
    return whoosh_idf / tantivy_idf
