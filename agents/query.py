r"""Query syntax and text analysis shared by both search backends.

Both backends parse queries with Whoosh's ``QueryParser("text", schema)`` as the public MADQA harness does (AND
between words by default; ``AND``/``OR``/``NOT``/``ANDNOT``/``ANDMAYBE``; ``"phrases"``; ``( )``; ``*`` and ``?``
wildcards; ``field:value`` for the ``document``, ``page`` and ``total_pages`` fields), so the same text means the
same query everywhere. Whoosh is a main dependency; it is imported lazily, inside the functions.

:func:`analyze` reproduces Whoosh's ``StandardAnalyzer`` (the harness's ``TEXT()`` field) without building token
objects: ``\w+(\.?\w+)*`` tokens, lower-cased, minus Whoosh's stop words and one-character tokens, positions
renumbered. The Tantivy backend indexes these tokens, so both engines see identical terms and phrase positions.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from .search import MAX_QUERY_CHARS, SYNTAX_HELP, QuerySyntaxError

if TYPE_CHECKING:
    from whoosh.fields import Schema
    from whoosh.query import Query

#: Whoosh's default tokenizer pattern (``whoosh.analysis.tokenizers.default_pattern``), without a capturing group.
TOKEN_PATTERN = re.compile(r"\w+(?:\.?\w+)*")
#: Whoosh's ``StopFilter`` drops tokens shorter than this.
MIN_TOKEN_CHARS = 2


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
