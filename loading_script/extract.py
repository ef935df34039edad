"""Page corpus extraction: PyMuPDF's text layer per page, Tesseract OCR for pages without a usable one.

Runs over a folder (or list) of PDFs with a tqdm bar, caching each PDF's pages by the file's sha256 and the
extraction settings as soon as the file is done, so an interrupted run resumes where it stopped and a re-run only
touches new or changed files. Nothing is dropped without a message: a file that is not a PDF, a dangling link, a
corrupt or encrypted PDF, a worker that crashed, was killed (out of memory) or ran past the per-file time limit
is reported by name with its reason in :attr:`ExtractionReport.skipped`, and the other files go on. Messages
about files that were extracted anyway (a repaired file, a lost page, an escaped name) are in
:attr:`ExtractionReport.warnings`. Each is logged once at WARNING. When Tesseract is missing, text-layer pages
are still extracted and :attr:`ExtractionReport.ocr_missing` tells the caller to fail loudly.

Files run in a pool of worker processes (:mod:`.pdf_pool`) whenever ``workers`` is not exactly 1 or
``isolate=True``; ``workers=1`` alone runs in this process, for debugging, without crash or time-limit isolation.
Each local worker caps its own address space (``RLIMIT_AS``, :data:`DEFAULT_WORKER_MEMORY_MIB`, no cgroup needed):
a file that needs more is skipped with a "memory limit" message (:data:`MEMORY_LIMIT_REACHED`) instead of growing
until the kernel's OOM killer takes a worker or the machine swaps.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import resource
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from .features import OCR_SOURCES
from .page_spool import PageSpool
from .pdf_attachments import from_entry, name_attachments, to_entry, walk
from .pdf_listing import PdfListing, check_pdfs, scan_pdfs
from .pdf_text import (
    EXTRACTOR_VERSION,
    MIN_TEXT_CHARS,
    OCR_DPI,
    OCR_LANGUAGE,
    ExtractSettings,
    PdfResult,
    extract_pdf,
    has_usable_text,
    sha256_file,
    tessdata_dir,
)

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_FILE_TIMEOUT_S",
    "DEFAULT_WORKER_MEMORY_MIB",
    "MIN_WORKER_MEMORY_MIB",
    "EXTRACTOR_VERSION",
    "MIN_TEXT_CHARS",
    "OCR_DPI",
    "OCR_LANGUAGE",
    "ExtractSettings",
    "ExtractionReport",
    "OcrUnavailableError",
    "PdfListing",
    "PdfResult",
    "check_ocr_languages",
    "extract_corpus",
    "extract_pdf",
    "has_usable_text",
    "list_pdfs",
    "scan_pdfs",
    "sha256_file",
    "tessdata_dir",
]

TESSERACT_PACKAGE = "tesseract-ocr"
#: Per-file limit: generous, since a long scanned file OCRs at a fraction of a page per second per core.
DEFAULT_FILE_TIMEOUT_S = 1800.0
#: Address space (``RLIMIT_AS``) of each local extraction worker, in MiB. Address space, not resident memory: it
#: counts what the interpreter, PyMuPDF and Tesseract reserve and never touch (measured: 660 MiB reserved for a
#: resident peak of 210 MiB when OCR'ing a letter page; the OCR bound of an A0 page is 600 MiB resident), so the
#: default leaves room for the largest page a worker renders and stops a runaway file at 4 GiB.
DEFAULT_WORKER_MEMORY_MIB = 4096
#: Below this a worker cannot even import PyMuPDF (``--worker-memory`` refuses less).
MIN_WORKER_MEMORY_MIB = 512
#: The start of the reason a file is skipped when its worker hit its memory limit.
MEMORY_LIMIT_REACHED = "memory limit reached"
_LANGS = re.compile(r"[A-Za-z0-9_/]+(\+[A-Za-z0-9_/]+)*")


class OcrUnavailableError(RuntimeError):
    """Tesseract is needed for some pages but is not installed."""


def check_ocr_languages(langs: str, tessdata: str | None) -> str | None:
    """What is wrong with an ``--ocr-lang`` value such as ``eng+rus`` (one line), or ``None``.

    Languages are checked against the installed Tesseract data only when Tesseract is installed (without it the
    run goes on with text layers and says so).
    """
    if not _LANGS.fullmatch(langs):
        return f"'{langs}' is not a Tesseract language list (codes joined by '+', e.g. eng+rus)"
    if not tessdata:
        return None
    from .ocr import missing_languages_message

    return missing_languages_message(langs, tessdata)


def _installed_data(tessdata: str | None) -> list[str] | None:
    """Every Tesseract data file installed (languages, scripts, ``osd``): automatic OCR choices depend on them."""
    if not tessdata:
        return None
    root = Path(tessdata)
    return sorted(str(p.relative_to(root)).removesuffix(".traineddata") for p in root.rglob("*.traineddata"))


def _cache_path(cache_dir: Path, sha: str, ocr: bool, settings: ExtractSettings) -> Path:
    digest = hashlib.sha256(json.dumps(asdict(settings), sort_keys=True).encode()).hexdigest()[:12]
    return cache_dir / f"{sha}.v{EXTRACTOR_VERSION}.{digest}{'' if ocr else '.noocr'}.json"


def _load_cached(
    cache_dir: Path | None, name: str, sha: str, ocr: bool, settings: ExtractSettings, installed: list[str] | None
) -> PdfResult | None:
    """A cached result, unless absent, unreadable, or OCR'd while other Tesseract data was installed."""
    if cache_dir is None:
        return None
    cached = _cache_path(cache_dir, sha, ocr, settings)
    if not cached.is_file():
        return None
    try:
        entry = json.loads(cached.read_text(encoding="utf-8"))
        pages, warnings = list(entry["pages"]), [str(w) for w in entry.get("warnings", [])]
    except (OSError, ValueError, KeyError, TypeError):
        logger.warning("ignoring unreadable cache entry %s", cached)
        return None
    if installed is not None and entry.get("tesseract_data") not in (None, installed):
        logger.info("%s: OCR'd again, the installed Tesseract data changed since it was cached", name)
        return None
    for row in pages:  # the cache is keyed by content, so the same bytes may come under another name
        row["document"] = name
    result = PdfResult(name, sha, pages=pages, from_cache=True, warnings=warnings)
    result.attachments = [from_entry(child, PdfResult) for child in entry.get("attachments", [])]
    name_attachments(result)
    return result


