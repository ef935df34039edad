"""What the Chromium/Playwright tests share: Debian's chromium driven by Playwright (never `playwright install`).

A test module calls :func:`require_browser` at import: it is skipped, with the reason, where gradio, Playwright or
Chromium is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
from typing import Any

import pytest

CHROMIUM = os.environ.get("MADQA_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def require_browser() -> Any:
    """Playwright's ``sync_api`` module, or skip the calling test module."""
    pytest.importorskip("gradio")
    sync_api = pytest.importorskip("playwright.sync_api")
    if not shutil.which(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    return sync_api


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
