"""Headless Chromium drives `madqa human` at 1440×900 and 390×844 (issue 24): the page viewer and the answer box
side by side on one screen, Enter / Shift+Enter / ←/→ / `c`, zoom, a `*` query told plainly (no italics) and not
counted, captions visible and whole-page thumbnails, a jump to page 99 named, the next question scrolled into view
after Submit; on a phone the page just opened and the answer box on one screen; screenshots of both widths
(docs/screens/ with MADQA_UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.browser_support import box, browser_page, require_browser, save_screens  # noqa: E402
from helpers.human_app import dev_human_app

pytestmark = pytest.mark.browser

sync_api = require_browser()
expect = sync_api.expect
T = 60_000
WIDE, PHONE = {"width": 1440, "height": 900}, {"width": 390, "height": 844}


def start(page: Any, url: str, annotator: str) -> None:
    page.goto(url, timeout=T)
    page.locator("#annotator textarea").fill(annotator)
    page.locator("#start").click()
    expect(page.locator("#question")).to_contain_text("Question 1 of", timeout=T)


def search(page: Any, query: str) -> None:
    page.locator("#query textarea").fill(query)
    page.locator("#search").click()


def test_side_by_side_keys_zoom_and_plain_messages(layout, tmp_path: Path) -> None:
    with dev_human_app(tmp_path) as (url, service), browser_page(WIDE) as page:
        start(page, url, "keys")
        search(page, "*")
        expect(page.locator("#search-msg")).to_contain_text('the query "*" has no searchable words', timeout=T)
        assert page.locator("#search-msg em").count() == 0  # no asterisk turned into italics
        expect(page.locator("#history")).to_contain_text("1 refused query not counted", timeout=T)
        search(page, "riverton water rates")
        expect(page.locator("#search-msg")).to_contain_text("page(s) for", timeout=T)
        captions = page.locator("#results .caption-label")
        expect(captions.first).to_be_visible(timeout=T)
        texts = captions.all_inner_texts()
        assert len(texts) == len(service.corpus.search("riverton water rates").pages) >= 3
        assert len(set(texts)) == len(texts) and all(t.startswith("p. ") for t in texts)
        for n in range(captions.count()):  # the whole caption is shown, not cut
            assert captions.nth(n).evaluate("e => e.scrollWidth <= e.clientWidth + 1 && e.offsetHeight > 0")
        thumb = page.locator("#results img").first
        assert thumb.evaluate("e => getComputedStyle(e).objectFit") == "contain"
        ratio = thumb.evaluate("e => e.clientHeight / e.clientWidth")
        assert 1.2 < ratio < 1.4  # a letter page's aspect (11/8.5), not a square crop
        thumb.click()
        expect(page.locator("#viewer-title")).to_contain_text("page 5 of 6", timeout=T)
        viewer, answer = box(page, "#viewer"), box(page, "#answer textarea")
        assert viewer["x"] + viewer["width"] <= answer["x"]  # page left, answer right
        assert answer["y"] + answer["height"] <= WIDE["height"] and viewer["y"] < 200  # both on the first screen
        assert box(page, "#question")["x"] > viewer["x"] + viewer["width"] - 1
        save_screens(page, "human-1440", tmp_path)

        page.locator("#viewer-title").click()  # focus out of any text box
        page.keyboard.press("ArrowRight")
        expect(page.locator("#viewer-title")).to_contain_text("page 6 of 6", timeout=T)
        page.keyboard.press("ArrowLeft")
        expect(page.locator("#viewer-title")).to_contain_text("page 5 of 6", timeout=T)
        page.keyboard.press("c")
        expect(page.locator("#citations")).to_contain_text("page 5", timeout=T)
        page.locator("#nav-first").click()
        expect(page.locator("#viewer-title")).to_contain_text("page 1 of 6", timeout=T)
        page.locator("#query textarea").focus()
        page.keyboard.press("ArrowRight")  # in a text box the keys type: no page turn, no citation of page 1
        page.keyboard.press("c")
        page.locator("#viewer-title").click()

        before = page.locator("#viewer img").evaluate("e => e.getBoundingClientRect().width")
        page.locator("#viewer img").click()
        page.wait_for_function("() => document.getElementById('viewer').classList.contains('zoomed')", timeout=T)
        assert page.locator("#viewer img").evaluate("e => e.getBoundingClientRect().width") > 1.5 * before
        page.locator("#viewer img").click()
        page.wait_for_function("() => !document.getElementById('viewer').classList.contains('zoomed')", timeout=T)

        page.locator("#jump input").fill("99")
        page.locator("#nav-jump").click()
        expect(page.locator("#viewer-msg")).to_have_text(
            "page 99 does not exist; this document has 6 pages", timeout=T
        )
        expect(page.locator("#viewer-title")).to_contain_text("page 1 of 6", timeout=T)  # not clamped to 6

        page.locator("#answer textarea").fill("line one")
        page.locator("#answer textarea").press("Shift+Enter")
        page.locator("#answer textarea").press_sequentially("line two")
        assert page.locator("#answer textarea").input_value() == "line one\nline two"
        page.locator("#answer textarea").press("Enter")
        expect(page.locator("#question")).to_contain_text("Question 2 of", timeout=T)
    [line] = [json.loads(x) for x in service.output_for("keys", "Andromeda").read_text().splitlines()]
    assert line["answer"] == ["line one", "line two"] and line["steps"] == 1
    assert [s["query"] for s in line["refused_searches"]] == ["*"]
    assert line["citations"] == [{"document": "riverton_water_annual_report_2019.pdf", "page": 5}]
    assert [v["via"] for v in line["page_views"]] == ["result", "next", "previous", "first"]  # no jump to 99


def test_on_a_phone_the_next_question_is_scrolled_into_view(layout, tmp_path: Path) -> None:
    with dev_human_app(tmp_path) as (url, _), browser_page(PHONE) as page:
        start(page, url, "phone")
        search(page, "riverton water rates")
        expect(page.locator("#results .caption-label").first).to_be_visible(timeout=T)
        page.locator("#results img").first.click()
        expect(page.locator("#viewer-title")).to_contain_text("page 5 of 6", timeout=T)
        assert box(page, "#question")["y"] < box(page, "#viewer")["y"]  # on a phone the question comes first
        # Measure once the page image has arrived and is laid out: on a busy machine it can come after the title
        # (a load run measured it 0 px wide).
        page.wait_for_function(
            "() => { const i = document.querySelector('#viewer img');"
            " return !!i && i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0; }",
            timeout=T,
        )
        # The page just opened is scrolled to the top of the screen, and the answer box is under it, both whole.
        page.wait_for_function(
            "() => { const top = document.getElementById('viewer-title').getBoundingClientRect()"
            ".top; return top >= 0 && top < 120; }",
            timeout=T,
        )
        image, answer = box(page, "#viewer img"), box(page, "#answer textarea")
        assert image["y"] >= 0 and image["y"] + image["height"] <= answer["y"], (image, answer)
        assert answer["y"] + answer["height"] <= PHONE["height"], (image, answer)
        assert image["width"] >= 0.8 * PHONE["width"]  # the page at the screen's width, not a stamp
        save_screens(page, "human-390-page", tmp_path)
        page.evaluate("window.scrollTo(0, 0)")
        save_screens(page, "human-390", tmp_path)
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # down at the page viewer
        page.wait_for_function(
            "() => document.getElementById('question').getBoundingClientRect().bottom < 0", timeout=T
        )
        page.locator("#give-up").dispatch_event("click")  # a click that does not scroll by itself
        expect(page.locator("#question")).to_contain_text("Question 2 of", timeout=T)
        page.wait_for_function(
            "() => { const r = document.getElementById('question').getBoundingClientRect();"
            " return r.top >= -1 && r.top < window.innerHeight / 2; }",
            timeout=T,
        )
