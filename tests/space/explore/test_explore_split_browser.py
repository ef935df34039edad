"""Headless Chromium on `madqa view` (issue 44, items 17–19): at 1440×900 the question list (more than 3.5 rows)
and the transcript share the first screen, list left and transcript right, as `inspect view` does; on a phone
(390×844) they stack, the list first; filters apply as they change (there is no Apply button); the page
lightbox has a visible close control; table cells wrap between words, never inside one ("cross_pag/e"); the
summary's figures fill their container; the Compare tab picks its runs A and B. One Chromium and one app for the
module."""

from __future__ import annotations

import re
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


#: Words of the question table's shown cells that wrap inside the word: a line break not after a hyphen or a slash,
#: in a word that would fit its cell's width (a longer token may wrap anywhere).
MID_WORD_BREAKS = """() => {
  const out = [];
  for (const span of document.querySelectorAll('#explore-table .cell-wrap span, #explore-table .header-cell span')) {
    if (span.offsetParent === null || !span.getClientRects().length) continue;
    const room = span.closest('[role=gridcell], .header-cell, td, th').clientWidth;
    for (const node of span.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      const text = node.textContent, words = /\\S+/g;
      let m;
      while ((m = words.exec(text))) {
        const range = document.createRange(), tops = [];
        for (let i = 0; i < m[0].length; i++) {
          range.setStart(node, m.index + i); range.setEnd(node, m.index + i + 1);
          const r = range.getBoundingClientRect(); tops.push(Math.round(r.top));
        }
        range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
        const fits = [...range.getClientRects()].reduce((w, r) => w + r.width, 0) < room;
        for (let i = 1; i < tops.length; i++)
          if (tops[i] > tops[i - 1] && !'-/'.includes(m[0][i - 1]) && fits)
            out.push(m[0].slice(0, i) + '/' + m[0].slice(i));
      }
    }
  }
  return out;
}"""


def pick(page: Any, elem_id: str, name: str) -> None:
    """Choose ``name`` in a gradio Dropdown, then wait until its list has closed (one list open at a time)."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=name, exact=True).click()
    page.keyboard.press("Escape")
    expect(page.get_by_role("option")).to_have_count(0, timeout=T)


def open_view(browser: Any, url: str, runs: dict[str, Any], viewport: dict[str, int]) -> tuple[Any, list[Any]]:
    page, errors = watched_page(browser, viewport)
    page.goto(url, timeout=T)
    first = runs["order"][0]
    expect(page.locator("#explore-detail")).to_contain_text(runs["gold"][first]["question"], timeout=T)
    expect(page.locator(ROWS).filter(visible=True).first).to_be_visible(timeout=T)
    # the link box gets the page's address once the load handler is done (no spinner left in the screenshots)
    expect(page.locator("#explore-link textarea, #explore-link input").first).to_have_value(re.compile("^http"))
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


@pytest.mark.parametrize("width, height", [(1440, 900), (390, 844)])
def test_table_cells_wrap_between_words(url: str, runs, browser, width: int, height: int) -> None:
    page, errors = open_view(browser, url, runs, {"width": width, "height": height})
    wrapped = page.evaluate(
        "() => [...document.querySelectorAll('#explore-table .cell-wrap span')].filter(s => s.getClientRects()"
        ".length > 1 || s.getBoundingClientRect().height > 30).length"
    )
    assert wrapped > 0  # some cells do wrap (outcome and error class, categories), so the check below means something
    assert page.evaluate(MID_WORD_BREAKS) == []
    assert not errors, errors
    page.close()


@pytest.mark.parametrize("width, height", [(1440, 900), (390, 844)])
def test_summary_figures_fill_the_width_and_compare_picks_its_runs(
    url: str, runs, browser, tmp_path: Path, width: int, height: int
) -> None:
    page, errors = open_view(browser, url, runs, {"width": width, "height": height})
    page.get_by_role("tab", name="Summary").click()
    figures = page.locator("#explore-summary img.summary-figure")
    expect(figures.first).to_be_visible(timeout=T)
    room = box(page, "#explore-summary")["width"]
    widths = [figures.nth(i).bounding_box()["width"] for i in range(figures.count())]  # type: ignore[index]
    assert len(widths) >= 4 and all(w >= 0.95 * room for w in widths), (room, widths)
    figures.nth(1).scroll_into_view_if_needed()  # the budget curves in the screenshot
    save_screens(page, f"explore-summary-{width}", tmp_path)
    page.get_by_role("tab", name="Compare runs").click()
    heading = page.locator("#explore-compare h3")
    expect(heading).to_have_text("A = agent-a vs B = agent-b", timeout=T)  # the first two runs by default
    pick(page, "explore-compare-b", "agent-a")  # live: no button
    expect(page.locator("#explore-compare")).to_contain_text("A and B are both agent-a", timeout=T)
    pick(page, "explore-compare-a", "agent-b")
    expect(heading).to_have_text("A = agent-b vs B = agent-a", timeout=T)
    counts = runs["counts"]
    expect(page.locator("#agree-only_a")).to_have_text(str(counts["only_b"]), timeout=T)  # A and B swapped
    assert page.locator("#agree-only_b").inner_text() == str(counts["only_a"])
    save_screens(page, f"explore-compare-{width}", tmp_path)
    assert not errors, errors
    page.close()
