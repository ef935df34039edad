"""The one declaration of MADQA's dataset columns (questions, documents, pages).

Every other module imports these names; nothing else spells out a column list. The question schema is the
public release's (``OxRML/MADQA``) plus the derived ``hop_type`` column, which is left empty on the test split
(it is derived from the hidden evidence).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, Literal

HopType = Literal["single", "cross_page", "cross_doc"]
HOP_TYPES: tuple[HopType, ...] = ("single", "cross_page", "cross_doc")

QA_SPLITS: tuple[str, ...] = ("train", "dev", "test")
#: Split holding the hidden labels; its public rows carry empty ``answer_variants``/``evidence``/``hop_type``.
HIDDEN_SPLIT = "test"
#: Split names of the other configs. Every config's split is ``train``, the Hub's convention
#: (``load_dataset("madqa", "documents", split="train")``); the public release calls its documents split ``links``,
#: and folders built before were named so too: readers take the only split whatever its name.
DOCUMENTS_SPLIT = "train"
LEGACY_DOCUMENTS_SPLIT = "links"
#: The names a written folder's documents config answers to, both on the same files: ``train``, and ``links``, the
#: public release's, which the public harness's agents load (``load_dataset(folder, "documents", split="links")``).
DOCUMENTS_SPLITS: tuple[str, ...] = (DOCUMENTS_SPLIT, LEGACY_DOCUMENTS_SPLIT)
PAGES_SPLIT = "train"

#: A page's ``text_source``: its text layer, OCR, both (a short layer over a scan, :mod:`.pdf_scan_layer`), none.
TEXT_SOURCES: tuple[str, ...] = ("pdf", "ocr", "pdf+ocr", "none")
#: Sources whose text OCR read, in whole or in part: OCR'd pages, whose cache entry records Tesseract's data.
OCR_SOURCES: frozenset[str] = frozenset({"ocr", "pdf+ocr"})

#: Columns of the public release, in its order.
RELEASE_QA_COLUMNS: tuple[str, ...] = (
    "id",
    "question",
    "answer_variants",
    "evidence",
    "document_category",
    "domain",
)

#: Column names of each config, in order: what readers need, without importing ``datasets`` (a second at start).
QA_COLUMNS: tuple[str, ...] = (*RELEASE_QA_COLUMNS, "hop_type")
DOCUMENT_COLUMNS: tuple[str, ...] = ("document", "url", "path", "num_pages", "sha256", "document_category", "domain")
PAGE_COLUMNS: tuple[str, ...] = ("document", "page", "text", "text_source")

_FEATURE_NAMES = ("EVIDENCE_FEATURE", "QA_FEATURES", "DOCUMENT_FEATURES", "PAGE_FEATURES", "FEATURES_BY_CONFIG")


@functools.cache
def _features() -> dict[str, Any]:
    """The ``datasets`` feature declarations, built on first use (importing ``datasets``)."""
    import datasets

    text, number = datasets.Value("string"), datasets.Value("int64")
    evidence = datasets.List({"document": text, "page": number})
    qa = datasets.Features(
        {
            "id": text,
            "question": text,
            "answer_variants": datasets.List(datasets.List(text)),
            "evidence": evidence,
            "document_category": text,
            "domain": text,
            "hop_type": text,
        }
    )
    documents = datasets.Features(
        {
            "document": text,
            "url": text,
            "path": text,
            "num_pages": number,
            "sha256": text,
            "document_category": text,
            "domain": text,
        }
    )
    pages = datasets.Features({"document": text, "page": number, "text": text, "text_source": text})
    return {
        "EVIDENCE_FEATURE": evidence,
        "QA_FEATURES": qa,
        "DOCUMENT_FEATURES": documents,
        "PAGE_FEATURES": pages,
        "FEATURES_BY_CONFIG": {"default": qa, "documents": documents, "pages": pages},
    }


def __getattr__(name: str) -> Any:
    """``QA_FEATURES``, ``DOCUMENT_FEATURES``, ``PAGE_FEATURES``, ``EVIDENCE_FEATURE`` and ``FEATURES_BY_CONFIG``:
    the ``datasets.Features`` of each config, imported only by what builds or casts a dataset."""
    if name in _FEATURE_NAMES:
        return _features()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def hop_type(evidence: Iterable[Mapping[str, Any]]) -> HopType | None:
    """Classify an evidence set as in the paper (Property 2).

    Args:
        evidence: ``{"document", "page"}`` records (page 1-based).

    Returns:
        ``"single"`` for one unique page, ``"cross_page"`` for several pages of one document, ``"cross_doc"``
        for pages of several documents, ``None`` for an empty set (hidden labels).

    >>> hop_type([{"document": "a.pdf", "page": 2}])
    'single'
    >>> hop_type([{"document": "a.pdf", "page": 2}, {"document": "a.pdf", "page": 5}])
    'cross_page'
    >>> hop_type([{"document": "a.pdf", "page": 2}, {"document": "b.pdf", "page": 1}])
    'cross_doc'
    """
    pages = {(str(e["document"]), int(e["page"])) for e in evidence}
    if not pages:
        return None
    if len({d for d, _ in pages}) > 1:
        return "cross_doc"
    return "single" if len(pages) == 1 else "cross_page"


def is_yes_no(answer_variants: Iterable[Iterable[str]]) -> bool:
    """Whether every variant of an answer is a single yes/no token.

    >>> is_yes_no([["Yes"], ["yes"]])
    True
    >>> is_yes_no([["12 kg"]])
    False
    """
    variants = [list(v) for v in answer_variants]
    return bool(variants) and all(len(v) == 1 and v[0].strip().lower() in {"yes", "no"} for v in variants)


class SchemaError(ValueError):
    """A record does not match the MADQA schema; the message names the record and the field."""


def validate_question(record: Mapping[str, Any], where: str, *, labelled: bool = True) -> None:
    """Check one question record against :data:`QA_FEATURES`.

    Args:
        record: the question as a mapping.
        where: a human-readable location used in error messages (e.g. ``"questions.jsonl line 4"``).
        labelled: whether ``answer_variants`` and ``evidence`` must be present and non-empty.

    Raises:
        SchemaError: naming ``where`` and the offending field.
    """
    for key in RELEASE_QA_COLUMNS:
        if key not in record:
            raise SchemaError(f"{where}: missing field '{key}'")
    for key in ("id", "question", "document_category", "domain"):
        if not isinstance(record[key], str) or not record[key].strip():
            raise SchemaError(f"{where}: field '{key}' must be a non-empty string, got {record[key]!r}")
    variants = record["answer_variants"]
    if not isinstance(variants, list) or not all(
        isinstance(v, list) and all(isinstance(s, str) for s in v) for v in variants
    ):
        raise SchemaError(f"{where}: field 'answer_variants' must be a list of lists of strings")
    evidence = record["evidence"]
    if not isinstance(evidence, list):
        raise SchemaError(f"{where}: field 'evidence' must be a list of {{document, page}}")
    for i, ev in enumerate(evidence):
        if not isinstance(ev, Mapping) or set(ev) != {"document", "page"}:
            raise SchemaError(f"{where}: evidence[{i}] must have exactly the keys 'document' and 'page'")
        page = ev["page"]
        if isinstance(page, bool) or not isinstance(page, int) or page < 1:
            raise SchemaError(f"{where}: evidence[{i}].page must be a positive integer (1-based), got {page!r}")
    if labelled and (not variants or not evidence or not all(variants)):
        raise SchemaError(f"{where}: a labelled question needs non-empty 'answer_variants' and 'evidence'")