def _store_cached(
    cache_dir: Path, result: PdfResult, ocr: bool, settings: ExtractSettings, installed: list[str] | None
) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = _cache_path(cache_dir, result.sha256, ocr, settings)
    ocr_done = any(row["text_source"] in OCR_SOURCES for part in walk(result) for row in part.pages)
    entry = {
        "pages": result.pages,
        "warnings": result.warnings,
        "tesseract_data": installed if ocr_done else None,
        "attachments": [to_entry(child) for child in result.attachments],
    }
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(entry, ensure_ascii=False), encoding="utf-8")
    tmp.replace(target)


_worker_memory_mib: int | None = None  # this worker's limit, once _worker_init set it


def _worker_init(memory_mib: int | None = None) -> None:
    """In a pool worker: one Tesseract thread, and an address-space limit of ``memory_mib`` (``None``: none)."""
    global _worker_memory_mib
    # Tesseract spawns one thread per core by default; with a process pool that oversubscribes the CPUs.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    if memory_mib:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = memory_mib << 20 if hard == resource.RLIM_INFINITY else min(memory_mib << 20, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))  # inherited by the OCR and decoder children too
        _worker_memory_mib = limit >> 20


def _extract_task(worker: Callable[..., PdfResult], path: Path, document: str, kwargs: dict[str, Any]) -> PdfResult:
    """Run ``worker`` on one file (in a pool worker or here), under a valid name when the file's is not UTF-8; a
    file that runs out of memory under the worker's limit is skipped with :data:`MEMORY_LIMIT_REACHED`."""
    try:
        return _extract_named(worker, path, document, kwargs)
    except MemoryError:
        limit = f"{_worker_memory_mib} MiB" if _worker_memory_mib else "no limit set"
        return PdfResult(
            document,
            str(kwargs.get("sha256") or ""),
            error=f"{MEMORY_LIMIT_REACHED}: the file needs more memory than an extraction worker may use ({limit}; "
            "madqa extract --worker-memory)",
        )


def _extract_named(worker: Callable[..., PdfResult], path: Path, document: str, kwargs: dict[str, Any]) -> PdfResult:
    if path.name == document:
        return worker(path, **kwargs)
    with tempfile.TemporaryDirectory(prefix="madqa-name-") as tmp:  # PDF libraries refuse undecodable names
        link = Path(tmp) / document
        try:
            os.symlink(os.path.abspath(path), link)
        except OSError:  # e.g. the escaped name is longer than the file system allows
            link = Path(tmp) / "document.pdf"
            os.symlink(os.path.abspath(path), link)
        return worker(link, **kwargs)


