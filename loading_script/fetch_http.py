"""One document's bytes: a local copy or an HTTP GET with retries, backoff and resume, checked to be a PDF.

:mod:`.fetch` runs these transfers in parallel and records the outcomes. Every failure is a
:class:`DocumentError` naming the reason in one short line; transient ones are retried. Stdlib only.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import hashlib
import http.client
import logging
import random
import re
import shutil
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PDF_MAGIC = b"%PDF-"
#: The PDF spec tolerates junk before the header; readers look for it within the first 1024 bytes.
HEAD_WINDOW = 1024
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 60.0
_CHUNK = 1 << 20
_RETRY_STATUS = frozenset({408, 425, 429})
_TITLE = re.compile(rb"<title[^>]*>([^<]{1,80})", re.IGNORECASE)


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


class DocumentError(Exception):
    """A per-document failure. Transient ones are retried, and their partial body is kept for a resume."""

    def __init__(
        self, reason: str, *, transient: bool = False, retry_after: float | None = None, timed_out: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason, self.transient, self.retry_after, self.timed_out = reason, transient, retry_after, timed_out


@dataclass
class Transfer:
    """What one download needs besides the request: the settings, the URL opener and the stop flag of the fetch."""

    settings: FetchSettings
    opener: urllib.request.OpenerDirector
    stop: threading.Event


def download(request: FetchRequest, part: Path, job: Transfer) -> None:
    """Bring the bytes to ``part``: copy a local file, or GET with retries and backoff."""
    scheme = urllib.parse.urlsplit(request.url).scheme.lower()
    if scheme in ("", "file") or len(scheme) == 1:  # a one-letter scheme is a Windows drive
        copy_local(request, part, job.settings)
        return
    if scheme not in ("http", "https"):
        raise DocumentError(f"unsupported URL scheme {scheme!r}")
    attempts = job.settings.retries + 1
    for attempt in range(attempts):
        try:
            http_attempt(request, part, job)
            return
        except DocumentError as exc:
            if not exc.transient or job.stop.is_set():
                raise
            if attempt == attempts - 1:
                tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
                if exc.timed_out:
                    raise DocumentError(
                        f"timed out after {tries} (timeout {job.settings.timeout_s:g} s)", transient=True
                    ) from None
                raise DocumentError(f"{exc.reason} (after {tries})", transient=True) from None
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
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


def http_attempt(request: FetchRequest, part: Path, job: Transfer) -> None:
    """One GET; resumes from ``part`` with a Range request when it holds the start of a PDF."""
    have = resumable_size(part)
    headers = {"User-Agent": job.settings.user_agent, "Accept": "application/pdf, */*;q=0.5"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        with job.opener.open(
            urllib.request.Request(request.url, headers=headers), timeout=job.settings.timeout_s
        ) as response:
            receive(response, request, part, have, job)
    except urllib.error.HTTPError as exc:
        exc.close()  # frees the connection; the error body is not needed
        status = f"HTTP {exc.code} {exc.reason}".rstrip()
        if exc.code == 416 and have:  # our partial body no longer fits the server's file: start over
            part.unlink(missing_ok=True)
            raise DocumentError(status, transient=True) from None
        transient = exc.code in _RETRY_STATUS or 500 <= exc.code <= 599
        retry_after = parse_retry_after(exc.headers.get("Retry-After")) if exc.headers is not None else None
        raise DocumentError(status, transient=transient, retry_after=retry_after) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise DocumentError("timed out", transient=True, timed_out=True) from None
        if isinstance(exc.reason, ssl.SSLCertVerificationError):  # retrying will not fix a certificate
            raise DocumentError(f"TLS certificate rejected: {exc.reason.verify_message}") from None
        raise DocumentError(f"connection failed: {exc.reason}", transient=True) from None
    except TimeoutError:
        raise DocumentError("timed out", transient=True, timed_out=True) from None
    except (ConnectionError, http.client.HTTPException) as exc:
        raise DocumentError(f"connection failed: {type(exc).__name__}: {exc}".rstrip(": "), transient=True) from None
    except ValueError as exc:  # urllib's word for a malformed URL
        raise DocumentError(f"invalid URL: {exc}") from None


def receive(response: Any, request: FetchRequest, part: Path, have: int, job: Transfer) -> None:
    """Stream the body into ``part``, checking its start is a PDF before most of it is read."""
    settings = job.settings
    content_type = response.headers.get("Content-Type", "")
    length = int(raw) if (raw := response.headers.get("Content-Length", "").strip()).isdigit() else None
    if response.status == 206 and have:
        start, total = content_range(response.headers.get("Content-Range"))
        if start != have:
            part.unlink(missing_ok=True)
            raise DocumentError(f"server answered the resume with bytes from {start}, not {have}", transient=True)
        expected = total if total is not None else (have + length if length is not None else None)
        mode, written, head, source = "ab", have, read_head(part), "Content-Range"
    elif response.status == 200:
        expected, mode, written, head, source = length, "wb", 0, b"", "Content-Length"
    else:
        raise DocumentError(f"unexpected HTTP {response.status} {response.reason}".rstrip())
    if expected is not None and expected > settings.max_bytes:
        raise DocumentError(f"too large: the server announces {expected} bytes (limit {settings.max_bytes})")
    if expected is not None and request.size is not None and expected != request.size:
        raise DocumentError(f"size mismatch: the server announces {expected} bytes, expected {request.size}")
    checked = len(head) >= HEAD_WINDOW
    with part.open(mode) as fh:  # a disk error surfaces as an "unexpected error" line naming it
        while chunk := response.read(_CHUNK):
            if job.stop.is_set():
                raise DocumentError("interrupted", transient=True)
            if not checked:
                head += chunk[: HEAD_WINDOW - len(head)]
                if len(head) >= HEAD_WINDOW or PDF_MAGIC in head:
                    check_pdf_head(head, content_type)
                    checked = True
            written += len(chunk)
            if written > settings.max_bytes:
                raise DocumentError(f"too large: over {settings.max_bytes} bytes")
            fh.write(chunk)
    if not checked:
        check_pdf_head(head, content_type)
    if expected is not None and written != expected:
        raise DocumentError(f"size mismatch: got {written} bytes, expected {expected} ({source})", transient=True)


def copy_local(request: FetchRequest, part: Path, settings: FetchSettings) -> None:
    """Copy a plain path or file:// URL; checked like a download, never retried."""
    parsed = urllib.parse.urlsplit(request.url)
    if parsed.scheme.lower() == "file":
        if parsed.netloc not in ("", "localhost"):
            raise DocumentError(f"file URL with a remote host {parsed.netloc!r} is not supported")
        source = Path(urllib.request.url2pathname(parsed.path))
    else:
        source = Path(request.url).expanduser()
    try:
        if not source.is_file():
            raise DocumentError(f"no such file: {source}" if not source.exists() else f"not a file: {source}")
        size = source.stat().st_size
        if size > settings.max_bytes:
            raise DocumentError(f"too large: {size} bytes (limit {settings.max_bytes})")
        check_pdf_head(read_head(source), "")
        shutil.copyfile(source, part)
    except OSError as exc:
        raise DocumentError(f"cannot copy {source}: {exc.strerror or exc}") from None


