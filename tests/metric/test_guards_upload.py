"""The upload gate (metric/upload_gate.py) with lying ``Content-Length`` values (issue 29).

The gate is documented to pass an upload on only once its whole body is read within the declared length and its
part names are checked. Here it wraps a recording app and is driven as ASGI, the way a server hands it a request,
so bodies can disagree with their header both ways (an HTTP server would itself cut a longer body at the header's
length, which would hide the gate's own check): longer in one message or in chunks is refused (400) and never
reaches the app; shorter, then the client goes away, reaches nothing either; an honest body is passed on intact.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from madqa.metric.upload_gate import UploadGate

pytestmark = pytest.mark.server

BOUNDARY = "lyingLengthBoundary"
BODY = (
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="results.jsonl"\r\n'
    f'Content-Type: application/octet-stream\r\n\r\n{{"id": "q1", "answer": ["x"]}}\r\n--{BOUNDARY}--\r\n'
).encode()


class Recorder:
    """The wrapped app: records the bodies it was given, answers 200."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        self.bodies.append(b"".join(chunks))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def post(gate: UploadGate, declared: int | str | None, messages: list[dict]) -> int | None:
    """POST …/upload with ``declared`` as Content-Length and the given ASGI messages; the status sent, if any."""
    headers = [(b"content-type", f"multipart/form-data; boundary={BOUNDARY}".encode())]
    if declared is not None:
        headers.append((b"content-length", str(declared).encode()))
    scope = {"type": "http", "method": "POST", "path": "/gradio_api/upload", "headers": headers}
    queue = list(messages)
    sent: list[dict] = []

    async def receive() -> dict:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(gate(scope, receive, send))
    starts = [m["status"] for m in sent if m["type"] == "http.response.start"]
    return starts[0] if starts else None


def chunks(data: bytes, size: int) -> list[dict]:
    parts = [data[i : i + size] for i in range(0, len(data), size)]
    return [{"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)]


def test_an_honest_upload_is_passed_on_intact() -> None:
    app = Recorder()
    assert post(UploadGate(app, max_bytes=10_000), len(BODY), chunks(BODY, 17)) == 200
    assert app.bodies == [BODY]


@pytest.mark.parametrize("extra", [1, 100, 5_000])
@pytest.mark.parametrize("size", [10_000_000, 23], ids=["one message", "chunked"])
def test_a_body_longer_than_its_content_length_is_refused(extra: int, size: int) -> None:
    app = Recorder()
    body = BODY + b"x" * extra  # the declared length is the honest part's: the rest rides along
    assert post(UploadGate(app, max_bytes=10_000), len(BODY), chunks(body, size)) == 400
    assert app.bodies == []


@pytest.mark.parametrize("declared_extra", [1, 1_000])
def test_a_body_shorter_than_its_content_length_never_reaches_the_app(declared_extra: int) -> None:
    """The client stops sending (then goes away): nothing is passed on, and nothing hangs."""
    app = Recorder()
    messages = chunks(BODY, 23)
    messages[-1]["more_body"] = True  # the server still waits for the declared rest, which never comes
    assert post(UploadGate(app, max_bytes=10_000), len(BODY) + declared_extra, messages) is None
    assert app.bodies == []


def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    app = Recorder()
    assert post(UploadGate(app, max_bytes=1_000), 10_000_000, chunks(BODY, 10_000)) == 413
    assert app.bodies == []


@pytest.mark.parametrize("declared", [None, "-5", "12x", ""])
def test_no_or_a_malformed_content_length_is_refused(declared: str | None) -> None:
    app = Recorder()
    assert post(UploadGate(app, max_bytes=10_000), declared, chunks(BODY, 100)) == 411
    assert app.bodies == []


# -- names gradio would store but then refuse to use (issue 39) ---------------------------------------------------


def answer(gate: UploadGate, body: bytes) -> tuple[int, str]:
    """POST …/upload with an honest Content-Length: the status and the text the gate (or the app) sent."""
    sent: list[dict] = []
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/gradio_api/upload",
        "headers": [
            (b"content-type", f"multipart/form-data; boundary={BOUNDARY}".encode()),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    queue = chunks(body, 1_000)

    async def receive() -> dict:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(gate(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()


def named(name: str) -> bytes:
    return BODY.replace(b'filename="results.jsonl"', f'filename="{name}"'.encode())


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (".hidden.jsonl", "starts with a dot"),
        ("..%2F..%2Fevil.jsonl", "starts with a dot"),  # gradio keeps it as it is: a dotfile
        ("<.x.jsonl", "starts with a dot"),  # gradio strips the '<': stored as .x.jsonl
        ("x%2F..%2Fevil.jsonl", r"holds a percent-encoded character \(%2F\)"),
        ("a%5cb.jsonl", r"holds a percent-encoded character \(%5c\)"),
        ("%2e%2e%2fx.jsonl", r"holds a percent-encoded character \(%2e\)"),
        ("x%252F.jsonl", r"holds a percent-encoded character \(%25\)"),  # double encoding
    ],
)
def test_a_hidden_or_percent_encoded_name_is_refused_with_its_reason(name: str, reason: str) -> None:
    app = Recorder()
    status, text = answer(UploadGate(app, max_bytes=10_000), named(name))
    assert status == 415 and app.bodies == []
    assert re.search(rf"^the file name '.*' {reason}", text), text
    assert "rename it" in text


@pytest.mark.parametrize("name", ["my.results.v2.jsonl", "100% done.jsonl", "results (1).json", "r%.jsonl"])
def test_dots_inside_and_a_bare_percent_sign_pass(name: str) -> None:
    app = Recorder()
    assert answer(UploadGate(app, max_bytes=10_000), named(name)) == (200, "ok")
    assert app.bodies == [named(name)]


# -- the same over HTTP, against a launched gated gradio app ------------------------------------------------------


@pytest.fixture(scope="module")
def gated(tmp_path_factory) -> Any:
    """A gradio app with a File behind the gate (as the Space and the metric widget install it)."""
    pytest.importorskip("gradio")
    from helpers.upload_app import file_upload_app
    from starlette.middleware import Middleware

    folder = tmp_path_factory.mktemp("gated-uploads")
    with file_upload_app(folder, app_kwargs={"middleware": [Middleware(UploadGate, max_bytes=10_000)]}) as port:
        yield port, folder


def raw_post(port: int, declared: int, data: bytes, close_write: bool) -> bytes:
    """POST /gradio_api/upload with a hand-written Content-Length over a plain socket; what came back."""
    head = (
        f"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {declared}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(head + data)
        if close_write:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def _stored(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_over_http_a_longer_body_is_cut_at_its_content_length_and_the_rest_stores_nothing(gated) -> None:
    port, folder = gated
    tail = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="evil.html"\r\n\r\n'
        f"<p>hi</p>\r\n--{BOUNDARY}--\r\n"
    ).encode()
    answer = raw_post(port, len(BODY), BODY + tail, close_write=False)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    stored = _stored(folder)
    assert "evil.html" not in stored and all(b"<p>hi</p>" not in data for data in stored.values())
    assert stored.get("results.jsonl") == b'{"id": "q1", "answer": ["x"]}'


@pytest.mark.parametrize("missing", [1, 5_000])
def test_over_http_a_shorter_body_stores_nothing_and_does_not_hang(gated, missing: int) -> None:
    port, folder = gated
    before = _stored(folder)
    started = time.monotonic()
    answer = raw_post(port, len(BODY) + missing, BODY.replace(b"results.jsonl", b"short.jsonl"), close_write=True)
    assert not answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert time.monotonic() - started < 10
    assert _stored(folder) == before
