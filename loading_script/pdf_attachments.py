"""Files embedded in a PDF (attachments, PDF portfolios): each distinct attached PDF becomes a document of its own.

:func:`extract_attachments` runs at the end of :func:`.pdf_text.extract_pdf`. Every file in the document's
``/EmbeddedFiles`` name tree (which is where a portfolio keeps its files) and in its file-attachment annotations
is read through a bounded stream (:mod:`.pdf_attached_stream`): its decoded bytes go to a temporary file in
chunks, hashed on the way, never whole in memory, and reading stops at :data:`MAX_ATTACHMENT_BYTES`. A file:

* that is a PDF (``%PDF-`` in its first 1024 decoded bytes) is extracted like any file, as the document
  ``<parent>#<attachment name>`` (:func:`attachment_document`), and the parent's result lists it in
  :attr:`.pdf_text.PdfResult.attachments` (:attr:`.extract.ExtractionReport.parents` records the parent); an
  attached PDF's own attachments are extracted in turn, down to :data:`MAX_DEPTH` levels;
* whose bytes equal those of a PDF already extracted from the same corpus file (same sha256, at any level) is
  not extracted again: a warning records it as a reference to the first one (so a file that lists one PDF ten
  times per level gives one document per distinct PDF, not 10 x 10 x 10);
* that decodes to more than :data:`MAX_ATTACHMENT_BYTES`, or comes after :data:`MAX_ATTACHED_DOCUMENTS`
  documents of the same corpus file, or after the first :data:`MAX_FILES_PER_DOCUMENT` files attached to one
  document, is skipped with a warning naming it and the limit;
* that is not a PDF (a spreadsheet, an image) is named in a warning of the parent, with its size.

Nothing attached is dropped without a message, and no attachment costs its parent's pages. A portfolio's cover
page is extracted as the parent's page 1.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .pdf_attached_stream import MIB, AttachedFile, copy_bounded

PdfResult = Any  # .pdf_text.PdfResult (not imported: .pdf_text imports this module)

#: Attached PDFs inside attached PDFs are extracted down to this depth (the file itself is depth 0).
MAX_DEPTH = 3
#: An attached file that decodes to more bytes than this is not extracted (read as a stream up to this size).
MAX_ATTACHMENT_BYTES = 512 * MIB
#: At most this many attached documents are extracted from one corpus file, all levels together.
MAX_ATTACHED_DOCUMENTS = 100
#: Only the first this many files attached to one document are read; the others are counted in a warning.
MAX_FILES_PER_DOCUMENT = 500
#: Separator between a parent's document name and its attachment's name in the attachment's document name.
SEPARATOR = "#"


@dataclass
class AttachmentTree:
    """What one corpus file's extraction has attached so far, all levels together (for duplicates and the cap).

    Attributes:
        seen: sha256 of each attached PDF extracted → its name path from the corpus file (``annex.pdf#storm.pdf``).
        documents: attached documents extracted so far.
    """

    seen: dict[str, str] = field(default_factory=dict)
    documents: int = 0


def attachment_document(parent: str, name: str) -> str:
    """The document name of attachment ``name`` of document ``parent``.

    >>> attachment_document("report.pdf", "annex.pdf")
    'report.pdf#annex.pdf'
    """
    return f"{parent}{SEPARATOR}{name}"


def attached_files(doc: Any, annotated: Iterable[int] | None = None) -> Iterator[AttachedFile]:
    """Each embedded file of an open document, one at a time, names made unique; nothing is decoded here.

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

    for index, key in enumerate(doc.embfile_names()):
        info: dict[str, Any] = {}
        xref = doc._embfile_info(index, info)  # the /EF /F stream (PyMuPDF's public info leaves it out)
        yield AttachedFile(unique(info.get("ufilename") or info.get("filename") or key), xref)
    for index in range(doc.page_count) if annotated is None else annotated:
        page = doc.load_page(index)
        for annot in page.annots(types=[pymupdf.PDF_ANNOT_FILE_ATTACHMENT]):
            kind, value = doc.xref_get_key(annot.xref, "FS/EF/F")
            xref = int(value.split()[0]) if kind == "xref" else 0
            info = annot.file_info
            yield AttachedFile(unique(info.get("filename") or f"page{page.number + 1}-attachment"), xref)


def is_portfolio(doc: Any) -> bool:
    """Whether the document is a PDF portfolio (a ``/Collection`` in its catalog)."""
    return bool(doc.xref_get_key(doc.pdf_catalog(), "Collection")[0] not in ("null", ""))


def extract_attachments(
    doc: Any,
    result: PdfResult,
    extract: Callable[[Path, int, AttachmentTree, str], PdfResult],
    depth: int,
    annotated: Iterable[int] | None = None,
    tree: AttachmentTree | None = None,
    path: str = "",
) -> None:
    """Extract the distinct attached PDFs of ``doc`` into ``result.attachments``; name the other attached files.

    Args:
        doc: the open parent document.
        result: the parent's result (its warnings and attachments are appended to).
        extract: extracts one PDF file at the given depth, sharing the tree, under its name path
            (:func:`.pdf_text.extract_pdf`).
        depth: the parent's depth (0 for a file of the corpus).
        annotated: the pages that may hold file-attachment annotations (default: all; see :func:`attached_files`).
        tree: what the corpus file's extraction attached so far (``None``: ``doc`` is the corpus file).
        path: the parent's name path from the corpus file (``""`` for the corpus file itself).
    """
    tree = tree if tree is not None else AttachmentTree()
    files: list[AttachedFile] = []
    more = 0
    try:
        for attached in attached_files(doc, annotated):
            if len(files) < MAX_FILES_PER_DOCUMENT:
                files.append(attached)
            else:
                more += 1
    except Exception as exc:  # noqa: BLE001 - a broken name tree costs the attachments, with a message
        result.warnings.append(f"embedded files could not be read ({type(exc).__name__}: {exc})")
    if more:
        result.warnings.append(
            f"{more} more attached file(s) not read: at most {MAX_FILES_PER_DOCUMENT} files per document are read"
        )
    if not files:
        return
    if is_portfolio(doc):
        result.warnings.append(f"PDF portfolio of {len(files)} file(s): each PDF in it is its own document")
    with tempfile.TemporaryDirectory(prefix="madqa-attached-") as tmp:
        for attached in files:
            target = Path(tmp) / "attachment.pdf"
            _one(doc, attached, target, result, extract, depth, tree, path)
            target.unlink(missing_ok=True)
    name_attachments(result)


def _one(
    doc: Any,
    attached: AttachedFile,
    target: Path,
    result: PdfResult,
    extract: Callable[[Path, int, AttachmentTree, str], PdfResult],
    depth: int,
    tree: AttachmentTree,
    path: str,
) -> None:
    """Read one attached file into ``target`` (bounded) and extract it, or say in a warning why not."""
    name, warn = attached.name, result.warnings.append
    with target.open("wb") as out:
        copied = copy_bounded(doc, attached.xref, out, MAX_ATTACHMENT_BYTES)
    limit = f"{MAX_ATTACHMENT_BYTES // MIB} MiB"
    if copied.problem:
        warn(f"attached file '{name}' could not be read ({copied.problem}): not extracted")
    elif not copied.is_pdf:
        size = f"more than {limit}" if copied.over else f"{copied.size} bytes"
        warn(f"attached file '{name}' ({size}) is not a PDF: not extracted")
    elif copied.over:
        warn(f"attached PDF '{name}' is larger than {limit} decompressed (the attachment size limit): not extracted")
    elif depth >= MAX_DEPTH:
        warn(f"attached PDF '{name}' is nested {depth + 1} levels deep: not extracted")
    elif (first := tree.seen.get(copied.sha256)) is not None:
        warn(
            f"attached PDF '{name}' has the same bytes as the attached PDF '{first}' of this file "
            f"(sha256 {copied.sha256[:12]}): a reference to that document, not extracted again"
        )
    elif tree.documents >= MAX_ATTACHED_DOCUMENTS:
        warn(f"attached PDF '{name}' not extracted: at most {MAX_ATTACHED_DOCUMENTS} attached documents per file")
    else:
        here = f"{path}{SEPARATOR}{name}" if path else name
        tree.seen[copied.sha256] = here
        tree.documents += 1
        child = extract(target, depth + 1, tree, here)
        child.name_in_parent = name
        result.attachments.append(child)
        warn(f"attached PDF '{name}' is extracted as its own document (this one's name + '{SEPARATOR}{name}')")


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
