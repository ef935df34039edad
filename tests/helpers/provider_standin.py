"""A local stand-in of the two managed RAG services' HTTP APIs, for the file-search agent's offline tests.

It implements just the endpoints the official SDKs call (``openai`` and ``google-genai``, pointed at it by their
base URL) and records every request:

* OpenAI (under ``/v1``): ``POST /files`` (multipart), ``POST /vector_stores``, ``GET /vector_stores/ID``,
  ``POST /vector_stores/ID/file_batches``, ``GET /vector_stores/ID/file_batches/BID`` (``in_progress`` on the
  first poll, then ``completed``), ``POST /responses`` (a ``file_search_call`` with its results, then a message
  whose ``output_text`` has ``file_citation`` annotations).
* Gemini (under ``/v1`` or ``/v1beta``): ``POST /fileSearchStores``, ``GET /fileSearchStores/ID``, the resumable upload
  (``POST /upload/VERSION/fileSearchStores/ID:uploadToFileSearchStore`` → an upload URL → ``upload, finalize``),
  ``GET`` of the import operation (not done on the first poll), ``POST /models/M:generateContent`` (grounding
  chunks with title, text, custom metadata and, unless ``gemini_pages`` is off, ``pageNumber``; supports).

Retrieval is a stand-in too: each uploaded PDF's pages are read with PyMuPDF (pages without a text layer are not
indexed, as the real services do not OCR), each page is one chunk, and the chunks sharing most words with the
question come back. The "model" is :attr:`StandIn.reply`: a function of (question, chunks) returning the reply
text; by default it cites the best chunk's file and page in the paper's JSON format.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORD = re.compile(r"\w+")


@dataclass
class StandinChunk:
    """A retrievable unit of an uploaded file: one page's text."""

    file_id: str
    filename: str
    document: str
    page: int
    text: str


def default_reply(question: str, chunks: list[StandinChunk]) -> str:
    """The stand-in model: answers ``stand-in`` and cites the best chunk's file and page."""
    cites = [{"file": chunks[0].filename, "page": chunks[0].page}] if chunks else []
    return "Here is the answer.\n```json\n" + json.dumps({"answer": ["stand-in"], "citations": cites}) + "\n```"


@dataclass
class StandIn:
    """The services' state and the request log (see the module docstring)."""

    top_k: int = 3
    gemini_pages: bool = True
    reply: Callable[[str, list[StandinChunk]], str] = default_reply
    fail_answers: int | None = None  # an HTTP status for every answer call (responses / generateContent)
    requests: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    stores: dict[str, dict[str, Any]] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def calls(self, method: str, pattern: str) -> list[dict[str, Any]]:
        """The logged requests of ``method`` whose path matches the regular expression ``pattern``."""
        return [r for r in self.requests if r["method"] == method and re.search(pattern, r["path"])]

    def index(self, file_id: str, filename: str, document: str, data: bytes) -> None:
        """Read an uploaded PDF's pages into chunks of the file."""
        import pymupdf

        with pymupdf.open(stream=data, filetype="pdf") as pdf:
            pages = [(n + 1, page.get_text()) for n, page in enumerate(pdf)]
        chunks = [StandinChunk(file_id, filename, document, n, t) for n, t in pages if t.strip()]
        self.files[file_id] = {"filename": filename, "document": document, "bytes": len(data), "chunks": chunks}

    def search(self, question: str, file_ids: list[str]) -> list[StandinChunk]:
        """The ``top_k`` chunks of those files sharing most words with the question (ties: upload order)."""
        words = {w.lower() for w in WORD.findall(question)}
        chunks = [c for f in file_ids for c in self.files[f]["chunks"]]
        scored = [(len(words & {w.lower() for w in WORD.findall(c.text)}), -i, c) for i, c in enumerate(chunks)]
        return [c for s, _, c in sorted(scored, key=lambda x: (x[0], x[1]), reverse=True) if s > 0][: self.top_k]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        try:
            body = json.loads(raw) if raw and "json" in (self.headers.get("Content-Type") or "") else None
        except ValueError:
            body = None
        state = self.server.state
        with state.lock:
            state.requests.append(
                {
                    "method": method,
                    "path": path,
                    "json": body,
                    "size": len(raw),
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                }
            )
            try:
                status, out, headers = _route(state, method, path, body, raw, self.headers, self.server.base)
            except KeyError as exc:
                status, out, headers = 404, _not_found(path, str(exc)), {}
            except Exception as exc:  # noqa: BLE001 - a stand-in bug shows as a 500 with its message
                status, out, headers = 500, {"error": {"message": f"stand-in: {exc!r}", "code": 500}}, {}
                state.requests[-1]["crash"] = repr(exc)
        self._send(status, out, headers)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")


