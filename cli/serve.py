"""Serving a Gradio app from the command line: the port rule, a busy port and Ctrl+C, for every serving command.

``madqa space``, ``madqa human`` and ``madqa view`` share one behaviour:

* the port is ``--port`` when given, else ``GRADIO_SERVER_PORT``, else the command's default
  (:func:`resolve_port`);
* a port already in use ends with one line naming the port, ``--port`` and ``GRADIO_SERVER_PORT``, exit status 2
  (:func:`check_free` before any slow start-up work, and again when the server binds);
* Ctrl+C closes the server and ends with one line, exit status 130 (:func:`serve`).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any

from madqa.cli.errors import UserError

ENV_PORT = "GRADIO_SERVER_PORT"
#: Exit status of a command stopped by Ctrl+C (128 + SIGINT), as shells report it.
INTERRUPTED = 130

logger = logging.getLogger(__name__)


def port_help(default: int) -> str:
    """The ``--port`` help text of a serving command."""
    return f"port (default: ${ENV_PORT} if set, else {default})"


def add_serve_arguments(parser: Any, default_port: int) -> None:
    """``--port`` (see :func:`resolve_port`) and ``--host`` of a serving command (``space``, ``view``, ``human``)."""
    parser.add_argument("--port", type=int, default=None, help=port_help(default_port))
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")


def resolve_port(flag: int | None, default: int, env: Mapping[str, str] | None = None) -> int:
    """``--port`` > ``GRADIO_SERVER_PORT`` > ``default``.

    Raises:
        UserError: ``GRADIO_SERVER_PORT`` is set but is not a port number.
    """
    if flag is not None:
        return flag
    raw = (os.environ if env is None else env).get(ENV_PORT, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise UserError(f"{ENV_PORT}={raw!r} is not a port number (1-65535)")
    return int(raw)


def busy_message(port: int, host: str) -> str:
    """The one line for a port that is taken."""
    return (
        f"port {port} on {host} is already in use (another server is running there): "
        f"choose another with --port N or {ENV_PORT}=N"
    )


def check_free(host: str, port: int) -> None:
    """Fail fast, before slow start-up work, when ``host:port`` cannot be bound.

    Raises:
        UserError: the port is in use (:func:`busy_message`).
    """
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As uvicorn binds: connections of a server just stopped (TIME_WAIT) do not make the port busy, a
        # listening socket does (Linux refuses that bind with or without SO_REUSEADDR).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            raise UserError(busy_message(port, host)) from None


def serve(launch: Callable[[], Any], *, host: str, port: int, what: str, stop: threading.Event | None = None) -> int:
    """Start a server with ``launch()`` (it must not block: ``prevent_thread_lock=True``), then wait for Ctrl+C.

    Args:
        launch: starts the server and returns the object with ``close()`` (a gradio ``Blocks``).
        host: the interface, for the messages.
        port: the port, for the messages.
        what: what is served, for the ready line (``"the explorer"``).
        stop: set to end the wait without Ctrl+C (tests); by default the wait ends only on Ctrl+C.

    Returns:
        0 when ``stop`` was set, :data:`INTERRUPTED` after Ctrl+C.

    Raises:
        UserError: the port was taken between :func:`check_free` and the bind.
    """
    try:
        server = launch()
    except OSError as exc:
        if "port" in str(exc).lower():
            raise UserError(busy_message(port, host)) from None
        raise
    try:  # the ready line inside: a Ctrl+C right after it is still this one's
        logger.info("serving %s on http://%s:%d/ (Ctrl+C to stop)", what, host, port)
        (stop or threading.Event()).wait()
    except KeyboardInterrupt:
        _close_quietly(server)
        logger.info("stopped %s (Ctrl+C)", what)
        return INTERRUPTED
    _close_quietly(server)
    return 0


def _close_quietly(server: Any) -> None:
    """Close the server; a second Ctrl+C during the close ends it as well (no traceback either way)."""
    try:
        server.close()
    except KeyboardInterrupt:  # pragma: no cover - impatient user
        pass
