"""Opening a page index: validate the pages rows, reuse the on-disk index of the same content or build it.

The index is stored under ``index_dir`` (by default ``Layout.root / "index"``, never inside the public dataset
folder) in a folder named by a digest of the pages content, the backend and :data:`FORMAT_VERSION`, so a second open
with the same pages reuses it and changed pages build a new one. Building writes into a temporary folder that is
renamed into place once complete, so an interrupted or concurrent build never leaves a half-written index behind.
The backend module is imported by name (``<backend>_backend`` in this package), so an optional engine costs
nothing until it is asked for.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import numbers
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from madqa.agents.corpus.search.base import (
    BACKENDS,
    DEFAULT_BACKEND,
    FORMAT_VERSION,
    MANIFEST,
    Backend,
    PageRecord,
    SearchIndex,
    SearchLimits,
)

logger = logging.getLogger(__name__)


def prepare_pages(pages: Iterable[Mapping[str, Any]]) -> list[PageRecord]:
    """Validate pages rows and add ``total_pages`` (the highest page number of each document).

    Row order is kept: it is the index's document order, which breaks score ties (as in the harness).

    Raises:
        ValueError: a row lacks a document name or a positive page number, or a (document, page) repeats.

    >>> [r.total_pages for r in prepare_pages([{"document": "a.pdf", "page": 1, "text": "x"},
    ...                                         {"document": "a.pdf", "page": 2, "text": None}])]
    [2, 2]
    """
    rows: list[tuple[str, int, str]] = []
    seen: set[tuple[str, int]] = set()
    last: dict[str, int] = {}
    for i, row in enumerate(pages):
        document, page = row.get("document"), row.get("page")
        if not isinstance(document, str) or not document:
            raise ValueError(f"pages row {i}: 'document' must be a non-empty string, got {document!r}")
        if isinstance(page, bool) or not isinstance(page, numbers.Integral) or page < 1:
            raise ValueError(f"pages row {i} ({document}): 'page' must be a positive integer, got {page!r}")
        page = int(page)
        if (document, page) in seen:
            raise ValueError(f"pages row {i}: page {page} of {document} appears twice")
        seen.add((document, page))
        last[document] = max(page, last.get(document, 0))
        rows.append((document, page, str(row.get("text") or "")))
    return [PageRecord(d, p, last[d], t) for d, p, t in rows]


def pages_digest(records: Iterable[PageRecord]) -> str:
    """SHA-256 over the indexed content, in order (document, page, total pages, text).

    >>> a = pages_digest([PageRecord("a.pdf", 1, 1, "hello")])
    >>> len(a), a == pages_digest([PageRecord("a.pdf", 1, 1, "hello!")])
    (64, False)
    """
    h = hashlib.sha256()
    for r in records:
        head = f"{len(r.document)}:{r.document}:{r.page}:{r.total_pages}:"
        body = r.text.encode("utf-8", "surrogatepass")
        h.update(head.encode("utf-8", "surrogatepass"))
        h.update(f"{len(body)}:".encode())
        h.update(body)
    return h.hexdigest()


def default_index_dir() -> Path:
    """Where indexes live by default: ``Layout.root / "index"`` (outside the public dataset folder)."""
    from madqa.loading_script.paths import Layout

    return Layout.default().root / "index"


def _read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def index_manifest(index: Any) -> dict[str, Any] | None:
    """The build manifest of an opened index (backend, pages, ``build_seconds``), ``None`` for anything else."""
    folder = getattr(index, "folder", None)
    return _read_manifest(Path(folder)) if folder is not None else None


def open_index(
    pages: Iterable[Mapping[str, Any]],
    index_dir: str | os.PathLike[str] | None = None,
    backend: Backend = DEFAULT_BACKEND,
    progress: bool = True,
    limits: SearchLimits | None = None,
) -> SearchIndex:
    """Open the search index of ``pages``, building it first when it does not exist yet.

    Args:
        pages: pages rows (``document``, ``page`` 1-based, ``text``), e.g. from ``load_pages(dataset)``.
        index_dir: folder holding the indexes (default :func:`default_index_dir`); each index is a sub-folder
            ``<backend>-v<FORMAT_VERSION>-<digest>``, so indexes of different corpora or backends coexist.
        backend: ``"whoosh"`` (the paper's engine) or ``"tantivy"`` (needs ``pip install 'madqa[search-tantivy]'``).
        progress: show a tqdm bar while building.
        limits: per-search limits (default ``SearchLimits()``: :data:`DEFAULT_SEARCH_TIMEOUT` and
            :data:`MAX_EXPANSION_TERMS`); the index's ``limits`` attribute can be changed later.

    Returns:
        A :class:`SearchIndex` (also a context manager with ``close()``) with a ``limits`` attribute.

    Raises:
        ValueError: unknown backend or invalid pages rows.
        ImportError: the backend's package is not installed (the message says what to install).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown search backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    engine = importlib.import_module(f"{__package__}.{backend}_backend")
    engine.check_available()
    records = prepare_pages(pages)
    digest = pages_digest(records)
    root = Path(index_dir) if index_dir is not None else default_index_dir()
    folder = root / f"{backend}-v{FORMAT_VERSION}-{digest[:24]}"
    manifest = _read_manifest(folder)
    if manifest is None or manifest.get("digest") != digest:
        if folder.exists():
            logger.warning("discarding incomplete search index at %s", folder)
            shutil.rmtree(folder, ignore_errors=True)
        _build(engine, records, folder, backend, digest, progress)
    else:
        logger.debug("reusing %s search index at %s", backend, folder)
    index: SearchIndex = engine.open_existing(folder, limits=limits or SearchLimits())  # backend modules conform
    return index


def _build(engine: Any, records: list[PageRecord], folder: Path, backend: str, digest: str, progress: bool) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    start = time.perf_counter()
    try:
        logger.info("building the %s search index of %d pages in %s", backend, len(records), folder)
        engine.build(records, tmp, progress=progress)
        manifest = {
            "backend": backend,
            "format_version": FORMAT_VERSION,
            "digest": digest,
            "pages": len(records),
            "documents": len({r.document for r in records}),
            "build_seconds": round(time.perf_counter() - start, 3),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        try:
            tmp.rename(folder)
        except OSError:
            if _read_manifest(folder) is None:
                raise
            logger.info("another process finished the same index first; using it")
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info("built the %s search index in %.1f s", backend, time.perf_counter() - start)
