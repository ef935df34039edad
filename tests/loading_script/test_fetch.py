"""The PDF fetcher against a local document host that misbehaves in the ways real hosts do (offline)."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from madqa.loading_script.fetch import (
    MANIFEST_NAME,
    PARTIAL_DIR,
    FetchRequest,
    FetchSettings,
    fetch_documents,
    parse_retry_after,
    read_manifest,
    retry_delay,
)

FAST = FetchSettings(workers=4, timeout_s=1.0, retries=2, backoff_s=0.01)  # 1 s: room for a loaded CI box
HTML_PAGE = b"\n<!DOCTYPE html><html><head><title>Access denied</title></head><body>nope</body></html>"


def _pdf(text: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return doc.tobytes()


@dataclass
class Host:
    """The document host: what it serves, what it was asked, and which routes are 'fixed' (serve a PDF)."""

    base: str = ""
    pdfs: dict[str, bytes] = field(default_factory=dict)
    hits: Counter = field(default_factory=Counter)
    ranges: list[tuple[str, str]] = field(default_factory=list)
    fixed: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, name: str) -> str:
        return f"{self.base}/{name}"


def _handler(host: Host) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(
            self,
            status: int,
            body: bytes,
            ctype: str = "application/pdf",
            length: int | None = None,
            extra: dict[str, str] | None = None,
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            name = self.path.lstrip("/")
            with host.lock:
                host.hits[name] += 1
                count = host.hits[name]
                if self.headers.get("Range"):
                    host.ranges.append((name, self.headers["Range"]))
            body = host.pdfs.get(name, b"")
            if name in host.fixed or name in ("a.pdf", "b.pdf", "badsha.pdf"):
                return self._send(200, body)  # ignores Range, as http.server does
            if name == "flaky.pdf":
                if count == 1:
                    return self._send(503, b"busy", "text/plain", extra={"Retry-After": "0"})
                return self._send(200, body)
            if name == "html.pdf":
                return self._send(200, HTML_PAGE, "text/html; charset=utf-8")
            if name == "zip.pdf":
                return self._send(200, b"PK\x03\x04" + b"\0" * 64, "application/octet-stream")
            if name == "slow.pdf":
                host.release.wait(5)  # longer than the client's timeout
                return self._send(200, body)
            if name == "short.pdf":
                return self._send(200, body, length=len(body) + 500)  # body cut short of its Content-Length
            if name == "ranged.pdf":
                start = int(self.headers.get("Range", "bytes=0-").split("=")[1].rstrip("-"))
                end = len(body) - 1
                return self._send(206, body[start:], extra={"Content-Range": f"bytes {start}-{end}/{len(body)}"})
            return self._send(404, b"<html>not found</html>", "text/html")

    return Handler


@pytest.fixture
def host() -> Iterator[Host]:
    state = Host()
    for name in (
        "a.pdf",
        "b.pdf",
        "badsha.pdf",
        "flaky.pdf",
        "html.pdf",
        "zip.pdf",
        "slow.pdf",
        "short.pdf",
        "ranged.pdf",
        "missing.pdf",
    ):
        state.pdfs[name] = _pdf(f"document {name}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.handle_error = lambda request, address: None  # the client hanging up on slow.pdf is expected
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(key, raising=False)


def _requests(host: Host, names: list[str]) -> list[FetchRequest]:
    return [FetchRequest(name, host.url(name), sha256="0" * 64 if name == "badsha.pdf" else None) for name in names]


def _manifest(folder: Path) -> dict:
    return read_manifest(folder)


def test_each_failure_is_named_with_its_reason_and_leaves_no_file(
    host: Host, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    names = [
        "a.pdf",
        "b.pdf",
        "flaky.pdf",
        "html.pdf",
        "slow.pdf",
        "missing.pdf",
        "short.pdf",
        "zip.pdf",
        "badsha.pdf",
    ]
    with caplog.at_level(logging.WARNING, logger="madqa.loading_script.fetch"):
        report = fetch_documents(_requests(host, names), tmp_path, FAST)

    assert report.fetched == ["a.pdf", "b.pdf", "flaky.pdf"]
    assert report.present == []
    reasons = {f.document: f.reason for f in report.failed}
    assert [f.document for f in report.failed] == sorted(reasons)
    assert reasons["html.pdf"] == "not a PDF: the server sent an HTML page (text/html, title 'Access denied')"
    assert reasons["slow.pdf"] == "timed out after 3 attempts (timeout 1 s)"
    assert reasons["missing.pdf"] == "HTTP 404 Not Found"
    size = len(host.pdfs["short.pdf"])
    assert (
        reasons["short.pdf"] == f"size mismatch: got {size} bytes, expected {size + 500} (Content-Length) "
        "(after 3 attempts)"
    )
    assert reasons["zip.pdf"] == f"not a PDF (starts with {(b'PK' + bytes([3, 4]) + bytes(12))!r})"
    assert reasons["badsha.pdf"].startswith("sha256 mismatch: got ")
    assert all(f.url == host.url(f.document) for f in report.failed)

    # Retried: 503 once, timeouts, truncation. Not retried: 404, an HTML page, other non-PDF bytes, a bad sha256.
    assert host.hits["flaky.pdf"] == 2 and host.hits["slow.pdf"] == 3 and host.hits["short.pdf"] == 3
    assert all(host.hits[n] == 1 for n in ("missing.pdf", "html.pdf", "zip.pdf", "badsha.pdf"))

    for name in report.fetched:
        assert (tmp_path / name).read_bytes() == host.pdfs[name]
    for failure in report.failed:
        assert not (tmp_path / failure.document).exists()
    assert not (tmp_path / PARTIAL_DIR / "html.pdf.part").exists()
    assert sorted(_manifest(tmp_path)) == report.fetched
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == len(report.failed)
    assert all(any(f.document in m and f.url in m and f.reason in m for m in warned) for f in report.failed)


def test_rerun_requests_nothing_for_present_documents_and_fetches_only_the_fixed(host: Host, tmp_path: Path) -> None:
    names = ["a.pdf", "b.pdf", "flaky.pdf", "html.pdf", "missing.pdf", "zip.pdf"]
    first = fetch_documents(_requests(host, names), tmp_path, FAST)
    assert first.fetched == ["a.pdf", "b.pdf", "flaky.pdf"]

    host.hits.clear()
    host.fixed.update({"html.pdf", "missing.pdf", "zip.pdf"})
    second = fetch_documents(_requests(host, names), tmp_path, FAST)
    assert second.present == ["a.pdf", "b.pdf", "flaky.pdf"]
    assert second.fetched == ["html.pdf", "missing.pdf", "zip.pdf"]
    assert second.failed == []
    assert host.hits == Counter({"html.pdf": 1, "missing.pdf": 1, "zip.pdf": 1})

    host.hits.clear()
    third = fetch_documents(_requests(host, names), tmp_path, FAST)
    assert third.present == sorted(names) and third.fetched == [] and sum(host.hits.values()) == 0
    assert not (tmp_path / PARTIAL_DIR).exists()

    (tmp_path / MANIFEST_NAME).write_text("{not json")  # a damaged manifest: files are re-checked and adopted
    fourth = fetch_documents(_requests(host, names), tmp_path, FAST)
    assert fourth.present == sorted(names) and sum(host.hits.values()) == 0
    assert sorted(read_manifest(tmp_path)) == sorted(names)


def test_interrupted_download_resumes_with_a_range_request(host: Host, tmp_path: Path) -> None:
    original = host.pdfs["ranged.pdf"]
    half = len(original) // 2
    (tmp_path / PARTIAL_DIR).mkdir()
    (tmp_path / PARTIAL_DIR / "ranged.pdf.part").write_bytes(original[:half])

    report = fetch_documents([FetchRequest("ranged.pdf", host.url("ranged.pdf"), size=len(original))], tmp_path, FAST)
    assert report.fetched == ["ranged.pdf"]
    assert host.ranges == [("ranged.pdf", f"bytes={half}-")]
    assert (tmp_path / "ranged.pdf").read_bytes() == original


def test_resume_starts_over_when_the_server_ignores_range(host: Host, tmp_path: Path) -> None:
    original = host.pdfs["a.pdf"]
    (tmp_path / PARTIAL_DIR).mkdir()
    (tmp_path / PARTIAL_DIR / "a.pdf.part").write_bytes(original[:100])
    report = fetch_documents([FetchRequest("a.pdf", host.url("a.pdf"))], tmp_path, FAST)
    assert report.fetched == ["a.pdf"]
    assert host.ranges == [("a.pdf", "bytes=100-")]
    assert (tmp_path / "a.pdf").read_bytes() == original  # the 200 body replaced the prefix, not appended to it


def test_local_paths_and_file_urls_are_copied_and_checked(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "one.pdf").write_bytes(_pdf("one"))
    (source / "page.html").write_bytes(HTML_PAGE)
    folder = tmp_path / "docs"
    requests = [
        FetchRequest("one.pdf", str(source / "one.pdf")),
        FetchRequest("two.pdf", (source / "one.pdf").as_uri()),
        FetchRequest("gone.pdf", str(source / "gone.pdf")),
        FetchRequest("page.pdf", str(source / "page.html")),
    ]
    report = fetch_documents(requests, folder, FAST)
    assert report.fetched == ["one.pdf", "two.pdf"]
    assert (folder / "two.pdf").read_bytes() == (source / "one.pdf").read_bytes()
    reasons = {f.document: f.reason for f in report.failed}
    assert reasons == {
        "gone.pdf": f"no such file: {source / 'gone.pdf'}",
        "page.pdf": "not a PDF: the server sent an HTML page (HTML body, title 'Access denied')",
    }
    assert fetch_documents(requests[:2], folder, FAST).present == ["one.pdf", "two.pdf"]


def test_existing_files_are_adopted_when_valid_and_replaced_when_stale(host: Host, tmp_path: Path) -> None:
    (tmp_path / "a.pdf").write_bytes(host.pdfs["a.pdf"])  # put there by hand: no manifest entry
    (tmp_path / "missing.pdf").write_bytes(HTML_PAGE)  # an earlier saved error page
    report = fetch_documents(_requests(host, ["a.pdf", "missing.pdf"]), tmp_path, FAST)
    assert report.present == ["a.pdf"] and host.hits["a.pdf"] == 0
    assert [f.reason for f in report.failed] == ["HTTP 404 Not Found"]
    assert not (tmp_path / "missing.pdf").exists()  # the invalid stale file is gone, not passed off as present
    assert _manifest(tmp_path)["a.pdf"]["url"] == host.url("a.pdf")

    (tmp_path / "a.pdf").write_bytes(_pdf("edited by hand, now longer"))  # changed behind our back: new size
    assert fetch_documents(_requests(host, ["a.pdf"]), tmp_path, FAST).fetched == ["a.pdf"]
    assert (tmp_path / "a.pdf").read_bytes() == host.pdfs["a.pdf"]

    moved = [FetchRequest("a.pdf", host.url("b.pdf"))]  # the documents config now points elsewhere
    assert fetch_documents(moved, tmp_path, FAST).fetched == ["a.pdf"]
    assert (tmp_path / "a.pdf").read_bytes() == host.pdfs["b.pdf"]


def test_size_limits_and_expected_size(host: Host, tmp_path: Path) -> None:
    small = FetchSettings(workers=2, timeout_s=1.0, retries=0, backoff_s=0.01, max_bytes=100)
    report = fetch_documents([FetchRequest("a.pdf", host.url("a.pdf"))], tmp_path, small)
    size = len(host.pdfs["a.pdf"])
    assert [f.reason for f in report.failed] == [f"too large: the server announces {size} bytes (limit 100)"]
    report = fetch_documents([FetchRequest("b.pdf", host.url("b.pdf"), size=size + 1)], tmp_path, FAST)
    assert report.failed[0].reason.startswith("size mismatch: the server announces")
    assert not (tmp_path / "a.pdf").exists() and not (tmp_path / "b.pdf").exists()


def test_malformed_request_lists_raise(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="duplicate document name"):
        fetch_documents([FetchRequest("x.pdf", "/a"), FetchRequest("x.pdf", "/b")], tmp_path, FAST)
    with pytest.raises(ValueError, match="plain file name"):
        fetch_documents([FetchRequest("../x.pdf", "/a")], tmp_path, FAST)
    with pytest.raises(ValueError, match="plain file name"):
        fetch_documents([FetchRequest(MANIFEST_NAME, "/a")], tmp_path, FAST)
    with pytest.raises(ValueError, match="invalid fetch settings"):
        FetchSettings(workers=0)


def test_retry_delay_honours_retry_after_and_caps_backoff() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: retry now
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    assert retry_delay(0, 7.0, 1.0) == 7.0
    assert retry_delay(0, 600.0, 1.0) == 60.0
    assert 8.0 <= retry_delay(3, None, 1.0) <= 9.6
    assert 30.0 <= retry_delay(20, None, 1.0) <= 36.0


def test_progress_bar_and_empty_request_list(host: Host, tmp_path: Path) -> None:
    assert fetch_documents([], tmp_path, FAST, progress=True).fetched == []
    report = fetch_documents(_requests(host, ["a.pdf"]), tmp_path, FAST, progress=True)
    assert report.fetched == ["a.pdf"]
