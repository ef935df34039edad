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
import email.utils
import hashlib
import http.client
import json
import logging
import os
import random
import re
import shutil
import ssl
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

logger = logging.getLogger(__name__)

MANIFEST_NAME = ".fetch.json"
PARTIAL_DIR = ".partial"
PDF_MAGIC = b"%PDF-"
#: The PDF spec tolerates junk before the header; readers look for it within the first 1024 bytes.
HEAD_WINDOW = 1024
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 60.0
_CHUNK = 1 << 20
_RETRY_STATUS = frozenset({408, 425, 429})
_TITLE = re.compile(rb"<title[^>]*>([^<]{1,80})", re.IGNORECASE)
_MANIFEST_FLUSH_S = 1.0


def _default_user_agent() -> str:
    """Identify the client to document hosts (polite, and some hosts block the default Python agent)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("madqa")
    except PackageNotFoundError:
        release = "unknown"
    return f"madqa/{release} (+https://huggingface.co/datasets/OxRML/MADQA)"


@dataclass(frozen=True)
class FetchRequest:
    """One document to fetch: the file name to write and where its bytes come from."""

    document: str
    url: str
    sha256: str | None = None
    size: int | None = None


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


@dataclass(frozen=True)
class FetchSettings:
    """Knobs of a fetch; the defaults suit a public host serving a few hundred PDFs."""

    workers: int = 8
    timeout_s: float = 60.0
    retries: int = 4  # attempts after the first
    backoff_s: float = 1.0  # delay before retry k is backoff_s * 2**k (capped, with jitter)
    max_bytes: int = 2 * 1024**3
    user_agent: str = field(default_factory=_default_user_agent)

    def __post_init__(self) -> None:
        if self.workers < 1 or self.retries < 0 or self.timeout_s <= 0 or self.backoff_s < 0 or self.max_bytes < 1:
            raise ValueError(f"invalid fetch settings: {self}")


class _Failed(Exception):
    """A per-document failure. Transient ones are retried, and their partial body is kept for a resume."""

    def __init__(self, reason: str, *, transient: bool = False, retry_after: float | None = None,
                 timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.transient, self.retry_after, self.timed_out = reason, transient, retry_after, timed_out


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
class _Job:
    """What every worker shares in one call."""

    folder: Path
    settings: FetchSettings
    manifest: _Manifest
    opener: urllib.request.OpenerDirector
    stop: threading.Event


def fetch_documents(requests: Sequence[FetchRequest], folder: Path, settings: FetchSettings | None = None,
                    *, progress: bool = False) -> FetchReport:
    """Fetch every request's bytes to ``folder/<document>``, skipping those already present and valid.

    Never raises for a document's failure: each one is logged once and listed in the report with its URL and
    reason. Raises ValueError only for a malformed request list (duplicate or non-plain document names).
    """
    settings = settings or FetchSettings()
    _check_requests(requests)
    folder = Path(folder)
    (folder / PARTIAL_DIR).mkdir(parents=True, exist_ok=True)
    job = _Job(folder, settings, _Manifest(folder / MANIFEST_NAME), urllib.request.build_opener(), threading.Event())
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
    logger.info("documents: %d fetched, %d already present, %d failed", len(report.fetched), len(report.present),
                len(report.failed))
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
        _download(request, part, job)
        size, sha = _validate(request, part, content_type="")
        os.replace(part, target)
        job.manifest.set(request.document, {"url": request.url, "size": size, "sha256": sha, "fetched_at": _now()})
        return "fetched", None
    except _Failed as exc:
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
        size, sha = _validate(request, target, content_type="")
    except _Failed as exc:
        logger.info("existing %s is not valid (%s); fetching it again", target, exc.reason)
        return False
    job.manifest.set(request.document, {"url": request.url, "size": size, "sha256": sha, "fetched_at": None,
                                        "adopted_at": _now()})
    return True


def _download(request: FetchRequest, part: Path, job: _Job) -> None:
    """Bring the bytes to ``part``: copy a local file, or GET with retries and backoff."""
    scheme = urllib.parse.urlsplit(request.url).scheme.lower()
    if scheme in ("", "file") or len(scheme) == 1:  # a one-letter scheme is a Windows drive
        _copy_local(request, part, job.settings)
        return
    if scheme not in ("http", "https"):
        raise _Failed(f"unsupported URL scheme {scheme!r}")
    attempts = job.settings.retries + 1
    for attempt in range(attempts):
        try:
            _http_attempt(request, part, job)
            return
        except _Failed as exc:
            if not exc.transient or job.stop.is_set():
                raise
            if attempt == attempts - 1:
                tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
                if exc.timed_out:
                    raise _Failed(f"timed out after {tries} (timeout {job.settings.timeout_s:g} s)",
                                  transient=True) from None
                raise _Failed(f"{exc.reason} (after {tries})", transient=True) from None
            delay = retry_delay(attempt, exc.retry_after, job.settings.backoff_s)
            logger.debug("%s: %s; retrying in %.2f s", request.document, exc.reason, delay)
            if job.stop.wait(delay):
                raise
    raise AssertionError("unreachable")


def retry_delay(attempt: int, retry_after: float | None, backoff_s: float) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): the server's Retry-After, else jittered backoff."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), RETRY_AFTER_CAP_S)
    return min(backoff_s * 2**attempt, BACKOFF_CAP_S) * random.uniform(1.0, 1.2)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return max(0.0, (when - dt.datetime.now(dt.timezone.utc)).total_seconds())


def _http_attempt(request: FetchRequest, part: Path, job: _Job) -> None:
    """One GET; resumes from ``part`` with a Range request when it holds the start of a PDF."""
    have = _resumable_size(part)
    headers = {"User-Agent": job.settings.user_agent, "Accept": "application/pdf, */*;q=0.5"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        with job.opener.open(urllib.request.Request(request.url, headers=headers),
                             timeout=job.settings.timeout_s) as response:
            _receive(response, request, part, have, job)
    except urllib.error.HTTPError as exc:
        exc.close()  # frees the connection; the error body is not needed
        status = f"HTTP {exc.code} {exc.reason}".rstrip()
        if exc.code == 416 and have:  # our partial body no longer fits the server's file: start over
            part.unlink(missing_ok=True)
            raise _Failed(status, transient=True) from None
        transient = exc.code in _RETRY_STATUS or 500 <= exc.code <= 599
        retry_after = parse_retry_after(exc.headers.get("Retry-After")) if exc.headers is not None else None
        raise _Failed(status, transient=transient, retry_after=retry_after) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise _Failed("timed out", transient=True, timed_out=True) from None
        if isinstance(exc.reason, ssl.SSLCertVerificationError):  # retrying will not fix a certificate
            raise _Failed(f"TLS certificate rejected: {exc.reason.verify_message}") from None
        raise _Failed(f"connection failed: {exc.reason}", transient=True) from None
    except TimeoutError:
        raise _Failed("timed out", transient=True, timed_out=True) from None
    except (ConnectionError, http.client.HTTPException) as exc:
        raise _Failed(f"connection failed: {type(exc).__name__}: {exc}".rstrip(": "), transient=True) from None
    except ValueError as exc:  # urllib's word for a malformed URL
        raise _Failed(f"invalid URL: {exc}") from None


def _receive(response: Any, request: FetchRequest, part: Path, have: int, job: _Job) -> None:
    """Stream the body into ``part``, checking its start is a PDF before most of it is read."""
    settings = job.settings
    content_type = response.headers.get("Content-Type", "")
    length = int(raw) if (raw := response.headers.get("Content-Length", "").strip()).isdigit() else None
    if response.status == 206 and have:
        start, total = _content_range(response.headers.get("Content-Range"))
        if start != have:
            part.unlink(missing_ok=True)
            raise _Failed(f"server answered the resume with bytes from {start}, not {have}", transient=True)
        expected = total if total is not None else (have + length if length is not None else None)
        mode, written, head, source = "ab", have, _read_head(part), "Content-Range"
    elif response.status == 200:
        expected, mode, written, head, source = length, "wb", 0, b"", "Content-Length"
    else:
        raise _Failed(f"unexpected HTTP {response.status} {response.reason}".rstrip())
    if expected is not None and expected > settings.max_bytes:
        raise _Failed(f"too large: the server announces {expected} bytes (limit {settings.max_bytes})")
    if expected is not None and request.size is not None and expected != request.size:
        raise _Failed(f"size mismatch: the server announces {expected} bytes, expected {request.size}")
    checked = len(head) >= HEAD_WINDOW
    with part.open(mode) as fh:  # a disk error surfaces as an "unexpected error" line naming it
        while chunk := response.read(_CHUNK):
            if job.stop.is_set():
                raise _Failed("interrupted", transient=True)
            if not checked:
                head += chunk[: HEAD_WINDOW - len(head)]
                if len(head) >= HEAD_WINDOW or PDF_MAGIC in head:
                    check_pdf_head(head, content_type)
                    checked = True
            written += len(chunk)
            if written > settings.max_bytes:
                raise _Failed(f"too large: over {settings.max_bytes} bytes")
            fh.write(chunk)
    if not checked:
        check_pdf_head(head, content_type)
    if expected is not None and written != expected:
        raise _Failed(f"size mismatch: got {written} bytes, expected {expected} ({source})", transient=True)


def _copy_local(request: FetchRequest, part: Path, settings: FetchSettings) -> None:
    """Copy a plain path or file:// URL; checked like a download, never retried."""
    parsed = urllib.parse.urlsplit(request.url)
    if parsed.scheme.lower() == "file":
        if parsed.netloc not in ("", "localhost"):
            raise _Failed(f"file URL with a remote host {parsed.netloc!r} is not supported")
        source = Path(urllib.request.url2pathname(parsed.path))
    else:
        source = Path(request.url).expanduser()
    try:
        if not source.is_file():
            raise _Failed(f"no such file: {source}" if not source.exists() else f"not a file: {source}")
        size = source.stat().st_size
        if size > settings.max_bytes:
            raise _Failed(f"too large: {size} bytes (limit {settings.max_bytes})")
        check_pdf_head(_read_head(source), "")
        shutil.copyfile(source, part)
    except OSError as exc:
        raise _Failed(f"cannot copy {source}: {exc.strerror or exc}") from None


def _validate(request: FetchRequest, path: Path, content_type: str) -> tuple[int, str]:
    """Final checks on complete bytes: PDF header, expected size and sha256. Returns (size, sha256)."""
    size = path.stat().st_size
    if request.size is not None and size != request.size:
        raise _Failed(f"size mismatch: got {size} bytes, expected {request.size}")
    check_pdf_head(_read_head(path), content_type)
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    sha = digest.hexdigest()
    if request.sha256 is not None and sha != request.sha256.lower():
        raise _Failed(f"sha256 mismatch: got {sha[:12]}…, expected {request.sha256[:12]}…")
    return size, sha


def check_pdf_head(head: bytes, content_type: str) -> None:
    """Raise unless ``head`` (the first bytes) holds the PDF header; name an HTML page as such."""
    if PDF_MAGIC in head[:HEAD_WINDOW]:
        return
    if not head:
        raise _Failed("not a PDF: the body is empty")
    stripped = head.lstrip().lower()
    if "html" in content_type.lower() or stripped.startswith((b"<!doctype", b"<html")):
        detail = content_type.split(";")[0].strip() or "HTML body"
        title = _TITLE.search(head)
        if title:
            detail += f", title {title.group(1).decode('utf-8', 'replace').strip()!r}"
        raise _Failed(f"not a PDF: the server sent an HTML page ({detail})")
    raise _Failed(f"not a PDF (starts with {head[:16]!r})")


def _resumable_size(part: Path) -> int:
    """Bytes of ``part`` worth resuming from: only a partial body that starts like a PDF."""
    try:
        size = part.stat().st_size
    except FileNotFoundError:
        return 0
    if size and PDF_MAGIC in _read_head(part):
        return size
    part.unlink(missing_ok=True)
    return 0


def _read_head(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(HEAD_WINDOW)


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, total size) from ``bytes START-END/TOTAL``; None for what is missing."""
    match = re.fullmatch(r"\s*bytes\s+(\d+)-\d+/(\d+|\*)\s*", value or "")
    if not match:
        return None, None
    return int(match.group(1)), (int(match.group(2)) if match.group(2) != "*" else None)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
