"""Files embedded in a PDF (attachments, PDF portfolios): each attached PDF becomes a document of its own.

:func:`extract_attachments` runs at the end of :func:`.pdf_text.extract_pdf`. Every file in the document's
``/EmbeddedFiles`` name tree (which is where a portfolio keeps its files) and in its file-attachment annotations:

* that is a PDF (``%PDF-`` in its first 1024 bytes) is extracted like any file, as the document
  ``<parent>#<attachment name>`` (:func:`attachment_document`), and the parent's result lists it in
  :attr:`.pdf_text.PdfResult.attachments` (:attr:`.extract.ExtractionReport.parents` records the parent); an
  attached PDF's own attachments are extracted in turn, down to :data:`MAX_DEPTH` levels;
* that is not a PDF (a spreadsheet, an image) is named in a warning of the parent, with its size.

Nothing attached is dropped without a message. A portfolio's cover page is extracted as the parent's page 1.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

PdfResult = Any  # .pdf_text.PdfResult (not imported: .pdf_text imports this module)

#: Attached PDFs inside attached PDFs are extracted down to this depth (the file itself is depth 0).
MAX_DEPTH = 3
#: Separator between a parent's document name and its attachment's name in the attachment's document name.
SEPARATOR = "#"


def attachment_document(parent: str, name: str) -> str:
    """The document name of attachment ``name`` of document ``parent``.

    >>> attachment_document("report.pdf", "annex.pdf")
    'report.pdf#annex.pdf'
    """
    return f"{parent}{SEPARATOR}{name}"


def attached_files(doc: Any, annotated: Iterable[int] | None = None) -> Iterator[tuple[str, bytes]]:
    """``(name, bytes)`` of each embedded file of an open document, one at a time, names made unique.

    ``annotated``: the (0-based) pages that may hold file-attachment annotations, when the caller knows them
    (:mod:`.pdf_text` notes the pages with annotations as it reads them: the others are not loaded again); ``None``
    looks at every page.
    """
    import pymupdf

    seen: set[str] = set()

    def unique(raw: str) -> str:
        name = PurePosixPath(raw.replace("\\", "/")).name.strip() or "attachment"
        stem, suffix, k = PurePosixPath(name).stem, PurePosixPath(name).suffix, 2
        while name in seen:
            name, k = f"{stem} ({k}){suffix}", k + 1
        seen.add(name)
        return name

    for key in doc.embfile_names():
        info = doc.embfile_info(key)
        yield unique(info.get("ufilename") or info.get("filename") or key), doc.embfile_get(key)
    for index in range(doc.page_count) if annotated is None else annotated:
        page = doc.load_page(index)
        for annot in page.annots(types=[pymupdf.PDF_ANNOT_FILE_ATTACHMENT]):
            info = annot.file_info
            yield unique(info.get("filename") or f"page{page.number + 1}-attachment"), annot.get_file()


def is_portfolio(doc: Any) -> bool:
    """Whether the document is a PDF portfolio (a ``/Collection`` in its catalog)."""
    return bool(doc.xref_get_key(doc.pdf_catalog(), "Collection")[0] not in ("null", ""))


def extract_attachments(
    doc: Any,
    result: PdfResult,
    extract: Callable[[Path, int], PdfResult],
    depth: int,
    annotated: Iterable[int] | None = None,
) -> None:
    """Extract the attached PDFs of ``doc`` into ``result.attachments``; name the other attached files.

    Args:
        doc: the open parent document.
        result: the parent's result (its warnings and attachments are appended to).
        extract: extracts one PDF file at the given depth (:func:`.pdf_text.extract_pdf`).
        depth: the parent's depth (0 for a file of the corpus).
        annotated: the pages that may hold file-attachment annotations (default: all; see :func:`attached_files`).
    """
    try:
        files = list(attached_files(doc, annotated))
    except Exception as exc:  # noqa: BLE001 - a broken name tree costs the attachments, with a message
        result.warnings.append(f"embedded files could not be read ({type(exc).__name__}: {exc})")
        return
    if not files:
        return
    if is_portfolio(doc):
        result.warnings.append(f"PDF portfolio of {len(files)} file(s): each PDF in it is its own document")
    with tempfile.TemporaryDirectory(prefix="madqa-attached-") as tmp:
        for name, data in files:
            if b"%PDF-" not in data[:1024]:
                result.warnings.append(f"attached file '{name}' ({len(data)} bytes) is not a PDF: not extracted")
            elif depth >= MAX_DEPTH:
                result.warnings.append(f"attached PDF '{name}' is nested {depth + 1} levels deep: not extracted")
            else:
                path = Path(tmp) / f"attachment{len(result.attachments)}.pdf"
                path.write_bytes(data)
                child = extract(path, depth + 1)
                path.unlink()
                child.name_in_parent = name
                result.attachments.append(child)
                result.warnings.append(
                    f"attached PDF '{name}' is extracted as its own document (this one's name + '{SEPARATOR}{name}')"
                )
    name_attachments(result)


def name_attachments(result: PdfResult) -> None:
    """Name each attachment (and its rows), recursively, after ``result.document``."""
    for child in result.attachments:
        child.document = attachment_document(result.document, child.name_in_parent or "attachment")
        child.parent = result.document
        for row in child.pages:
            row["document"] = child.document
        name_attachments(child)


def walk(result: PdfResult) -> Iterator[PdfResult]:
    """``result`` and all its attachments, depth first."""
    yield result
    for child in result.attachments:
        yield from walk(child)


def to_entry(result: PdfResult) -> dict[str, Any]:
    """An attachment's result as JSON-ready data for the cache (:func:`from_entry` reads it back)."""
    return {
        "name": result.name_in_parent,
        "sha256": result.sha256,
        "pages": result.pages,
        "warnings": result.warnings,
        "error": result.error,
        "attachments": [to_entry(child) for child in result.attachments],
    }


def from_entry(entry: dict[str, Any], make: Callable[..., PdfResult]) -> PdfResult:
    """The attachment result :func:`to_entry` stored, built by ``make`` (:class:`.pdf_text.PdfResult`); named
    later by :func:`name_attachments`."""
    child = make(
        str(entry["name"]),
        str(entry["sha256"]),
        pages=list(entry["pages"]),
        from_cache=True,
        error=entry.get("error"),
        warnings=[str(w) for w in entry.get("warnings", [])],
    )
    child.name_in_parent = str(entry["name"])
    child.attachments = [from_entry(e, make) for e in entry.get("attachments", [])]
    return child