@dataclass
class ExtractionReport:
    """What :func:`extract_corpus` did.

    Attributes:
        pages: all page rows, sorted by (document, page); empty when they went to a :class:`.page_spool.PageSpool`.
        skipped: ``(file name, reason)`` for each file that gave no pages: not a PDF, unreadable, a worker crash
            or time-out.
        warnings: ``(document, message)`` for what did not stop a file (a lost page, a repaired file, an escaped
            name, a hidden file left out).
        ocr_pages: pages whose text came from OCR, in whole or in part (``ocr``, ``pdf+ocr``).
        ocr_needed_missing: pages that needed OCR while Tesseract was missing: no usable text layer (kept as it
            is, often empty) or an invisible text layer that could not be checked (kept, with a note).
        cached: PDFs served from the cache.
        sha256: document name → sha256 of the PDF.
        num_pages: document name → page count.
        parents: attached PDF's document name → its parent's (:mod:`.pdf_attachments`).
    """

    pages: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    ocr_pages: int = 0
    ocr_needed_missing: int = 0
    cached: int = 0
    sha256: dict[str, str] = field(default_factory=dict)
    num_pages: dict[str, int] = field(default_factory=dict)
    parents: dict[str, str] = field(default_factory=dict)
    spool: Any = None

    @property
    def page_count(self) -> int:
        """How many page rows were extracted (kept here or in the spool)."""
        return self.spool.count if self.spool is not None else len(self.pages)

    @property
    def ocr_missing(self) -> bool:
        """Whether some pages needed OCR that could not run."""
        return self.ocr_needed_missing > 0

    def skip(self, name: str, reason: str) -> None:
        """Record (and log, once) a file that gave no pages."""
        logger.warning("skipping %s: %s", name, reason)
        self.skipped.append((name, reason))

    def warn(self, name: str, message: str) -> None:
        """Record (and log, once) a message about a file that did not stop it."""
        logger.warning("%s: %s", name, message)
        self.warnings.append((name, message))

    def add(self, result: PdfResult) -> None:
        """Fold one file's result in, and its attachments' (each a document of its own)."""
        for child in result.attachments:
            self.parents[child.document] = result.document
            self.add(child)
        for message in result.warnings:
            self.warn(result.document, message)
        if result.error:
            self.skip(result.document, result.error)
            return
        self.cached += int(result.from_cache)
        self.ocr_needed_missing += result.ocr_needed_missing
        self.ocr_pages += sum(row["text_source"] in OCR_SOURCES for row in result.pages)
        self.sha256[result.document] = result.sha256
        self.num_pages[result.document] = len(result.pages)
        if self.spool is not None:
            self.spool.add(result.pages)
        else:
            self.pages.extend(result.pages)


def list_pdfs(folder: Path) -> list[Path]:
    """The PDF files directly in ``folder`` (see :func:`.pdf_listing.scan_pdfs`); what is left out is logged."""
    listing = scan_pdfs(folder)
    for name, reason in listing.refused:
        logger.warning("skipping %s: %s", name, reason)
    return listing.paths


