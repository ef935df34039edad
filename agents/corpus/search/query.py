r"""Query syntax and text analysis shared by both search backends.

Both backends parse queries with Whoosh's ``QueryParser("text", schema)`` as the public MADQA harness does (AND
between words by default; ``AND``/``OR``/``NOT``/``ANDNOT``/``ANDMAYBE``; ``"phrases"``; ``( )``; ``*`` and ``?``
wildcards; ``field:value`` for the ``document``, ``page`` and ``total_pages`` fields), so the same text means the
same query everywhere. Whoosh is a main dependency; it is imported lazily, inside the functions.

:func:`analyze` reproduces Whoosh's ``StandardAnalyzer`` (the harness's ``TEXT()`` field) without building token
objects: ``\w+(\.?\w+)*`` tokens, lower-cased, minus Whoosh's stop words and one-character tokens, positions
renumbered. The Tantivy backend indexes these tokens, so both engines see identical terms and phrase positions.

:func:`refuse_match_all` and :class:`ExpansionBudget` are the work limits both backends apply before searching
(see "Search limits" in :mod:`madqa.agents.corpus.search`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

from madqa.agents.corpus.search.base import MAX_QUERY_CHARS, SYNTAX_HELP, QuerySyntaxError, QueryTooBroadError

if TYPE_CHECKING:
    from whoosh.fields import Schema
    from whoosh.query import Query

#: Whoosh's default tokenizer pattern (``whoosh.analysis.tokenizers.default_pattern``), without a capturing group.
TOKEN_PATTERN = re.compile(r"\w+(?:\.?\w+)*")
#: Whoosh's ``StopFilter`` drops tokens shorter than this.
MIN_TOKEN_CHARS = 2
#: Characters of a wildcard pattern that are not letters to match.
WILDCARD_CHARS = frozenset("*?")
_NARROW = "Search for specific words instead; a wildcard needs a few letters before it (e.g. invoic*, colo?r)."


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """Whoosh's English stop words (the ``StandardAnalyzer`` default)."""
    from whoosh.analysis import STOP_WORDS

    return frozenset(STOP_WORDS)


def analyze(text: str) -> list[str]:
    """Tokens of ``text`` exactly as Whoosh's ``StandardAnalyzer`` indexes them, in order.

    >>> analyze("The Bell 407's accessories, e-mail: U.S. 3.5 kg")
    ['bell', '407', 'accessories', 'mail', 'u.s', '3.5', 'kg']
    """
    stops = stop_words()
    # Lower-casing first is only safe for ASCII: some characters change length or split when lower-cased.
    tokens = (
        TOKEN_PATTERN.findall(text.lower()) if text.isascii() else [t.lower() for t in TOKEN_PATTERN.findall(text)]
    )
    return [t for t in tokens if len(t) >= MIN_TOKEN_CHARS and t not in stops]


def whoosh_schema() -> Schema:
    """The index schema: the harness's field types, with the pages corpus's field names.

    ``document`` (the harness's ``file``) ``ID``, ``page`` (``page_number``) and ``total_pages`` ``NUMERIC``,
    ``text`` ``TEXT()`` (``StandardAnalyzer``, positions, not stored).
    """
    from whoosh.fields import ID, NUMERIC, TEXT, Schema

    return Schema(
        document=ID(stored=True),
        page=NUMERIC(stored=True),
        total_pages=NUMERIC(stored=True),
        text=TEXT(stored=False),
    )


def parse_query(query: str, schema: Schema) -> Query:
    """Parse ``query`` with the harness's parser settings.

    Raises:
        QuerySyntaxError: the query is empty, too long, or parses to nothing; the message says how to rephrase.
    """
    from whoosh.qparser import QueryParser
    from whoosh.query import NullQuery

    if not isinstance(query, str):
        raise QuerySyntaxError(str(query), f"The search query must be text, got {type(query).__name__}.")
    if not query.strip():
        raise QuerySyntaxError(
            query, f"The search query is empty. Search with a few distinctive words: {SYNTAX_HELP}."
        )
    if len(query) > MAX_QUERY_CHARS:
        raise QuerySyntaxError(
            query,
            f"The search query is {len(query)} characters long (at most {MAX_QUERY_CHARS}). "
            "Search with a few distinctive words, not a sentence or a passage.",
        )
    try:
        # A new parser per call: construction costs ~50 µs and keeps concurrent callers independent.
        parsed = QueryParser("text", schema).parse(query)
    except Exception as exc:  # whoosh raises assorted errors on odd input; all mean "cannot parse"
        raise QuerySyntaxError(query, _unparsable(query, f" ({type(exc).__name__}: {exc})")) from exc
    if parsed is NullQuery:
        raise QuerySyntaxError(query, _unparsable(query, ""))
    return parsed