def validate(request: FetchRequest, path: Path, content_type: str) -> tuple[int, str]:
    """Final checks on complete bytes: PDF header, expected size and sha256. Returns (size, sha256)."""
    size = path.stat().st_size
    if request.size is not None and size != request.size:
        raise DocumentError(f"size mismatch: got {size} bytes, expected {request.size}")
    check_pdf_head(read_head(path), content_type)
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    sha = digest.hexdigest()
    if request.sha256 is not None and sha != request.sha256.lower():
        raise DocumentError(f"sha256 mismatch: got {sha[:12]}…, expected {request.sha256[:12]}…")
    return size, sha


def check_pdf_head(head: bytes, content_type: str) -> None:
    """Raise unless ``head`` (the first bytes) holds the PDF header; name an HTML page as such."""
    if PDF_MAGIC in head[:HEAD_WINDOW]:
        return
    if not head:
        raise DocumentError("not a PDF: the body is empty")
    stripped = head.lstrip().lower()
    if "html" in content_type.lower() or stripped.startswith((b"<!doctype", b"<html")):
        detail = content_type.split(";")[0].strip() or "HTML body"
        title = _TITLE.search(head)
        if title:
            detail += f", title {title.group(1).decode('utf-8', 'replace').strip()!r}"
        raise DocumentError(f"not a PDF: the server sent an HTML page ({detail})")
    raise DocumentError(f"not a PDF (starts with {head[:16]!r})")


def resumable_size(part: Path) -> int:
    """Bytes of ``part`` worth resuming from: only a partial body that starts like a PDF."""
    try:
        size = part.stat().st_size
    except FileNotFoundError:
        return 0
    if size and PDF_MAGIC in read_head(part):
        return size
    part.unlink(missing_ok=True)
    return 0


def read_head(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(HEAD_WINDOW)


def content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, total size) from ``bytes START-END/TOTAL``; None for what is missing."""
    match = re.fullmatch(r"\s*bytes\s+(\d+)-\d+/(\d+|\*)\s*", value or "")
    if not match:
        return None, None
    return int(match.group(1)), (int(match.group(2)) if match.group(2) != "*" else None)