def extract_corpus(
    pdfs: Sequence[Path] | Path | PdfListing,
    *,
    cache_dir: Path | None = None,
    workers: int | None = None,
    ocr: bool = True,
    progress: bool = True,
    settings: ExtractSettings | None = None,
    file_timeout_s: float | None = DEFAULT_FILE_TIMEOUT_S,
    isolate: bool | None = None,
    worker: Callable[..., PdfResult] | None = None,
    pool: Callable[..., Iterable[Any]] | None = None,
    spool: PageSpool | None = None,
    worker_memory_mib: int | None = DEFAULT_WORKER_MEMORY_MIB,
) -> ExtractionReport:
    """Extract the pages of many PDFs, in parallel, with a per-file cache.

    Args:
        pdfs: PDF paths (each checked), a folder (its ``*.pdf`` entries), or a :func:`scan_pdfs` listing.
        cache_dir: where per-PDF results are cached by sha256 and settings (``None``: no cache).
        workers: worker processes (default: number of CPUs).
        ocr: OCR pages without a usable text layer (needs Debian's ``tesseract-ocr``).
        progress: show a tqdm progress bar on stderr.
        settings: how pages are read (OCR languages, dpi, pixel cap, orientation detection); part of the cache key.
        file_timeout_s: a file still running after this many seconds is stopped and skipped (``None``: no limit;
            needs a worker process).
        isolate: run files in worker processes, so a crash, kill or time-out loses only that file. Default: yes,
            unless ``workers == 1`` (then they run in this process: for debugging).
        worker: the function run for each file, with :func:`extract_pdf`'s signature (default
            :func:`extract_pdf`); with worker processes it must be importable by name.
        pool: runs the isolated tasks, with :func:`.pdf_pool.run_isolated`'s signature and outcomes (default: that
            function, on this machine; :func:`.extract_ray.ray_pool` runs them on a Ray cluster).
        spool: where the page rows go as each file finishes (read them back with ``spool.rows()``); ``None``:
            in :attr:`ExtractionReport.pages`. With a spool this process holds no page text (``madqa extract``).
        worker_memory_mib: address-space limit of each local worker process (``RLIMIT_AS``; ``None``: none); a
            file that needs more is skipped with a "memory limit reached" reason. Not applied in this process
            (``isolate=False``) nor on a Ray cluster (``pool``), whose workers live on for other tasks.

    Returns:
        An :class:`ExtractionReport`. Results of files that needed OCR without Tesseract are not cached.
    """
    from tqdm.auto import tqdm

    settings = settings or ExtractSettings()
    if isinstance(pdfs, PdfListing):
        listing = pdfs
    else:
        listing = scan_pdfs(pdfs) if isinstance(pdfs, Path) else check_pdfs(pdfs)
    tessdata = tessdata_dir() if ocr else None
    installed = _installed_data(tessdata)
    report = ExtractionReport(spool=spool)
    for name, message in listing.notes:
        report.warn(name, message)
    for name, reason in listing.refused:
        report.skip(name, reason)
    todo: list[tuple[Path, str, str]] = []
    for path, name in listing.files:
        try:
            sha = sha256_file(path)
        except OSError as exc:
            report.skip(name, f"cannot read file: {exc.strerror or exc}")
            continue
        cached = _load_cached(cache_dir, name, sha, ocr, settings, installed)
        if cached is not None:
            report.add(cached)
        else:
            todo.append((path, name, sha))

    bar = tqdm(
        total=len(listing.files),
        initial=len(listing.files) - len(todo),
        desc="extracting pages",
        unit="pdf",
        disable=not progress,
    )

    def finish(result: PdfResult, name: str) -> None:
        result.document = name
        for row in result.pages:
            row["document"] = name
        name_attachments(result)
        if cache_dir is not None and not result.error and not any(r.ocr_needed_missing for r in walk(result)):
            try:
                _store_cached(cache_dir, result, ocr, settings, installed)  # now: a crash later keeps this file
            except OSError as exc:  # a full disk costs the cache, not the run
                logger.warning("%s: could not be cached in %s (%s)", name, cache_dir, exc.strerror or exc)
        report.add(result)
        bar.update()

    run = worker or extract_pdf
    kwargs: dict[str, Any] = {"tessdata": tessdata, "ocr": ocr, "settings": settings}
    tasks = [(run, path, name, {**kwargs, "sha256": sha}) for path, name, sha in todo]
    isolate = workers != 1 if isolate is None else isolate
    try:
        if not isolate:
            for task, (_, name, sha) in zip(tasks, todo, strict=True):
                try:
                    result = _extract_task(*task)
                except Exception as exc:  # noqa: BLE001 - one file's failure is that file's, as in the pool
                    logger.debug("extracting %s failed", name, exc_info=True)
                    result = PdfResult(name, sha, error=f"worker error: {type(exc).__name__}: {exc}")
                finish(result, name)
        elif tasks:
            from .pdf_pool import run_isolated

            size = workers or os.cpu_count() or 1
            for outcome in (pool or run_isolated)(
                _extract_task,
                tasks,
                workers=size,
                timeout_s=file_timeout_s,
                initializer=partial(_worker_init, None if pool is not None else worker_memory_mib),
            ):
                _, name, sha = todo[outcome.index]
                finish(outcome.value if outcome.failure is None else PdfResult(name, sha, error=outcome.failure), name)
    finally:
        bar.close()
    report.pages.sort(key=lambda row: (row["document"], int(row["page"])))
    report.skipped.sort()
    report.warnings.sort(key=lambda item: item[0])  # stable: one file's messages keep their order
    if report.ocr_missing:
        logger.error(
            "%d page(s) need OCR (no usable text layer, or an invisible one to check), but Tesseract is not "
            "installed: install the Debian package '%s' (apt-get install %s) and run again; text-layer pages were "
            "extracted.",
            report.ocr_needed_missing,
            TESSERACT_PACKAGE,
            TESSERACT_PACKAGE,
        )
    return report


def pages_by_document(rows: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Group page rows into ``document → [text of page 1, page 2, …]``."""
    grouped: dict[str, dict[int, str]] = {}
    for row in rows:
        grouped.setdefault(row["document"], {})[int(row["page"])] = row["text"]
    return {doc: [pages[p] for p in sorted(pages)] for doc, pages in grouped.items()}
