"""Headless Chromium on `madqa human` at 1440×900 and 390×844 (issue 44, items 20–22): the start page carries the
annotator's protocol (the paper's C.2); the page controls stay disabled until a document is open; after a search
at 1440×900 Submit is on the first screen and citing keeps the question in view; on a phone "Add as citation"
comes after the page viewer and before Submit; nothing untranslated (gradio's ``common.complete``) is put in a
live region read by screen readers. One Chromium and one app for the module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser_support import box, chromium, require_browser, save_screens, watched_page  # noqa: E402
from helpers.human_app import dev_human_app

pytestmark = pytest.mark.browser

sync_api = require_browser()
expect = sync_api.expect
T = 60_000
WIDE, PHONE = {"width": 1440, "height": 900}, {"width": 390, "height": 844}

#: Records every text that a live region (role=status / aria-live) holds, a tick after each change: what a
#: screen reader would read.
RECORD_LIVE_JS = """
window.__live = [];
new MutationObserver(() => setTimeout(() => {
  for (const e of document.querySelectorAll('[aria-live], [role=status]')) {
    const t = (e.textContent || '').trim(); if (t) window.__live.push(t);
  }
}, 0)).observe(document, {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture(scope="module")
def app(layout, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    with dev_human_app(tmp_path_factory.mktemp("human")) as served:
        yield served


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def open_start_page(browser: Any, url: str, viewport: dict[str, int]) -> tuple[Any, list[Any]]:
    page, errors = watched_page(browser, viewport)
    page.add_init_script(RECORD_LIVE_JS)
    page.goto(url, timeout=T)
    instructions = page.locator("#start-instructions")
    expect(instructions).to_contain_text("Before you start", timeout=T)
    for step in ("Read the question", "Search", "Browse the documents", "Add as citation", "own line"):
        expect(instructions).to_contain_text(step)
    assert box(page, "#start-instructions")["y"] < viewport["height"]  # begins on the first screen
    return page, errors


def start(page: Any, annotator: str) -> None:
    page.locator("#annotator textarea").fill(annotator)
    page.locator("#start").click()
    expect(page.locator("#question")).to_contain_text("Question 1 of", timeout=T)


#: A query with many results (two rows of thumbnails and more): the tallest the results get.
BROAD = "water OR report OR city OR county OR rate* OR total"


def open_first_result(page: Any, query: str = BROAD) -> None:
    page.locator("#query textarea").fill(query)
    page.locator("#search").click()
    expect(page.locator("#results .caption-label").first).to_be_visible(timeout=T)
    page.locator("#results img").first.click()
    expect(page.locator("#viewer-title")).to_contain_text(" of ", timeout=T)


def controls_usable(page: Any) -> list[bool]:
    buttons = [page.locator(f"#nav-{k}") for k in ("first", "previous", "next", "last", "jump")]
    buttons += [page.locator("#cite"), page.locator("#uncite"), page.locator("#jump input")]
    return [b.first.is_enabled() for b in buttons]


def test_desktop_instructions_closed_viewer_submit_in_view(app, browser, tmp_path: Path) -> None:
    url, _ = app
    page, errors = open_start_page(browser, url, WIDE)
    save_screens(page, "human-start-1440", tmp_path)
    start(page, "desk44")
    assert not any(controls_usable(page)), controls_usable(page)  # no document open yet
    open_first_result(page)
    expect(page.locator("#nav-next")).to_be_enabled(timeout=T)
    assert all(controls_usable(page)), controls_usable(page)
    submit = box(page, "#submit-answer")
    assert 0 <= submit["y"] and submit["y"] + submit["height"] <= WIDE["height"], submit  # on the first screen
    page.locator("#cite").click()
    expect(page.locator("#citations")).to_contain_text("page ", timeout=T)
    question = box(page, "#question")
    assert question["y"] >= 0 and question["y"] + question["height"] <= WIDE["height"], question
    submit = box(page, "#submit-answer")
    assert submit["y"] + submit["height"] <= WIDE["height"], submit
    save_screens(page, "human-1440", tmp_path)
    page.locator("#answer textarea").fill("12")
    page.locator("#submit-answer").click()
    expect(page.locator("#question")).to_contain_text("Question 2 of", timeout=T)
    assert not any(controls_usable(page))  # the next question starts with no document open
    # gradio's live region speaks at most once per 5 s (a later message waits its turn): wait that long
    page.wait_for_timeout(6000)
    live = page.evaluate("window.__live")
    assert not [t for t in live if "common." in t], live
    assert not errors, errors
    page.close()


def test_phone_instructions_and_cite_before_submit(app, browser, tmp_path: Path) -> None:
    url, _ = app
    page, errors = open_start_page(browser, url, PHONE)
    save_screens(page, "human-start-390", tmp_path)
    start(page, "phone44")
    open_first_result(page)
    viewer, cite, submit = box(page, "#viewer"), box(page, "#cite"), box(page, "#submit-answer")
    assert viewer["y"] + viewer["height"] <= cite["y"] < submit["y"], (viewer, cite, submit)
    assert not errors, errors
    page.close()
