"""Fetch a dataset's PDFs by URL: in parallel, resumable, retried with backoff, and checked to be the PDFs asked for.

`madqa setup --dataset SPEC` calls :func:`fetch_documents` for the documents config. Document hosts fail in many
ways (rate limits, timeouts, an HTML login or error page served with status 200, a body cut short), so every
document gets its own outcome, and a failure is a line in the report, never an exception. Stdlib only, so it runs
on a bare machine. A sidecar manifest (``.fetch.json``) records what was fetched from where, so a rerun makes no
request for a document already present and fetches only the missing ones; ``.partial/`` keeps interrupted bodies
so they can be resumed with a Range request.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fetch_http import (
    HEAD_WINDOW,
    PDF_MAGIC,
    DocumentError,
    FetchRequest,
    FetchSettings,
    Transfer,
    check_pdf_head,
    download,
    parse_retry_after,
    retry_delay,
    validate,
)

logger = logging.getLogger(__name__)

__all__ = [
    "HEAD_WINDOW",
    "MANIFEST_NAME",
    "PARTIAL_DIR",
    "PDF_MAGIC",
    "FetchFailure",
    "FetchReport",
    "FetchRequest",
    "FetchSettings",
    "check_pdf_head",
    "fetch_documents",
    "parse_retry_after",
    "read_manifest",
    "retry_delay",
]

MANIFEST_NAME = ".fetch.json"
PARTIAL_DIR = ".partial"
_MANIFEST_FLUSH_S = 1.0


@dataclass(frozen=True)
class FetchFailure:
    """A document that could not be fetched, with one short human line saying why."""

    document: str
    url: str
    reason: str


@dataclass
class FetchReport:
    """Outcome of one :func:`fetch_documents` call; every list is sorted by document."""

    fetched: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    failed: list[FetchFailure] = field(default_factory=list)


class _Manifest:
    """The sidecar record of fetched documents, shared by the worker threads and written atomically."""

    def __init__(self, path: Path) -> None:
        self.path, self.lock, self.entries = path, threading.Lock(), {}
        self.dirty, self.written_at = False, 0.0
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            entries = data.get("documents") if isinstance(data, dict) else None
            if not isinstance(entries, dict):
                raise ValueError("no 'documents' mapping")
            self.entries = {k: v for k, v in entries.items() if isinstance(v, dict)}
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:  # files already there are re-validated and adopted
            logger.warning("ignoring unreadable fetch manifest %s: %s", path, exc)

    def get(self, document: str) -> dict[str, Any] | None:
        with self.lock:
            return self.entries.get(document)

    def set(self, document: str, entry: dict[str, Any] | None) -> None:
        with self.lock:
            if entry is None:
                if self.entries.pop(document, None) is None:
                    return
            else:
                self.entries[document] = entry
            self.dirty = True
            if time.monotonic() - self.written_at >= _MANIFEST_FLUSH_S:
                self._write()

    def flush(self) -> None:
        with self.lock:
            if self.dirty:
                self._write()

    def _write(self) -> None:
        payload = {"version": 1, "documents": dict(sorted(self.entries.items()))}
        fd, tmp = tempfile.mkstemp(prefix=".fetch.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, indent=1)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.dirty, self.written_at = False, time.monotonic()


def read_manifest(folder: Path) -> dict[str, dict[str, Any]]:
    """What earlier fetches recorded in ``folder``: document -> {url, size, sha256, fetched_at}; {} when none."""
    return dict(_Manifest(Path(folder) / MANIFEST_NAME).entries)


@dataclass
class _Job(Transfer):
    """What every worker shares in one call: the transfer's settings, opener and stop flag, plus the manifest."""

    folder: Path
    manifest: _Manifest


def fetch_documents(
    requests: Sequence[FetchRequest], folder: Path, settings: FetchSettings | None = None, *, progress: bool = False
) -> FetchReport:
    """Fetch every request's bytes to ``folder/<document>``, skipping those already present and valid.

    Never raises for a document's failure: each one is logged once and listed in the report with its URL and
    reason. Raises ValueError only for a malformed request list (duplicate or non-plain document names).
    """
    settings = settings or FetchSettings()
    _check_requests(requests)
    folder = Path(folder)
    (folder / PARTIAL_DIR).mkdir(parents=True, exist_ok=True)
    job = _Job(
        settings=settings,
        opener=urllib.request.build_opener(),
        stop=threading.Event(),
        folder=folder,
        manifest=_Manifest(folder / MANIFEST_NAME),
    )
    report = FetchReport()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(requests), unit="doc", desc="fetching PDFs")
    pool = ThreadPoolExecutor(max_workers=max(1, min(settings.workers, len(requests))), thread_name_prefix="fetch")
    try:
        futures = {pool.submit(_fetch_one, request, job): request.document for request in requests}
        for future in as_completed(futures):
            outcome, failure = future.result()
            if failure is not None:
                report.failed.append(failure)
            else:
                (report.fetched if outcome == "fetched" else report.present).append(futures[future])
            if bar is not None:
                bar.update(1)
                bar.set_postfix(failed=len(report.failed), refresh=False)
    except BaseException:
        job.stop.set()  # running downloads stop at their next chunk and keep their partial body
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        job.manifest.flush()
        if bar is not None:
            bar.close()
        try:
            (folder / PARTIAL_DIR).rmdir()  # only when empty: nothing left to resume
        except OSError:
            pass
    report.fetched.sort()
    report.present.sort()
    report.failed.sort(key=lambda f: f.document)
    logger.info(
        "documents: %d fetched, %d already present, %d failed",
        len(report.fetched),
        len(report.present),
        len(report.failed),
    )
    return report


def _check_requests(requests: Sequence[FetchRequest]) -> None:
    seen: set[str] = set()
    for request in requests:
        name = request.document
        if not name or name != Path(name).name or name in (".", "..", MANIFEST_NAME, PARTIAL_DIR):
            raise ValueError(f"document name must be a plain file name (not {MANIFEST_NAME}/{PARTIAL_DIR}): {name!r}")
        if name in seen:
            raise ValueError(f"duplicate document name in fetch requests: {name!r}")
        seen.add(name)


def _fetch_one(request: FetchRequest, job: _Job) -> tuple[str, FetchFailure | None]:
    """Worker: make one document present. Returns ("present" | "fetched", None) or ("failed", failure)."""
    target = job.folder / request.document
    part = job.folder / PARTIAL_DIR / f"{request.document}.part"
    try:
        if target.is_file():
            entry = job.manifest.get(request.document)
            if _is_recorded(request, target, entry):
                return "present", None
            if entry is None and _adopt(request, target, job):
                return "present", None
            target.unlink()  # stale or invalid: it must not pass for the document if this fetch fails
            job.manifest.set(request.document, None)
        download(request, part, job)
        size, sha = validate(request, part, content_type="")
        os.replace(part, target)
        job.manifest.set(request.document, {"url": request.url, "size": size, "sha256": sha, "fetched_at": _now()})
        return "fetched", None
    except DocumentError as exc:
        reason = exc.reason
        if not exc.transient:
            part.unlink(missing_ok=True)
    except Exception as exc:  # a bug or an odd OS error must not sink the other documents
        logger.debug("unexpected error fetching %s", request.document, exc_info=True)
        reason = f"unexpected error: {type(exc).__name__}: {exc}"
    target.unlink(missing_ok=True)
    job.manifest.set(request.document, None)
    logger.warning("could not fetch %s from %s: %s", request.document, request.url, reason)
    return "failed", FetchFailure(request.document, request.url, reason)


def _is_recorded(request: FetchRequest, target: Path, entry: dict[str, Any] | None) -> bool:
    """Present without a request: the manifest says it came from this URL, and its size (and sha256) still fit."""
    if not entry or entry.get("url") != request.url:
        return False
    size = target.stat().st_size
    if entry.get("size") != size or (request.size is not None and request.size != size):
        return False
    return request.sha256 is None or str(entry.get("sha256", "")).lower() == request.sha256.lower()


def _adopt(request: FetchRequest, target: Path, job: _Job) -> bool:
    """A file put there by hand (or by an interrupted run) counts when it passes the same checks as a download."""
    try:
        size, sha = validate(request, target, content_type="")
    except DocumentError as exc:
        logger.info("existing %s is not valid (%s); fetching it again", target, exc.reason)
        return False
    job.manifest.set(
        request.document, {"url": request.url, "size": size, "sha256": sha, "fetched_at": None, "adopted_at": _now()}
    )
    return True


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
