"""Headless Chromium on `madqa view` (issue 44, items 17–18): at 1440×900 the question list (more than 3.5 rows)
and the transcript share the first screen, list left and transcript right, as `inspect view` does; on a phone
(390×844) they stack, the list first; filters apply as they change (there is no Apply button); the page
lightbox has a visible close control. One Chromium and one app for the module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser_support import box, chromium, require_browser, save_screens, watched_page  # noqa: E402

sync_api = require_browser()

import helpers.explore_runs as explore_runs  # noqa: E402

pytestmark = pytest.mark.browser
expect = sync_api.expect
T = 60_000
#: The question table's data rows (gradio 6's grid: rows with cells, not its header row).
ROWS = "#explore-table [role=row]:has([role=gridcell])"


#: The shared fixtures, made visible to pytest in this module: ``runs`` (A and B) and ``url`` (the view app's).
runs_fixture = explore_runs.derived_runs_fixture
url_fixture = explore_runs.view_app_url_fixture


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def rows_on_screen(page: Any, height: int) -> int:
    """Data rows of the question table wholly inside the table's scroll box and the viewport."""
    return page.evaluate(
        """(h) => { const t = document.querySelector('#explore-table'); const b = t.getBoundingClientRect();
        const rows = [...t.querySelectorAll('[role=row]:has([role=gridcell])')];
        return rows.filter(r => { const x = r.getBoundingClientRect();
        return x.height > 0 && x.top >= Math.max(b.top, 0) && x.bottom <= Math.min(b.bottom, h) + 1; }).length; }""",
        height,
    )


def open_view(browser: Any, url: str, runs: dict[str, Any], viewport: dict[str, int]) -> tuple[Any, list[Any]]:
    page, errors = watched_page(browser, viewport)
    page.goto(url, timeout=T)
    first = runs["order"][0]
    expect(page.locator("#explore-detail")).to_contain_text(runs["gold"][first]["question"], timeout=T)
    expect(page.locator(ROWS).filter(visible=True).first).to_be_visible(timeout=T)
    return page, errors


def test_desktop_list_left_transcript_right_and_live_filters(url: str, runs, browser, tmp_path: Path) -> None:
    page, errors = open_view(browser, url, runs, {"width": 1440, "height": 900})
    save_screens(page, "explore-split-1440", tmp_path)
    table, column = box(page, "#explore-table"), box(page, "#explore-detail .run-column")
    assert table["x"] + table["width"] <= column["x"], (table, column)  # list left, transcript right
    assert column["y"] <= 900 - 250, column  # at least 250 px of the transcript on the first screen
    assert rows_on_screen(page, 900) >= 4, rows_on_screen(page, 900)
    page.locator("#explore-detail img.thumb").first.click()  # the lightbox, closed by its visible control
    close = page.locator("#explore-zoom-close")
    expect(close).to_be_visible(timeout=T)
    close.click()
    expect(page.locator("#explore-zoom")).to_be_hidden(timeout=T)
    assert page.locator("#explore-apply").count() == 0
    total = len(runs["order"])
    qid = runs["order"][1]
    page.locator("#explore-text textarea, #explore-text input").first.fill(qid)  # no click, no Enter
    expect(page.locator("#explore-count")).to_contain_text(f"1 of {total} questions", timeout=T)
    expect(page.locator(ROWS).filter(visible=True)).to_have_count(1, timeout=T)
    assert not errors, errors
    page.close()


def test_phone_list_then_transcript(url: str, runs, browser, tmp_path: Path) -> None:
    page, errors = open_view(browser, url, runs, {"width": 390, "height": 844})
    table, column = box(page, "#explore-table"), box(page, "#explore-detail .run-column")
    assert table["y"] + table["height"] <= column["y"], (table, column)
    assert not errors, errors
    page.close()
