"""Gold questions for metric tests, in the dataset's record layout, written one per line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def gold_record(
    qid: str,
    question: str,
    answer_variants: list[list[str]],
    evidence: Sequence[tuple[str, int]],
    domain: str,
    document_category: str,
) -> dict[str, Any]:
    """One gold question; ``evidence`` as ``(document, page)`` pairs."""
    return {
        "id": qid,
        "question": question,
        "answer_variants": answer_variants,
        "evidence": [{"document": document, "page": page} for document, page in evidence],
        "domain": domain,
        "document_category": document_category,
    }
