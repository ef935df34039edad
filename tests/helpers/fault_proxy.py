"""A loopback HTTP proxy that injects the faults real model providers produce, in front of a real server.

Each request to the proxy takes the next fault of its script (``None`` or ``"pass"``: forward unchanged), so a test
decides exactly which attempt fails and how. Faults:

* ``"429"`` / ``"429-retry-after"``: Too Many Requests, without or with ``Retry-After`` (:attr:`FaultProxy.retry_after`
  seconds, 1 unless given);
* ``"500"``, ``"503"``: a server error with a JSON error body;
* ``"400-detail"``: a refusal whose reason is not OpenAI-shaped, as ``transformers serve`` words it
  (``{"detail": "Server is pinned to …"}``, :data:`PINNED_REASON`);
* ``"drop"``: close the connection without any reply;
* ``"truncate"``: forward, then send the real headers (the full ``Content-Length``) and half the body, and close;
* ``"badjson"``: forward, then send a 200 whose body is the first half of the real one, ``Content-Length`` matching;
* ``"hang"``: read the request, send nothing for :attr:`FaultProxy.hang_s` seconds (bounded), then close.

Bounded by construction: it listens on 127.0.0.1 only, serves at most :attr:`FaultProxy.max_requests` requests,
and every socket operation has a timeout; :meth:`FaultProxy.close` stops it.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

FAULTS = ("pass", "429", "429-retry-after", "500", "503", "400-detail", "drop", "truncate", "badjson", "hang")
#: The reason a ``"400-detail"`` fault gives.
PINNED_REASON = "Server is pinned to 'Qwen/Qwen2.5-0.5B-Instruct'; requested 'smollm2'"


class FaultProxy:
    """Forward ``/v1/...`` requests to ``upstream`` (``http://127.0.0.1:PORT``), applying the scripted faults."""

    def __init__(
        self,
        upstream: str,
        script: Iterable[str | None] = (),
        *,
        hang_s: float = 6.0,
        retry_after: float = 1,
        max_requests: int = 200,
        upstream_timeout: float = 300.0,
    ) -> None:
        self.upstream = urlparse(upstream)
        self.script = [f or "pass" for f in script]
        unknown = set(self.script) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}")
        self.hang_s, self.max_requests, self.upstream_timeout = hang_s, max_requests, upstream_timeout
        self.retry_after = retry_after
        self.seen: list[str] = []  # the fault applied to each request, in order
        self._lock = threading.Lock()
        self._stop = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._handle(b"")

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                self._handle(self.rfile.read(length))

            def _handle(self, body: bytes) -> None:
                fault = proxy._next()
                if fault == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "hang":
                    proxy._stop.wait(proxy.hang_s)
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault in ("429", "429-retry-after", "500", "503", "400-detail"):
                    status = int(fault[:3])
                    error = {"error": {"message": f"injected {status}", "type": "injected"}}
                    data = json.dumps({"detail": PINNED_REASON} if fault == "400-detail" else error).encode()
                    self.send_response(status)
                    if fault == "429-retry-after":
                        self.send_header("Retry-After", f"{proxy.retry_after:g}")
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                status, headers, data = proxy._forward(self.command, self.path, self.headers, body)
                if fault == "truncate":
                    self._reply(status, headers, data[: len(data) // 2], length=len(data))
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "badjson":
                    data = data[: len(data) // 2]
                self._reply(status, headers, data, length=len(data))

            def _reply(self, status: int, headers: list[tuple[str, str]], data: bytes, *, length: int) -> None:
                self.send_response(status)
                for key, value in headers:
                    if key.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(length))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    def _next(self) -> str:
        with self._lock:
            if len(self.seen) >= self.max_requests:
                raise RuntimeError("fault proxy: request budget spent")
            fault = self.script[len(self.seen)] if len(self.seen) < len(self.script) else "pass"
            self.seen.append(fault)
            return fault

    def _forward(
        self, method: str, path: str, headers: object, body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=self.upstream_timeout)
        try:
            keep = {k: v for k, v in headers.items() if k.lower() in ("content-type", "authorization", "accept")}
            conn.request(method, path, body=body or None, headers=keep)
            response = conn.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            conn.close()

    def close(self) -> None:
        """Stop serving (a hanging request is released at once)."""
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2) -> bool:  # noqa: ANN001 - test helper
    """Poll ``predicate()`` until it is true or ``timeout`` passes."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return False
