"""The release fetch retries HTTP 429 (Too Many Requests), with and without Retry-After (issue 29).

A local host answers 429 a given number of times per document, then serves the PDF; the times of its requests
show whether a Retry-After was waited for.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from madqa.loading_script.fetch import FetchRequest, FetchSettings, fetch_documents

SETTINGS = FetchSettings(workers=2, timeout_s=5.0, retries=3, backoff_s=0.01)
#: document -> (429 answers before the PDF, Retry-After header or None)
PLAN = {"after0.pdf": (2, "0"), "plain.pdf": (2, None), "after1.pdf": (1, "1"), "always.pdf": (99, "0")}


def _pdf(text: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return doc.tobytes()


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, dict[str, list[float]], dict[str, bytes]]]:
    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(key, raising=False)
    pdfs = {name: _pdf(name) for name in PLAN}
    hits: dict[str, list[float]] = defaultdict(list)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            name = self.path.lstrip("/")
            with lock:
                hits[name].append(time.monotonic())
                count = len(hits[name])
            refusals, retry_after = PLAN[name]
            if count <= refusals:
                body = b"slow down"
                self.send_response(429)
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                ctype = "text/plain"
            else:
                body = pdfs[name]
                self.send_response(200)
                ctype = "application/pdf"
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits, pdfs
    finally:
        server.shutdown()
        server.server_close()


def test_429_is_retried_with_and_without_retry_after(host, tmp_path) -> None:
    base, hits, pdfs = host
    report = fetch_documents([FetchRequest(n, f"{base}/{n}") for n in PLAN], tmp_path, SETTINGS)
    assert sorted(report.fetched) == ["after0.pdf", "after1.pdf", "plain.pdf"]
    for name in report.fetched:
        assert (tmp_path / name).read_bytes() == pdfs[name]
    assert len(hits["after0.pdf"]) == 3 and len(hits["plain.pdf"]) == 3 and len(hits["after1.pdf"]) == 2
    assert hits["after1.pdf"][1] - hits["after1.pdf"][0] >= 0.9  # Retry-After: 1 was honoured
    (failed,) = report.failed
    assert failed.document == "always.pdf" and "429" in failed.reason and "after 4 attempts" in failed.reason
    assert len(hits["always.pdf"]) == SETTINGS.retries + 1
    assert not (tmp_path / "always.pdf").exists()
