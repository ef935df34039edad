"""The corpus as the code agent's REPL variables: ``context``, ``pages`` and ``documents`` (never in the prompt)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def build_corpus(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The REPL variables of a pages corpus (rows with ``document``, ``page``, ``text``): context, pages, documents.

    >>> c = build_corpus([{"document": "b.pdf", "page": 2, "text": "two"}, {"document": "b.pdf", "page": 1,
    ...                   "text": "one"}])
    >>> c["pages"], c["documents"]
    ({'b.pdf': ['one', 'two']}, ['b.pdf'])
    >>> print(c["context"])
    [FILE: b.pdf]
    [PAGE 1]
    one
    [END PAGE 1]
    [PAGE 2]
    two
    [END PAGE 2]
    """
    by_doc: dict[str, dict[int, str]] = {}
    for row in rows:
        by_doc.setdefault(str(row["document"]), {})[int(row["page"])] = str(row.get("text") or "")
    pages = {doc: [texts.get(n, "") for n in range(1, max(texts) + 1)] for doc, texts in sorted(by_doc.items())}
    parts = []
    for doc, texts in pages.items():
        parts.append(f"[FILE: {doc}]")
        parts.extend(f"[PAGE {n}]\n{text.strip()}\n[END PAGE {n}]" for n, text in enumerate(texts, 1))
    return {"context": "\n".join(parts), "pages": pages, "documents": list(pages)}
