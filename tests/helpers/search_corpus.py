"""Page records as the search index and the retrievers read them: small corpora written out by document
(``pages_by_document``), and a synthetic one (pages of random three-syllable words) shared by the search-limit
tests, with the search backends they run on."""

from __future__ import annotations

import itertools
import random
from typing import Any

BACKENDS = ["whoosh", "tantivy"]


def pages_by_document(texts: dict[str, list[str]]) -> list[dict[str, Any]]:
    """The records (``document``, ``page``, ``text``) of each document's pages, numbered from 1, in order."""
    return [
        {"document": document, "page": number, "text": text}
        for document, pages in texts.items()
        for number, text in enumerate(pages, start=1)
    ]


def synthetic_pages(seed: int = 7, words: int = 48_000, n_pages: int = 3000) -> list[dict[str, Any]]:
    """Pages of 40 random three-syllable words (also tests/agents/corpus/test_search_work_limits.py's corpus)."""
    rng = random.Random(seed)
    vocab = [a + b + c for a, b, c in itertools.product(SYLLABLES, repeat=3)]
    rng.shuffle(vocab)
    vocab = vocab[:words]
    pages = [
        {"document": f"doc{i // 10:04d}.pdf", "page": i % 10 + 1, "text": " ".join(rng.choices(vocab, k=40))}
        for i in range(n_pages)
    ]
    pages[0]["text"] = "engine specifications of the bell helicopter " + pages[0]["text"]
    pages[1]["text"] = "engine maintenance " + pages[1]["text"]
    return pages


SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"][:40]
