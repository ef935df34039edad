"""Page corpus extraction: PyMuPDF's text layer per page, Tesseract OCR for pages without a usable one.

Runs over a folder (or list) of PDFs in a process pool with a tqdm bar, caching each PDF's pages by the file's
sha256 so a re-run only touches new or changed files. A corrupt, encrypted or zero-page PDF is reported by name
and skipped; it never aborts the others. When Tesseract is missing, text-layer pages are still extracted, the
pages that needed OCR are counted, and :attr:`ExtractionReport.ocr_missing` tells the caller to fail loudly.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .pdf_text import (
    EXTRACTOR_VERSION,
    MIN_TEXT_CHARS,
    OCR_DPI,
    OCR_LANGUAGE,
    PdfResult,
    extract_pdf,
    has_usable_text,
    sha256_file,
    tessdata_dir,
)

logger = logging.getLogger(__name__)

__all__ = ["EXTRACTOR_VERSION", "MIN_TEXT_CHARS", "OCR_DPI", "OCR_LANGUAGE", "ExtractionReport", "OcrUnavailableError",
           "PdfResult", "extract_corpus", "extract_pdf", "has_usable_text", "list_pdfs", "sha256_file", "tessdata_dir"]

TESSERACT_PACKAGE = "tesseract-ocr"


class OcrUnavailableError(RuntimeError):
    """Tesseract is needed for some pages but is not installed."""


def _cache_path(cache_dir: Path, sha: str, ocr: bool) -> Path:
    return cache_dir / f"{sha}.v{EXTRACTOR_VERSION}{'' if ocr else '.noocr'}.json"


def _load_cached(cache_dir: Path | None, path: Path, sha: str, ocr: bool) -> PdfResult | None:
    if cache_dir is None:
        return None
    cached = _cache_path(cache_dir, sha, ocr)
    if not cached.is_file():
        return None
    try:
        pages = json.loads(cached.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        logger.warning("ignoring unreadable cache entry %s", cached)
        return None
    for row in pages:  # the cache is keyed by content, so the same bytes may come under another name
        row["document"] = path.name
    return PdfResult(path.name, sha, pages=pages, from_cache=True)


def _store_cached(cache_dir: Path, result: PdfResult, ocr: bool) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = _cache_path(cache_dir, result.sha256, ocr)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(result.pages, ensure_ascii=False), encoding="utf-8")
    tmp.replace(target)


def _worker_init() -> None:
    # Tesseract spawns one thread per core by default; with a process pool that oversubscribes the CPUs.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")


@dataclass
class ExtractionReport:
    """What :func:`extract_corpus` did.

    Attributes:
        pages: all page rows, sorted by (document, page).
        skipped: ``(file name, reason)`` for each PDF that could not be read.
        ocr_pages: pages whose text came from OCR.
        ocr_needed_missing: pages that needed OCR while Tesseract was missing (their text is empty).
        cached: PDFs served from the cache.
        sha256: document name → sha256 of the PDF.
        num_pages: document name → page count.
    """

    pages: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    ocr_pages: int = 0
    ocr_needed_missing: int = 0
    cached: int = 0
    sha256: dict[str, str] = field(default_factory=dict)
    num_pages: dict[str, int] = field(default_factory=dict)

    @property
    def ocr_missing(self) -> bool:
        """Whether some pages needed OCR that could not run."""
        return self.ocr_needed_missing > 0


def list_pdfs(folder: Path) -> list[Path]:
    """The ``*.pdf`` files directly in ``folder``, sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".pdf")


def extract_corpus(
    pdfs: Sequence[Path] | Path,
    *,
    cache_dir: Path | None = None,
    workers: int | None = None,
    ocr: bool = True,
    progress: bool = True,
) -> ExtractionReport:
    """Extract the pages of many PDFs, in parallel, with a per-file cache.

    Args:
        pdfs: PDF paths, or a folder whose ``*.pdf`` files are taken.
        cache_dir: where per-PDF results are cached by sha256 (``None``: no cache).
        workers: process-pool size (default: number of CPUs; 1 runs in this process).
        ocr: OCR pages without a usable text layer (needs Debian's ``tesseract-ocr``).
        progress: show a tqdm progress bar on stderr.

    Returns:
        An :class:`ExtractionReport`. Results of files that needed OCR without Tesseract are not cached.
    """
    from tqdm.auto import tqdm

    paths = list_pdfs(pdfs) if isinstance(pdfs, Path) else list(pdfs)
    tessdata = tessdata_dir() if ocr else None
    report = ExtractionReport()
    results: list[PdfResult] = []
    todo: list[tuple[Path, str]] = []
    for path in paths:
        try:
            sha = sha256_file(path)
        except OSError as exc:
            report.skipped.append((path.name, f"cannot read file: {exc.strerror or exc}"))
            continue
        cached = _load_cached(cache_dir, path, sha, ocr)
        if cached is not None:
            results.append(cached)
        else:
            todo.append((path, sha))
    n_workers = max(1, min(workers or os.cpu_count() or 1, len(todo)))
    bar = tqdm(total=len(paths), initial=len(paths) - len(todo), desc="extracting pages", unit="pdf",
               disable=not progress)
    try:
        if n_workers == 1:
            for path, sha in todo:
                results.append(extract_pdf(path, tessdata=tessdata, ocr=ocr, sha256=sha))
                bar.update()
        else:
            with ProcessPoolExecutor(max_workers=n_workers, initializer=_worker_init) as pool:
                futures = [
                    pool.submit(extract_pdf, path, tessdata=tessdata, ocr=ocr, sha256=sha) for path, sha in todo
                ]
                for future in as_completed(futures):
                    results.append(future.result())
                    bar.update()
    finally:
        bar.close()
    for result in sorted(results, key=lambda r: r.document):
        if result.error:
            logger.warning("skipping %s: %s", result.document, result.error)
            report.skipped.append((result.document, result.error))
            continue
        if cache_dir is not None and not result.from_cache and result.ocr_needed_missing == 0:
            _store_cached(cache_dir, result, ocr)
        report.cached += int(result.from_cache)
        report.ocr_needed_missing += result.ocr_needed_missing
        report.ocr_pages += sum(row["text_source"] == "ocr" for row in result.pages)
        report.sha256[result.document] = result.sha256
        report.num_pages[result.document] = len(result.pages)
        report.pages.extend(result.pages)
    if report.ocr_missing:
        logger.error(
            "%d page(s) have no usable text layer and need OCR, but Tesseract is not installed: install the Debian "
            "package '%s' (apt-get install %s) and run again; text-layer pages were extracted.",
            report.ocr_needed_missing, TESSERACT_PACKAGE, TESSERACT_PACKAGE,
        )
    return report


def pages_by_document(rows: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Group page rows into ``document → [text of page 1, page 2, …]``."""
    grouped: dict[str, dict[int, str]] = {}
    for row in rows:
        grouped.setdefault(row["document"], {})[int(row["page"])] = row["text"]
    return {doc: [pages[p] for p in sorted(pages)] for doc, pages in grouped.items()}