def _unparsable(query: str, detail: str) -> str:
    words = TOKEN_PATTERN.findall(query)
    content = [w for w in words if w not in {"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE"}]
    if content and not analyze(" ".join(content)):
        reason = (
            "every word in it is ignored by the index: stop words (the, of, and, to, in, is, for, with, ...) and "
            "single letters or digits are not indexed. Search for distinctive content words instead"
        )
    elif not content:
        reason = "it has operators or punctuation but no words to search for. Add the words you are looking for"
    else:
        reason = "nothing searchable is left after parsing (check quotes, parentheses and field:value parts)"
    return f"Could not search for {query!r}{detail}: {reason}. Query syntax: {SYNTAX_HELP}."


def describe_part(q: Query) -> str:
    """A query part as the user would write it (``b*``, ``[a TO z]``, ``*``), for error messages.

    >>> from whoosh.query import Every, Prefix, TermRange, Wildcard
    >>> from whoosh.query import Phrase
    >>> [describe_part(q) for q in (Every("text"), Prefix("text", "b"), Wildcard("document", "a?*"),
    ...                             TermRange("text", "a", None), Phrase("text", ["bell", "407"]))]
    ['*', 'b*', 'document:a?*', '[a TO]', '"bell 407"']
    """
    from whoosh.query import Every, Phrase, Prefix, TermRange

    field = "" if getattr(q, "fieldname", None) in (None, "text") else f"{q.fieldname}:"
    if isinstance(q, Phrase):
        return f'{field}"{" ".join(q.words)}"'
    if isinstance(q, Every):
        return f"{field}*"
    if isinstance(q, Prefix):
        return f"{field}{q.text}*"
    if isinstance(q, TermRange):
        start, end = "" if q.start is None else q.start, "" if q.end is None else q.end
        left, right = "{" if q.startexcl else "[", "}" if q.endexcl else "]"
        return f"{field}{left}{start} TO {end}{right}".replace(" TO ]", " TO]").replace("[ TO", "[TO")
    return f"{field}{getattr(q, 'text', q)}"


def refuse_match_all(parsed: Query, query: str) -> None:
    """Raise :class:`QueryTooBroadError` when a part of ``parsed`` matches every page or every word.

    Catches ``*`` in any field (Whoosh's ``Every``; ``foo OR *`` parses to it too) and wildcards without a letter
    (``?*``, ``*?*``, ``??``), which expand to the whole vocabulary. Costs microseconds: no index is read.

    >>> from whoosh.query import And, Term, Wildcard
    >>> refuse_match_all(And([Term("text", "engine"), Wildcard("text", "invoic*")]), "engine invoic*")
    >>> refuse_match_all(Wildcard("text", "*?*"), "*?*")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    madqa.agents.corpus.search.base.QueryTooBroadError: The query '*?*' is too broad: the wildcard *?* has no ...
    """
    from whoosh.query import Every, Wildcard

    for q in parsed.leaves():
        part = describe_part(q)
        if isinstance(q, Every):
            raise QueryTooBroadError(
                query,
                f"The query {query!r} is too broad: {part} matches every page, so it cannot find anything "
                f"specific. {_NARROW}",
                part=part,
            )
        if isinstance(q, Wildcard) and q.text and set(q.text) <= WILDCARD_CHARS:
            raise QueryTooBroadError(
                query,
                f"The query {query!r} is too broad: the wildcard {part} has no letters, so it matches every "
                f"word. {_NARROW}",
                part=part,
            )


