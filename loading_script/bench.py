"""Extraction benchmark: our extractor vs raw ``page.get_text()`` on the same PDFs, in one run."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .extract import OCR_DPI, OCR_LANGUAGE, extract_corpus, extract_pdf, has_usable_text, tessdata_dir


def _best_of(repeats: int, fn: Callable[[], int]) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeats):
        start = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - start)
    return best, count


def _raw_get_text(pdfs: Sequence[Path]) -> int:
    import pymupdf

    n = 0
    for path in pdfs:
        with pymupdf.open(path) as doc:
            for page in doc:
                page.get_text()
                n += 1
    return n


def _ours_text_layer(pdfs: Sequence[Path]) -> int:
    return sum(len(extract_pdf(path, tessdata=None, ocr=False).pages) for path in pdfs)


def _ocr_pages(pdfs: Sequence[Path], tessdata: str) -> int:
    import pymupdf

    n = 0
    for path in pdfs:
        with pymupdf.open(path) as doc:
            for page in doc:
                if not has_usable_text(page.get_text()):
                    tp = page.get_textpage_ocr(dpi=OCR_DPI, full=True, language=OCR_LANGUAGE, tessdata=tessdata)
                    page.get_text(textpage=tp)
                    n += 1
    return n


def bench_extract(pdfs: Sequence[Path], *, repeats: int = 3, workers: int | None = None) -> dict[str, Any]:
    """Measure text-layer and OCR throughput and peak RSS.

    Returns:
        A dict of figures: pages/s for raw PyMuPDF, our extractor (1 process) and the pool, the ratio of our
        time to raw time, OCR pages/s (``None`` without Tesseract), and peak RSS of this process and its children.
    """
    raw_s, n_pages = _best_of(repeats, lambda: _raw_get_text(pdfs))
    ours_s, _ = _best_of(repeats, lambda: _ours_text_layer(pdfs))
    pool_s, _ = _best_of(
        1, lambda: len(extract_corpus(list(pdfs), cache_dir=None, workers=workers, ocr=False, progress=False).pages)
    )
    tessdata = tessdata_dir()
    ocr_s, ocr_n = _best_of(1, lambda: _ocr_pages(pdfs, tessdata)) if tessdata else (None, 0)
    rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rss_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "pdfs": len(pdfs),
        "pages": n_pages,
        "raw_get_text_pages_per_s": n_pages / raw_s,
        "text_layer_pages_per_s": n_pages / ours_s,
        "text_layer_vs_raw_time_ratio": ours_s / raw_s,
        "text_layer_pool_pages_per_s": n_pages / pool_s,
        "ocr_pages": ocr_n,
        "ocr_pages_per_s": (ocr_n / ocr_s) if ocr_s else None,
        "peak_rss_mib": rss_self,
        "peak_rss_children_mib": rss_children,
    }