def _not_found(path: str, what: str) -> dict[str, Any]:
    return {
        "error": {"message": f"not found: {what}", "type": "invalid_request_error", "code": 404, "status": "NOT_FOUND"}
    }


def _failure(status: int) -> dict[str, Any]:
    return {
        "error": {
            "message": "stand-in refuses the request",
            "type": "invalid_request_error",
            "code": status,
            "status": "INVALID_ARGUMENT",
        }
    }


def _route(
    s: StandIn, method: str, path: str, body: Any, raw: bytes, headers: Any, base: str
) -> tuple[int, Any, dict[str, str]]:
    """One request → (status, JSON body, extra headers)."""
    n = next(s.ids)
    # ---- OpenAI
    if method == "POST" and path == "/v1/files":
        name = re.search(rb'name="file"; filename="([^"]+)"', raw)
        filename = name.group(1).decode() if name else "upload.pdf"
        start = raw.find(b"%PDF")
        end = raw.rfind(b"%%EOF")
        file_id = f"file-{n}"
        s.index(file_id, filename, filename, raw[start : end + 5])
        return (
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": end + 5 - start,
                "created_at": 0,
                "filename": filename,
                "purpose": "assistants",
                "status": "processed",
            },
            {},
        )
    if method == "POST" and path == "/v1/vector_stores":
        store = {
            "id": f"vs_{n}",
            "object": "vector_store",
            "created_at": 0,
            "name": body.get("name"),
            "usage_bytes": 0,
            "status": "completed",
            "last_active_at": 0,
            "metadata": {},
            "files": [],
            "file_counts": {"in_progress": 0, "completed": 0, "failed": 0, "cancelled": 0, "total": 0},
        }
        s.stores[store["id"]] = store
        return 200, _public(store), {}
    m = re.fullmatch(r"/v1/vector_stores/([^/]+)", path)
    if method == "GET" and m:
        return 200, _public(s.stores[m.group(1)]), {}
    m = re.fullmatch(r"/v1/vector_stores/([^/]+)/file_batches", path)
    if method == "POST" and m:
        store = s.stores[m.group(1)]
        ids = [f["file_id"] for f in body.get("files", [])] + list(body.get("file_ids", []))
        for f in body.get("files", []):
            s.files[f["file_id"]]["attributes"] = f.get("attributes") or {}
        store["files"].extend(ids)
        batch = {
            "id": f"vsfb_{n}",
            "object": "vector_store.files_batch",
            "created_at": 0,
            "polls": 0,
            "vector_store_id": store["id"],
            "status": "in_progress",
            "total": len(ids),
        }
        s.batches[batch["id"]] = batch
        return 200, _batch(batch), {}
    m = re.fullmatch(r"/v1/vector_stores/([^/]+)/file_batches/([^/]+)", path)
    if method == "GET" and m:
        batch = s.batches[m.group(2)]
        batch["polls"] += 1
        if batch["polls"] >= 2:
            batch["status"] = "completed"
        return 200, _batch(batch), {}
    if method == "POST" and path == "/v1/responses":
        if s.fail_answers:
            return s.fail_answers, _failure(s.fail_answers), {}
        (tool,) = body["tools"]
        question = str(body["input"])
        file_ids = [f for vs in tool["vector_store_ids"] for f in s.stores[vs]["files"]]
        chunks = s.search(question, file_ids)
        text = s.reply(question, chunks)
        results = [
            {
                "file_id": c.file_id,
                "filename": c.filename,
                "score": 1.0,
                "text": c.text,
                "attributes": s.files[c.file_id].get("attributes") or {},
            }
            for c in chunks
        ]
        notes = [
            {"type": "file_citation", "file_id": c.file_id, "filename": c.filename, "index": len(text)}
            for c in chunks[:1]
        ]
        output = [
            {
                "type": "file_search_call",
                "id": f"fs_{n}",
                "status": "completed",
                "queries": [question],
                "results": results if "file_search_call.results" in body.get("include", []) else None,
            },
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": notes}],
            },
        ]
        usage = {
            "input_tokens": 1000 + len(question),
            "output_tokens": 50,
            "total_tokens": 1050 + len(question),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        return (
            200,
            {
                "id": f"resp_{n}",
                "object": "response",
                "created_at": 0,
                "model": body["model"],
                "status": "completed",
                "output": output,
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": body["tools"],
                "usage": usage,
            },
            {},
        )
    # ---- Gemini (any API version: the SDK picks one)
    path = re.sub(r"^/(upload/)?v1(?:beta|alpha)?/(fileSearchStores|models/)", r"/\1G/\2", path)
    if method == "POST" and path == "/G/fileSearchStores":
        name = f"fileSearchStores/store-{n}"
        s.stores[name] = {"name": name, "displayName": (body or {}).get("displayName"), "files": []}
        return 200, {"name": name, "displayName": s.stores[name]["displayName"]}, {}
    m = re.fullmatch(r"/G/(fileSearchStores/[^/:]+)", path)
    if method == "GET" and m:
        store = s.stores[m.group(1)]
        return 200, {"name": store["name"], "displayName": store["displayName"]}, {}
    m = re.fullmatch(r"/upload/G/(fileSearchStores/[^/:]+):uploadToFileSearchStore", path)
    if method == "POST" and m:
        s.stores[m.group(1)]  # noqa: B018 - a KeyError is the 404
        assert headers.get("X-Goog-Upload-Command") == "start", headers
        session = f"session-{n}"
        s.sessions[session] = {"store": m.group(1), "meta": body or {}}
        return 200, {}, {"X-Goog-Upload-URL": f"{base}/upload/sessions/{session}"}
    m = re.fullmatch(r"/upload/sessions/([^/]+)", path)
    if method == "POST" and m:
        session = s.sessions.pop(m.group(1))
        assert "finalize" in (headers.get("X-Goog-Upload-Command") or ""), headers
        meta = session["meta"]
        # Protobuf JSON takes the camelCase and the original field names alike.
        document = next(
            (
                x.get("stringValue", x.get("string_value"))
                for x in meta.get("customMetadata", [])
                if x["key"] == "document"
            ),
            meta.get("displayName"),
        )
        file_id = f"{session['store']}/documents/doc-{n}"
        s.index(file_id, str(meta.get("displayName")), str(document), raw)
        s.stores[session["store"]]["files"].append(file_id)
        op = {"name": f"{session['store']}/upload/operations/op-{n}", "done": False, "document": file_id}
        s.operations[op["name"]] = op
        return 200, {"name": op["name"], "done": False}, {"x-goog-upload-status": "final"}
    m = re.fullmatch(r"/G/(fileSearchStores/[^/]+/upload/operations/[^/]+)", path)
    if method == "GET" and m:
        op = s.operations[m.group(1)]
        done, op["done"] = op["done"], True  # done from the second poll on
        out: dict[str, Any] = {"name": op["name"], "done": done}
        if done:
            out["response"] = {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.UploadToFileSearchStoreResponse",
                "documentName": op["document"],
            }
        return 200, out, {}
    m = re.fullmatch(r"/G/models/([^/:]+):generateContent", path)
    if method == "POST" and m:
        if s.fail_answers:
            return s.fail_answers, _failure(s.fail_answers), {}
        question = " ".join(p.get("text", "") for c in body["contents"] for p in c.get("parts", []))
        searches = [t.get("fileSearch") or t.get("file_search") or {} for t in body.get("tools", [])]
        stores = [n for t in searches for n in t.get("fileSearchStoreNames", t.get("file_search_store_names", []))]
        chunks = s.search(question, [f for st in stores for f in s.stores[st]["files"]])
        text = s.reply(question, chunks)
        grounding = [
            {
                "retrievedContext": {
                    "title": c.filename,
                    "text": c.text,
                    "fileSearchStore": stores[0],
                    "customMetadata": [{"key": "document", "stringValue": c.document}],
                    **({"pageNumber": c.page} if s.gemini_pages else {}),
                }
            }
            for c in chunks
        ]
        supports = [{"segment": {"startIndex": 0, "endIndex": 4, "text": text[:4]}, "groundingChunkIndices": [0]}]
        candidate = {
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP",
            "groundingMetadata": {
                "groundingChunks": grounding,
                "retrievalQueries": [question],
                "groundingSupports": supports if chunks else [],
            },
        }
        return (
            200,
            {
                "candidates": [candidate],
                "modelVersion": m.group(1),
                "usageMetadata": {
                    "promptTokenCount": 900,
                    "candidatesTokenCount": 40,
                    "thoughtsTokenCount": 10,
                    "totalTokenCount": 950,
                },
            },
            {},
        )
    return 404, _not_found(path, f"{method} {path}"), {}


def _public(store: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in store.items() if k != "files"}


def _batch(batch: dict[str, Any]) -> dict[str, Any]:
    done = batch["status"] == "completed"
    counts = {
        "in_progress": 0 if done else batch["total"],
        "completed": batch["total"] if done else 0,
        "failed": 0,
        "cancelled": 0,
        "total": batch["total"],
    }
    return {k: v for k, v in batch.items() if k not in ("polls", "total")} | {"file_counts": counts}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: StandIn
    base: str


def serve(state: StandIn | None = None) -> tuple[StandIn, _Server]:
    """Start the stand-in on a free loopback port (in a daemon thread); ``server.base`` is its URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = state or StandIn()
    server.base = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.state, server
