"""What the Chromium/Playwright tests share: Debian's chromium driven by Playwright (never `playwright install`).

A test module calls :func:`require_browser` at import: it is skipped, with the reason, where gradio, Playwright or
Chromium is missing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import ROOT

CHROMIUM = os.environ.get("MADQA_CHROMIUM", "/usr/bin/chromium")
#: How long a Playwright ``expect`` waits for its condition (ms) unless the test says otherwise.
EXPECT_TIMEOUT_MS = 30_000
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def require_browser() -> Any:
    """Playwright's ``sync_api`` module, or skip the calling test module."""
    pytest.importorskip("gradio")
    sync_api = pytest.importorskip("playwright.sync_api")
    if not shutil.which(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    # Playwright's expect() gives up after 5 s by default: a single bound inside a library that a loaded machine
    # can miss (issue 39). Its waits return as soon as their condition holds, so a generous bound costs nothing.
    sync_api.expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    return sync_api


@contextmanager
def chromium() -> Iterator[Any]:
    """A fresh headless Chromium, closed after the block (a module fixture can share one across its tests). Call
    :func:`require_browser` first (at import)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def watched_page(browser: Any, viewport: dict[str, int] | None = None) -> tuple[Any, list[Any]]:
    """A new page of ``browser`` (default viewport 1400×1000) and the list its uncaught script errors go to (a test
    asserts it is empty)."""
    page = browser.new_page(viewport=viewport or {"width": 1400, "height": 1000})
    errors: list[Any] = []
    page.on("pageerror", lambda exc: errors.append(exc))
    return page, errors


@contextmanager
def browser_page(viewport: dict[str, int] | None = None) -> Iterator[Any]:
    """A page of a fresh headless Chromium (default viewport 1400×1000); the test fails on any uncaught error of
    the page's scripts. Call :func:`require_browser` first (at import)."""
    with chromium() as browser:
        page, errors = watched_page(browser, viewport)
        yield page
        assert not errors, errors


#: Where the README's screenshots live; re-taken there only when asked (``MADQA_UPDATE_SCREENSHOTS=1``), so that a
#: plain test run leaves the tracked files as they are.
SCREENS = ROOT / "docs" / "screens"


def save_screens(page: Any, name: str, tmp_dir: Path | None = None) -> list[Path]:
    """Screenshot the page's viewport (JPEG, quality 70) as ``<name>.jpg``.

    It always goes to ``tmp_dir`` (the test's ``tmp_path``; a fresh temporary folder when ``None``), and also to
    ``docs/screens/`` when ``MADQA_UPDATE_SCREENSHOTS=1``. Put the viewport width in ``name`` (``board-1440``).
    Returns the files written.
    """
    folders = [tmp_dir if tmp_dir is not None else Path(tempfile.mkdtemp(prefix="screens-"))]
    if os.environ.get("MADQA_UPDATE_SCREENSHOTS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        folders.append(SCREENS)
    shots = []
    for folder in folders:
        shot = folder / f"{name}.jpg"
        page.screenshot(path=str(shot), type="jpeg", quality=70, scale="css", full_page=False)
        shots.append(shot)
    return shots


def box(page: Any, selector: str) -> dict[str, float]:
    """The bounding box (x, y, width, height) of the first element ``selector`` matches; it must be laid out."""
    found = page.locator(selector).first.bounding_box()
    assert found is not None, selector
    return dict(found)
