"""A Hub out of reach without relying on this machine's network: ``HF_ENDPOINT`` at a loopback port that is bound
but never listens, so the Hub client's connections are refused at once (and it retries as it would offline)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Each of these makes a Hub client give up before it connects; a child that must really try has none of them.
OFFLINE_FLAGS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE")


@contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port that is bound but not listening: a connection to it is refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def refused_hub_env(tmp_path: Path, port: int, python_path: list[Path], **extra: str) -> dict[str, str]:
    """A child's environment: no offline flag and no ``MADQA_DATASET``, a fresh MADQA_HOME and HF_HOME under
    ``tmp_path``, the Hub at ``port``, ``python_path`` first on ``PYTHONPATH``, and ``extra`` set."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_FLAGS and k != "MADQA_DATASET"}
    env.update(
        MADQA_HOME=str(tmp_path / "home"),
        HF_HOME=str(tmp_path / "hf"),
        HF_ENDPOINT=f"http://127.0.0.1:{port}",
        PYTHONPATH=os.pathsep.join([*map(str, python_path), env.get("PYTHONPATH", "")]),
        **extra,
    )
    return env
