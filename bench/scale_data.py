"""``madqa bench scale``, data stages: a release-sized synthetic collection, its extraction, OCR rate and indexes.

The collection has the release's shape (:mod:`.search_corpus`: 800 PDFs, 18,619 pages, median 5 and longest 859
pages per document, 12.2M tokens, 3% pages without text), written as real PDFs with a text layer by PyMuPDF in
worker processes; its pages without text are left blank (what the text-layer extraction measures). OCR is measured
apart, on a handful of scanned pages rendered as images, and extrapolated to the collection's blank share.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from .search_corpus import CorpusSpec, synthetic_pages

#: Points per character row of the generated pages (small enough for ~700 words on a Letter page).
FONT_SIZE = 6.5


def _write_pdf(path: str, texts: Sequence[str]) -> int:
    import pymupdf

    doc = pymupdf.open()
    for text in texts:
        page = doc.new_page()
        if text:
            page.insert_textbox(page.rect + (36, 36, -36, -36), text, fontsize=FONT_SIZE)
    doc.save(path, garbage=0, deflate=True)
    return len(texts)


def generate_collection(folder: Path, spec: CorpusSpec, workers: int) -> dict[str, Any]:
    """Write ``spec``'s documents as PDFs into ``folder``; returns counts (documents, pages, blank pages)."""
    pages = synthetic_pages(spec)
    by_doc: dict[str, list[str]] = {}
    for row in pages:
        by_doc.setdefault(row["document"], []).append(row["text"])
    folder.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        written = sum(pool.map(_write_pdf, [str(folder / name) for name in by_doc], by_doc.values(), chunksize=4))
    blank = sum(1 for row in pages if not row["text"])
    return {
        "documents": len(by_doc),
        "pages": written,
        "blank_pages": blank,
        "max_doc_pages": max(len(t) for t in by_doc.values()),
        "bytes": sum(p.stat().st_size for p in folder.glob("*.pdf")),
    }


def extract_text_layer(folder: Path, workers: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The text-layer extraction of ``folder`` (no OCR, no cache): figures and the page rows."""
    from madqa.loading_script.extract import extract_corpus

    start = time.perf_counter()
    report = extract_corpus(folder, workers=workers, ocr=False, progress=False, cache_dir=None)
    wall = time.perf_counter() - start
    return {
        "pages": len(report.pages),
        "skipped": len(report.skipped),
        "pages_per_s": len(report.pages) / wall,
        "workers": workers,
    }, report.pages


def measure_ocr(pages: int, workers: int, texts: Sequence[str]) -> dict[str, Any]:
    """OCR pages/s on ``pages`` scanned pages (text rendered at 150 dpi into image-only pages)."""
    import pymupdf

    from madqa.loading_script.extract import extract_corpus, tessdata_dir

    if tessdata_dir() is None:
        return {"pages": 0, "pages_per_s": None, "note": "Tesseract is not installed"}
    with tempfile.TemporaryDirectory(prefix="madqa-bench-ocr-") as tmp:
        src, doc = pymupdf.open(), pymupdf.open()
        for i in range(pages):
            page = src.new_page()
            page.insert_textbox(page.rect + (54, 54, -54, -54), texts[i % len(texts)][:1500], fontsize=10)
            pix = page.get_pixmap(dpi=150)
            doc.new_page(width=page.rect.width, height=page.rect.height).insert_image(page.rect, pixmap=pix)
        # Files of 4 pages, so the pool has several to share out.
        for k in range(0, pages, 4):
            part = pymupdf.open()
            part.insert_pdf(doc, from_page=k, to_page=min(pages, k + 4) - 1)
            part.save(os.path.join(tmp, f"scan{k:05d}.pdf"))
        start = time.perf_counter()
        report = extract_corpus(Path(tmp), workers=workers, ocr=True, progress=False, cache_dir=None)
        wall = time.perf_counter() - start
    return {"pages": report.ocr_pages, "pages_per_s": report.ocr_pages / wall if wall else None, "workers": workers}


def build_index(pages: list[dict[str, Any]], backend: str, folder: Path) -> dict[str, Any]:
    """Build the ``backend`` index of ``pages`` from scratch in ``folder``."""
    from madqa.agents.corpus.search import open_index

    start = time.perf_counter()
    index = open_index(pages, index_dir=folder, backend=backend, progress=False)  # type: ignore[arg-type]
    wall = time.perf_counter() - start
    index.close()
    return {"backend": backend, "pages": len(pages), "build_s": wall}
