"""Page corpus extraction: PyMuPDF's text layer per page, Tesseract OCR for pages without a usable one.

Runs over a folder (or list) of PDFs in a process pool with a tqdm bar, caching each PDF's pages by the file's
sha256 so a re-run only touches new or changed files. A corrupt, encrypted or zero-page PDF is reported by name
and skipped; it never aborts the others. When Tesseract is missing, text-layer pages are still extracted, the
pages that needed OCR are counted, and :attr:`ExtractionReport.ocr_missing` tells the caller to fail loudly.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
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
TESSERACT_PACKAGE = "tesseract-ocr"
_ALNUM = re.compile(r"[0-9A-Za-z]")


class OcrUnavailableError(RuntimeError):
    """Tesseract is needed for some pages but is not installed."""


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


@dataclass
class PdfResult:
    """Extraction result for one PDF (picklable, returned by pool workers).

    Attributes:
        document: the PDF's file name.
        sha256: hex digest of its bytes.
        pages: ``{"document", "page", "text", "text_source"}`` rows, 1-based pages, in order.
        error: why the file was skipped (``None`` on success).
        ocr_needed_missing: pages that needed OCR while Tesseract was unavailable.
    """

    document: str
    sha256: str
    pages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    ocr_needed_missing: int = 0
    from_cache: bool = False


def extract_pdf(path: Path, *, tessdata: str | None, ocr: bool = True, sha256: str | None = None) -> PdfResult:
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
