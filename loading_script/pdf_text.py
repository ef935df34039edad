"""One PDF's pages as text: PyMuPDF's text layer, Tesseract OCR for pages without a usable one.

:func:`extract_pdf` is what a pool worker of :func:`.extract.extract_corpus` runs for one file; everything here is
about a single file and its pages (the corpus-level concerns — listing, pool, cache, report — are in
:mod:`.extract`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: Bump when extraction output changes: it is part of the cache key.
EXTRACTOR_VERSION = "1"
#: A page whose text layer has fewer alphanumeric characters than this goes through OCR.
MIN_TEXT_CHARS = 16
OCR_DPI = 300
OCR_LANGUAGE = "eng"
_ALNUM = re.compile(r"[0-9A-Za-z]")


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, streamed."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def tessdata_dir() -> str | None:
    """The Tesseract language-data folder, or ``None`` when Tesseract is not installed."""
    if shutil.which("tesseract") is None:
        return None
    env = os.environ.get("TESSDATA_PREFIX")
    if env and Path(env).is_dir():
        return env
    try:
        import pymupdf

        found = pymupdf.get_tessdata()
    except Exception:  # noqa: BLE001 - PyMuPDF raises a bare RuntimeError when nothing is found
        return None
    return str(found) if found else None


def has_usable_text(text: str) -> bool:
    """Whether a page's text layer carries enough characters to skip OCR."""
    return len(_ALNUM.findall(text)) >= MIN_TEXT_CHARS


@dataclass(frozen=True)
class ExtractSettings:
    """How pages are read (recorded with every extracted corpus).

    Attributes:
        ocr_lang: Tesseract language(s), e.g. ``"eng+rus"``; ``None`` chooses from the installed data.
        dpi: OCR render resolution.
        max_pixels: cap on the pixels of one rendered page (large formats are downscaled to fit).
        osd: detect orientation/script with Tesseract OSD before OCR, where installed.
    """

    ocr_lang: str | None = None
    dpi: int = OCR_DPI
    max_pixels: int = 40_000_000
    osd: bool = True


@dataclass
class PdfResult:
    """Extraction result for one PDF (picklable, returned by pool workers).

    Attributes:
        document: the PDF's file name.
        sha256: hex digest of its bytes.
        pages: ``{"document", "page", "text", "text_source"}`` rows, 1-based pages, in order.
        error: why the file was skipped (``None`` on success).
        ocr_needed_missing: pages that needed OCR while Tesseract was unavailable.
        warnings: one-line messages about this file that did not stop it (a repaired file, a page that failed).
    """

    document: str
    sha256: str
    pages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    ocr_needed_missing: int = 0
    from_cache: bool = False
    warnings: list[str] = field(default_factory=list)


def extract_pdf(path: Path, *, tessdata: str | None, ocr: bool = True, sha256: str | None = None,
                settings: ExtractSettings | None = None) -> PdfResult:
    """Extract every page of one PDF.

    Args:
        path: the PDF file.
        tessdata: Tesseract's language-data folder; ``None`` means OCR is unavailable.
        ocr: whether to OCR pages without a usable text layer at all.
        sha256: the file's digest when the caller already has it (saves reading the file twice).

    Returns:
        A :class:`PdfResult`; ``error`` is set (and ``pages`` empty) for a corrupt, encrypted or empty PDF.
    """
    import pymupdf

    name = path.name
    try:
        sha = sha256 or sha256_file(path)
    except OSError as exc:
        return PdfResult(name, "", error=f"cannot read file: {exc.strerror or exc}")
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:  # noqa: BLE001 - PyMuPDF raises several unrelated types for broken files
        return PdfResult(name, sha, error=f"not a readable PDF ({exc})")
    with doc:
        if doc.needs_pass or doc.is_encrypted:
            return PdfResult(name, sha, error="encrypted PDF (needs a password)")
        if doc.page_count == 0:
            return PdfResult(name, sha, error="PDF has zero pages")
        result = PdfResult(name, sha)
        try:
            for index, page in enumerate(doc):
                text = page.get_text()
                source = "pdf"
                if not has_usable_text(text):
                    if ocr and tessdata:
                        textpage = page.get_textpage_ocr(dpi=OCR_DPI, full=True, language=OCR_LANGUAGE,
                                                         tessdata=tessdata)
                        text, source = page.get_text(textpage=textpage), "ocr"
                    elif ocr:
                        result.ocr_needed_missing += 1
                        source = "none" if not text.strip() else "pdf"
                    elif not text.strip():
                        source = "none"
                result.pages.append({"document": name, "page": index + 1, "text": text, "text_source": source})
        except Exception as exc:  # noqa: BLE001 - a page that fails to parse makes the whole file unusable
            return PdfResult(name, sha, error=f"failed while reading page {len(result.pages) + 1}: {exc}")
    return result


