"""A tiny OpenAI-compatible chat server for streamed-call tests: SSE chunks (text or tool-call deltas), the same
reply non-streamed, and a record of when a client hung up on a stream.

:attr:`StreamStandIn.pieces` is the reply: strings are content pieces, ``(index, name, arguments_piece)`` tuples are
tool-call deltas. Each streamed piece is one chunk, sent :attr:`StreamStandIn.gap_s` apart; the reply ignores the
request's ``max_tokens`` (as llama-cpp-python's tool-choice "auto" text replies do).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Piece = str | tuple[int, str, str]


@dataclass
class StreamStandIn:
    """The reply, the pace, and what happened (requests, chunks sent, disconnects)."""

    pieces: list[Piece] = field(default_factory=lambda: ["Hello", ", ", "world", "."])
    gap_s: float = 0.0
    send_usage: bool = True
    finish: bool = True  # False: the stream ends without its finish chunk (as an interrupted llama-cpp-python one)
    prompt_tokens: int = 7
    requests: list[dict[str, Any]] = field(default_factory=list)
    sent_chunks: list[int] = field(default_factory=list)
    disconnected: list[float] = field(default_factory=list)  # monotonic times a stream's client went away
    lock: threading.Lock = field(default_factory=threading.Lock)

    def finish_reason(self) -> str:
        return "tool_calls" if any(isinstance(p, tuple) for p in self.pieces) else "stop"

    def completion(self) -> dict[str, Any]:
        """The non-streamed reply."""
        calls: dict[int, dict[str, Any]] = {}
        for piece in self.pieces:
            if isinstance(piece, tuple):
                index, name, args = piece
                call = calls.setdefault(
                    index, {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": ""}}
                )
                call["function"]["arguments"] += args
        text = "".join(p for p in self.pieces if isinstance(p, str))
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "standin",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": self.finish_reason(),
                    "message": {
                        "role": "assistant",
                        "content": text if text or not calls else None,
                        "tool_calls": [calls[i] for i in sorted(calls)] or None,
                    },
                }
            ],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": len(self.pieces),
                "total_tokens": self.prompt_tokens + len(self.pieces),
            },
        }

    def chunks(self) -> list[dict[str, Any]]:
        """The streamed reply: a role chunk, one chunk per piece, a finish chunk, and a usage chunk if sent."""
        head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "standin"}
        out = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
        named: set[int] = set()
        for piece in self.pieces:
            if isinstance(piece, tuple):
                index, name, args = piece
                call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
                if index not in named:
                    named.add(index)
                    call.update(id=f"call_{index}", type="function")
                    call["function"]["name"] = name
                delta: dict[str, Any] = {"tool_calls": [call]}
            else:
                delta = {"content": piece}
            out.append({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        if self.finish:
            out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": self.finish_reason()}]})
        if self.send_usage:
            out.append({**head, "choices": [], "usage": self.completion()["usage"]})
        return out


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        state = self.server.state
        with state.lock:
            state.requests.append(body)
        if not body.get("stream"):
            data = json.dumps(state.completion()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        sent = 0
        try:
            for chunk in state.chunks():
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                sent += 1
                time.sleep(state.gap_s)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            with state.lock:
                state.disconnected.append(time.monotonic())
        finally:
            with state.lock:
                state.sent_chunks.append(sent)
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: StreamStandIn


def serve(state: StreamStandIn) -> tuple[_Server, str]:
    """Start the stand-in on a loopback port; returns the server (``shutdown()`` it) and its ``/v1`` base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = state
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"
