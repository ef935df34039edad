"""Plain data records shared by the sample generator's modules."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

#: Layout tags a page may carry in the manifest.
LAYOUTS: tuple[str, ...] = ("running_text", "multi_column", "table", "form", "checkbox", "scanned")


@dataclass(frozen=True)
class BuiltDocument:
    """One finished PDF and its bookkeeping.

    Attributes:
        name: file name (``*.pdf``).
        category: document category (e.g. ``"Annual Report"``).
        domain: high-level domain (e.g. ``"Financial"``).
        pdf: the saved PDF bytes.
        num_pages: page count.
        scanned_pages: 1-based numbers of image-only pages.
        layouts: layout tags per 1-based page.
        ocr_probes: strings that OCR must read on each scanned page.
    """

    name: str
    category: str
    domain: str
    pdf: bytes
    num_pages: int
    scanned_pages: tuple[int, ...]
    layouts: dict[int, tuple[str, ...]]
    ocr_probes: dict[int, tuple[str, ...]]


@dataclass(frozen=True)
class QuestionSpec:
    """A question before ids, categories and domains are attached.

    Attributes:
        question: the question text.
        answer_variants: alternative surface forms; each a list of strings (several for a list answer).
        evidence: minimal evidence as ``(file name, 1-based page)`` pairs.
    """

    question: str
    answer_variants: list[list[str]]
    evidence: list[tuple[str, int]]


@dataclass
class Cluster:
    """Documents of one family plus the questions asked about them.

    Attributes:
        documents: the built documents, in generation order.
        questions: the questions, in generation order.
    """

    documents: list[BuiltDocument] = field(default_factory=list)
    questions: list[QuestionSpec] = field(default_factory=list)

    def ask(self, question: str, variants: list[list[str]], *evidence: tuple[str, int]) -> None:
        """Record a question with its answer variants and evidence pages."""
        self.questions.append(QuestionSpec(question, variants, list(evidence)))

    def extend(self, other: Cluster) -> None:
        """Append another cluster's documents and questions."""
        self.documents.extend(other.documents)
        self.questions.extend(other.questions)


class _Rendered(Protocol):
    """What a family's render function returns: a document under construction (``layout.DocBuilder``)."""

    def build(self) -> BuiltDocument: ...


Record = TypeVar("Record")


def render_cluster(
    seed: int, family: str, render: Callable[[Record, random.Random], _Rendered], records: Iterable[Record]
) -> Cluster:
    """A cluster holding one document per record, rendered in order.

    Each family draws from its own stream (``"<seed>-<family>"``), so a change in one family never shifts the
    filler text or scan noise of another.
    """
    rng = random.Random(f"{seed}-{family}")
    return Cluster(documents=[render(record, rng).build() for record in records])