class ExpansionBudget:
    """The work limits of one query: counts the words its wildcards, prefixes and ranges expand to (refusing too
    many at once) and the page entries its words read (refused at :meth:`finish`, once the whole query is counted).

    Both are read from the index (word list, document frequencies), never from a clock, and both backends count the
    same parts in the same (depth-first) order, so a query gets the same answer or the same refusal everywhere.

    >>> budget = ExpansionBudget("b* OR c*", 100)
    >>> budget.add("b*", 60)
    >>> budget.add("c*", 60)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    madqa.agents.corpus.search.base.QueryTooBroadError: The query 'b* OR c*' is too broad: c* matches 60 different ...
    >>> budget = ExpansionBudget("tax OR rate", None, max_postings=1000)
    >>> budget.add_postings("tax", 600); budget.add_postings("rate", 700)
    >>> budget.finish()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    madqa.agents.corpus.search.base.QueryTooBroadError: The query 'tax OR rate' is too broad: its words are on ...
    """

    def __init__(self, query: str, max_terms: int | None, max_postings: int | None = None) -> None:
        """Start empty counts for ``query``; a limit of ``None`` counts without refusing."""
        self.query, self.max_terms, self.max_postings = query, max_terms, max_postings
        self.used, self.postings = 0, 0
        self._heaviest: tuple[int, str] = (0, "")  # (page entries, part): the part that reads the most

    def add(self, part: str, terms: int) -> None:
        """Count ``terms`` words for ``part``; raise :class:`QueryTooBroadError` past ``max_terms`` in total."""
        self.used += terms
        if self.max_terms is None or self.used <= self.max_terms:
            return
        total = f" ({self.used:,} in the whole query)" if self.used != terms else ""
        if part.lstrip("{[").startswith(("[", "{")) or " TO" in part:
            advice = "Use a narrower range, or search for specific words."
        else:
            advice = (
                "Use a longer prefix before * or ? (e.g. invoic* rather than in*), fewer wildcards, or specific words."
            )
        raise QueryTooBroadError(
            self.query,
            f"The query {self.query!r} is too broad: {part} matches {terms:,} different words{total}; "
            f"at most {self.max_terms:,} are searched per query. {advice}",
            part=part,
            terms=terms,
        )

    def add_postings(self, part: str, entries: int) -> None:
        """Count the ``entries`` page entries (pages its word or words are on) that ``part`` reads."""
        self.postings += entries
        heaviest, name = self._heaviest
        if entries > heaviest or (entries == heaviest and part < name):  # ties: by name, so counting order is moot
            self._heaviest = (entries, part)

    def finish(self) -> None:
        """Raise :class:`QueryTooBroadError` when the whole query reads more than ``max_postings`` page entries."""
        if self.max_postings is None or self.postings <= self.max_postings:
            return
        entries, part = self._heaviest
        raise QueryTooBroadError(
            self.query,
            f"The query {self.query!r} is too broad: its words are on {self.postings:,} pages in all "
            f"(each word counted on every page it is on; {part} alone on {entries:,}), and a search reads at most "
            f"{self.max_postings:,}. Use fewer and more specific words, fewer wildcards, or a longer prefix before "
            "* or ? (e.g. invoic* rather than in*).",
            part=part,
            postings=self.postings,
        )


def count_postings(parsed: Query, budget: ExpansionBudget, doc_freq: Callable[[str], int]) -> None:
    """Count the page entries of every word of ``parsed`` on the text field, depth first (``NOT`` parts and phrases
    included; ``document:``/``page:`` parts read one or a few entries and are left out). ``doc_freq``: pages a word
    is on. Patterns are counted by the backends as they expand them; this walks the plain words.
    """
    from whoosh.query import Phrase, Term

    for q in parsed.leaves():
        if getattr(q, "fieldname", None) != "text":
            continue
        if isinstance(q, Term):
            word = q.text.decode("utf-8") if isinstance(q.text, bytes) else str(q.text)
            budget.add_postings(describe_part(q), doc_freq(word))
        elif isinstance(q, Phrase):
            budget.add_postings(describe_part(q), sum(doc_freq(str(w)) for w in q.words))


#: Words of a question kept by :func:`or_query` (letters and digits, at least 3 characters: no operator, no wildcard).
_QUESTION_WORD = re.compile(r"[A-Za-z0-9]{3,}")


def or_query(text: str, max_terms: int = 24) -> str:
    """An OR query of a question's distinct words, lower-cased (the index's default is AND between words, which
    rarely matches a whole question): what the seed baselines and the ``bm25`` retriever send.

    >>> or_query("What did the Board approve in 2019? The BOARD approved...")
    'what OR did OR the OR board OR approve OR 2019 OR approved'
    """
    words = list(dict.fromkeys(w.lower() for w in _QUESTION_WORD.findall(text)))[:max_terms]
    return " OR ".join(words)
