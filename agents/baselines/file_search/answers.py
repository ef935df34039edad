"""Pure functions of the file-search agent: the model's JSON answer, its citations as corpus pages, and the pages
of the chunks a service retrieved.

How page numbers are recovered. The documents are uploaded whole, as the paper did (G.2: "We upload all 796 PDF
documents"): the services chunk a PDF's text themselves, and per-page uploads would change what they retrieve (a
chunk never spans two pages, 20-60 times as many files, past OpenAI's per-batch limits). So:

* the results line's ``citations`` are the pages the model names in its JSON answer (the paper's Prompt G.2 asks
  for them and "we extract [them] for evaluation"), each ``file`` matched to a corpus document by name
  (:func:`match_document`); a citation naming no corpus document is dropped and counted;
* the chunks the service retrieved (OpenAI's ``file_search_call`` results, Gemini's grounding chunks) come back
  with their file (OpenAI: the file id, which the store cache maps to the document, and our ``document``
  attribute; Gemini: the display name and our ``document`` metadata) and their text. A chunk's page is the one the
  service states where it states one (Gemini's ``page_number`` / ``rag_chunk.page_span``), else the page of that
  document whose text holds most of the chunk's words (:func:`locate_page`, on the dataset's own page texts).
  These pages are the line's ``search_history`` (what was retrieved) and ``file_search.cited_pages`` (the chunks
  the answer's annotations or grounding supports point at), so the retrieval can be scored like any other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Least share of a chunk's distinct words found on a page for :func:`locate_page` to name that page.
MIN_PAGE_OVERLAP = 0.5
_WORD = re.compile(r"\w+", re.UNICODE)


class AnswerFormatError(ValueError):
    """The model's reply holds no JSON object with an ``answer`` (kind ``model``: the model's own failure)."""


@dataclass(frozen=True)
class Chunk:
    """One chunk a service retrieved.

    Attributes:
        document: the corpus document it came from (``None``: not recognised).
        page: its 1-based page (``None``: unknown).
        text: its text, as the service returned it.
        cited: whether the answer's annotations / grounding supports point at it.
    """

    document: str | None
    page: int | None
    text: str = ""
    cited: bool = False


@dataclass(frozen=True)
class Search:
    """One retrieval the service ran: its queries (as the service reports them) and the chunks it got."""

    query: str
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True)
class Reply:
    """One service call's outcome: the model's text, the retrievals it ran, its token counts."""

    text: str
    searches: tuple[Search, ...] = ()
    usage: Mapping[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})


def parse_answer(text: str) -> dict[str, Any]:
    """The ``{"answer", "citations"}`` object of a reply: the last JSON object in it that has ``answer``.

    Fenced (```json) or bare; an ``answer`` given as one string becomes a one-element list.

    >>> parse_answer('Found it.\\n```json\\n{"answer": "42", "citations": [{"file": "a.pdf", "page": 2}]}\\n```')
    {'answer': ['42'], 'citations': [{'file': 'a.pdf', 'page': 2}]}

    Raises:
        AnswerFormatError: no such object.
    """
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict) and "answer" in value:
            found = value
    if found is None:
        raise AnswerFormatError(f"no JSON object with 'answer' in the reply: {text[:200]!r}")
    answer = found["answer"]
    values = [answer] if isinstance(answer, (str, int, float)) else list(answer or [])
    cites = found.get("citations")
    return {"answer": [str(v) for v in values], "citations": list(cites) if isinstance(cites, list) else []}


def match_document(name: str, documents: Iterable[str]) -> str | None:
    """The corpus document a cited file name means: exact, then without folders, case and a ``.pdf`` suffix.

    >>> match_document("Reports/1007969", ["1007969.pdf", "2.pdf"])
    '1007969.pdf'
    """
    docs = list(documents)
    if name in docs:
        return name

    def key(value: str) -> str:
        base = value.replace("\\", "/").rsplit("/", 1)[-1].strip().lower()
        return base[:-4] if base.endswith(".pdf") else base

    by_key = {key(d): d for d in docs}
    return by_key.get(key(name))


def cited_pages(
    citations: Sequence[Any], documents: Iterable[str], pages_of: Mapping[str, int]
) -> tuple[list[dict[str, Any]], int]:
    """The model's citations as ``{document, page}`` of the corpus, and how many were dropped.

    A citation is dropped when its file is no corpus document, or its page is not a page of that document
    (``pages_of``: each document's page count); duplicates are kept once.

    >>> cited_pages([{"file": "A.PDF", "page": "2"}, {"file": "b.pdf", "page": 1}, {"file": "a.pdf", "page": 9}],
    ...             ["a.pdf"], {"a.pdf": 3})
    ([{'document': 'a.pdf', 'page': 2}], 2)
    """
    docs = list(documents)
    out: list[dict[str, Any]] = []
    dropped = 0
    for cite in citations:
        if not isinstance(cite, Mapping):
            dropped += 1
            continue
        doc = match_document(str(cite.get("file") or cite.get("document") or ""), docs)
        try:
            page = int(cite.get("page"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            page = 0
        if doc is None or not 1 <= page <= pages_of.get(doc, 0):
            dropped += 1
            continue
        entry = {"document": doc, "page": page}
        if entry not in out:
            out.append(entry)
    return out, dropped


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 1 or w.isdigit()}


def locate_page(text: str, pages: Mapping[int, str]) -> int | None:
    """The page (of one document's ``{page: text}``) that holds most of ``text``'s distinct words, if it holds at
    least :data:`MIN_PAGE_OVERLAP` of them; ties go to the earlier page.

    >>> locate_page("net revenue 2021 was 4.2 million", {1: "contents", 2: "In 2021 net revenue was 4.2 million."})
    2
    """
    words = _words(text)
    if not words:
        return None
    best, share = None, 0.0
    for page in sorted(pages):
        got = len(words & _words(pages[page])) / len(words)
        if got > share:
            best, share = page, got
    return best if share >= MIN_PAGE_OVERLAP else None


def search_entry(search: Search) -> dict[str, Any]:
    """A results line's ``search_history`` entry of one retrieval: its pages in the service's order, each once."""
    results: list[dict[str, Any]] = []
    for chunk in search.chunks:
        if chunk.document is None or chunk.page is None:
            continue
        entry = {"document": chunk.document, "page": chunk.page}
        if entry not in results:
            results.append(entry)
    return {"query": search.query, "results": results, "count": len(search.chunks), "error": None}


def grounded_pages(searches: Sequence[Search]) -> list[dict[str, Any]]:
    """The pages of the chunks the answer's annotations / grounding supports point at, each once."""
    out: list[dict[str, Any]] = []
    for search in searches:
        for chunk in search.chunks:
            entry = {"document": chunk.document, "page": chunk.page}
            if chunk.cited and chunk.document is not None and chunk.page is not None and entry not in out:
                out.append(entry)
    return out
