"""PDFs the extraction tests make on the spot with PyMuPDF."""

from __future__ import annotations

from pathlib import Path

import pymupdf


def scanned_pdf(path: Path, line: str, dpi: int) -> Path:
    """A one-page PDF holding only a picture of ``line`` at ``dpi`` (no text layer: OCR alone can read it)."""
    src = pymupdf.open()
    page = src.new_page()
    page.insert_text((72, 120), line, fontsize=20)
    pix = page.get_pixmap(dpi=dpi)
    doc = pymupdf.open()
    out = doc.new_page(width=page.rect.width, height=page.rect.height)
    out.insert_image(out.rect, pixmap=pix)
    doc.save(path)
    return path


def one_page_pdf(text: str, attach: dict[str, bytes] | None = None) -> bytes:
    """A one-page PDF of ``text`` with each of ``attach`` (name: bytes) as an embedded file."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text, fontsize=11)
    for name, data in (attach or {}).items():
        doc.embfile_add(name, data, filename=name, ufilename=name)
    return doc.tobytes()
