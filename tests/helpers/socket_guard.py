"""A socket guard for offline tests: every connection to a host other than loopback is refused and recorded.

In the test's own process (a fixture patches ``socket`` with :func:`guarded_socket_calls`) or in a child process
that a test starts with ``tests/`` on its path (:func:`install_logging_to` writes each attempt to a JSONL file at
once, so a child stopped by a signal still leaves its record).
"""

from __future__ import annotations

import json
import socket
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Hosts that stay reachable (``None`` and ``""`` are a server's own address when it binds).
LOOPBACK = ("localhost", "127.0.0.1", "::1", None, "")

#: Called with the host and the address of each recorded attempt.
Recorder = Callable[[str, Any], None]


def guarded_socket_calls(record: Recorder, *, record_loopback: bool = False) -> tuple[Callable, Callable]:
    """Replacements for ``socket.getaddrinfo`` and ``socket.socket.connect`` that refuse other hosts.

    With ``record_loopback``, loopback connections are recorded too (they still go through), to prove that a
    command tried a local stand-in server.
    """
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in LOOPBACK:
            record(str(host), host)
            raise socket.gaierror(-2, "name resolution blocked by the test's socket guard")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6):
            if record_loopback or host not in LOOPBACK:
                record(str(host), address)
            if host not in LOOPBACK:
                raise OSError(101, "network unreachable (blocked by the test's socket guard)")
        return real_connect(self, address)

    return getaddrinfo, connect


def install_logging_to(log: str | Path, *, record_loopback: bool = False) -> None:
    """Guard this (child) process; each attempt is a JSON line ``{"host", "address", "stack"}`` in ``log``."""

    def record(host: str, address: Any) -> None:
        stack = "".join(traceback.format_stack(limit=30)[:-2])
        with open(log, "a", encoding="utf-8") as out:  # at once: a served app is stopped by a signal
            out.write(json.dumps({"host": host, "address": str(address), "stack": stack}) + "\n")

    socket.getaddrinfo, socket.socket.connect = guarded_socket_calls(record, record_loopback=record_loopback)


def recorded_attempts(log: str | Path) -> list[dict[str, str]]:
    """The attempts that :func:`install_logging_to` wrote to ``log`` (none if it was never written)."""
    path = Path(log)
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []
