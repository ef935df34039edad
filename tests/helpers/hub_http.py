"""A local stand-in of the Hub's HTTP commit API, for ``huggingface_hub.HfApi(endpoint=...)`` as a user calls it.

It answers the two calls ``upload_file``/``create_commit`` make (``preupload``: every file inline, ``commit``: the
NDJSON header and base64 files), refuses a request without a bearer token (401), and records each commit: the repo,
its type, the revision, whether it opens a pull request, the message and the files' bytes. A pull request gets
number 1, 2, … per repo, as the Hub numbers discussions.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Commit:
    """One commit the stand-in received."""

    repo_type: str
    repo_id: str
    revision: str
    create_pr: bool
    summary: str
    files: dict[str, bytes] = field(default_factory=dict)


class HubStandIn:
    """``endpoint`` is the base URL to give ``HfApi``; ``commits`` what it received."""

    def __init__(self) -> None:
        self.commits: list[Commit] = []
        self._prs: dict[str, int] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._reply(404, {"error": "not served by the stand-in"})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if not (self.headers.get("Authorization") or "").startswith("Bearer "):
                    self._reply(401, {"error": "Invalid credentials in Authorization header"})
                    return
                url = urlsplit(self.path)
                parts = url.path.strip("/").split("/")  # api, models, ORG, NAME, preupload|commit, REVISION
                if len(parts) != 6 or parts[0] != "api" or parts[4] not in ("preupload", "commit"):
                    self._reply(404, {"error": f"not served by the stand-in: {url.path}"})
                    return
                kind, repo_id, revision = parts[1][:-1], f"{parts[2]}/{parts[3]}", unquote(parts[5])
                if parts[4] == "preupload":
                    files = json.loads(body)["files"]
                    listed = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
                    self._reply(200, {"files": listed})
                    return
                create_pr = parse_qs(url.query).get("create_pr") == ["1"]
                self._reply(200, hub._commit(kind, repo_id, revision, create_pr, body))

        return Handler

    def _commit(self, kind: str, repo_id: str, revision: str, create_pr: bool, body: bytes) -> dict[str, Any]:
        lines = [json.loads(text) for text in body.decode().splitlines() if text.strip()]
        header = next(item["value"] for item in lines if item["key"] == "header")
        files = {
            item["value"]["path"]: base64.b64decode(item["value"]["content"])
            for item in lines
            if item["key"] == "file"
        }
        with self._lock:
            self.commits.append(Commit(kind, repo_id, revision, create_pr, header["summary"], files))
            number = self._prs[repo_id] = self._prs.get(repo_id, 0) + (1 if create_pr else 0)
        prefix = "" if kind == "model" else f"{kind}s/"
        base = f"{self.endpoint}/{prefix}{repo_id}"
        oid = f"{len(self.commits):040x}"
        reply: dict[str, Any] = {"commitUrl": f"{base}/commit/{oid}", "commitOid": oid}
        if create_pr:
            reply["pullRequestUrl"] = f"{base}/discussions/{number}"
        return reply


@contextmanager
def hub_stand_in() -> Iterator[HubStandIn]:
    """A running :class:`HubStandIn`, shut down on exit."""
    hub = HubStandIn()
    thread = threading.Thread(target=hub.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        hub.server.shutdown()
        hub.server.server_close()
        thread.join(timeout=30)
