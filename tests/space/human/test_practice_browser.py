"""Headless Chromium against the launched Space's "Solve it yourself" tab: nothing is stored while a visitor
practises; a reload keeps the visitor (their id lives in the browser's local storage) and Start resumes the run;
"Share my run" stores it and shows it on the practice board in percent; another browser is another visitor; one
click on "Download my answers" gets every answer up to the last, a file `madqa evaluate` reads as the dataset's own;
the tab looks as `madqa human` does (its CSS and layout) at 1440×900 and 390×844 (issue 24)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser_support import browser_page, require_browser, save_screens  # noqa: E402
from helpers.launched_space import launched_space  # noqa: E402
from helpers.ports import free_port  # noqa: E402

pytestmark = pytest.mark.browser

sync_api = require_browser()
T = 60_000
WIDE, PHONE = {"width": 1440, "height": 900}, {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def space(layout, tmp_path_factory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("practice_ui")
    with launched_space(layout.root, folder, seed=False, resamples=50) as (address, _):
        yield address, folder / "db.sqlite"


#: The shown cells of the practice board's row holding a text (gradio keeps hidden copies of the table).
ROW_JS = """(text) => { for (const row of document.querySelectorAll("#practice-board [role=row]")) {
  const cells = [...row.querySelectorAll("[role=gridcell]")].map(c => c.innerText.trim());
  if (row.offsetParent && cells.includes(text)) return cells; } return null; }"""


def shared_rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT name, n_answered FROM practice_runs ORDER BY id").fetchall()


def open_tab_and_start(page: Any, url: str) -> None:
    page.goto(url, timeout=T)
    page.get_by_role("tab", name="Solve it yourself").click()
    page.locator("#start").click()
    page.locator("#question").get_by_text("Question").first.wait_for(timeout=T)


def test_practice_tab_resumes_after_reload_and_shares_on_request(space: tuple[str, Path]) -> None:
    url, db = space
    with browser_page() as page:
        open_tab_and_start(page, url)
        page.locator("#question").get_by_text("Question 1 of").wait_for(timeout=T)
        page.locator("#answer textarea").fill("a practice answer")
        page.locator("#submit-answer").click()
        page.locator("#question").get_by_text("Question 2 of").wait_for(timeout=T)
        page.locator("#feedback").get_by_text("Gold answer").wait_for(timeout=T)
        assert shared_rows(db) == []  # practising stores nothing

        page.reload()
        open_tab_and_start(page, url)
        page.locator("#question").get_by_text("Question 2 of").wait_for(timeout=T)  # the same visitor's run

        page.locator("#share-name textarea").fill("Browser Visitor")
        page.locator("#share").click()
        page.locator("#share-msg").get_by_text("Shared as #1").wait_for(timeout=T)
        page.wait_for_function(
            "() => (document.querySelector('#practice-board')?.innerText || '').includes('Browser Visitor')", timeout=T
        )  # the table keeps hidden copies
        cells = page.evaluate(ROW_JS, "Browser Visitor")
        assert cells[5:9] == ["0.0%"] * 4, cells  # the main board's units: percent with %, never 0.00 or 0
        assert shared_rows(db) == [("Browser Visitor", 1)]
        page.locator("#share").click()  # the same run again
        page.locator("#share-msg").get_by_text("already on the practice board").wait_for(timeout=T)
        assert len(shared_rows(db)) == 1

    with browser_page() as other:  # another browser profile: another visitor
        open_tab_and_start(other, url)
        other.locator("#question").get_by_text("Question 1 of").wait_for(timeout=T)


def download(page: Any, path: Path) -> list[dict[str, Any]]:
    """One click on "Download my answers"; the lines of the file the browser got."""
    with page.expect_download(timeout=T) as got:
        page.locator("#download").click()
    got.value.save_as(path)
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_one_click_downloads_every_answer_up_to_the_last(
    space: tuple[str, Path], tmp_path: Path, caplog: Any, capsys: Any
) -> None:
    from madqa.cli import main

    url, _ = space
    with browser_page(WIDE) as page:
        open_tab_and_start(page, url)
        page.locator("#question").get_by_text("Question 1 of").wait_for(timeout=T)
        page.locator("#answer textarea").fill("first answer")
        page.locator("#submit-answer").click()
        page.locator("#question").get_by_text("Question 2 of").wait_for(timeout=T)
        assert [r["answer"] for r in download(page, tmp_path / "one.jsonl")] == [["first answer"]]
        page.locator("#answer textarea").fill("second answer")
        page.locator("#answer textarea").press("Enter")
        page.locator("#question").get_by_text("Question 3 of").wait_for(timeout=T)
        lines = download(page, tmp_path / "two.jsonl")  # at once: the file came with the next question
    assert [r["answer"] for r in lines] == [["first answer"], ["second answer"]]
    assert {r["dataset"]["name"] for r in lines} == {"sample"}  # not the server's folder
    caplog.set_level(logging.WARNING)
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "two.jsonl"), "--split", "dev", "--json", "--resamples", "10"]) == 0
    assert json.loads(capsys.readouterr().out)["n_predicted"] == 2
    assert not [r for r in caplog.records if "another dataset" in r.getMessage()]


#: What the app's CSS and layout decide, read from the browser: the same in `madqa human` and in the Space's tab.
LOOK_JS = """() => {
  const style = (sel, props) => { const e = document.querySelector(sel); if (!e) return null;
    const s = getComputedStyle(e); return Object.fromEntries(props.map(p => [p, s.getPropertyValue(p)])); };
  const box = (sel) => document.querySelector(sel).getBoundingClientRect();
  const main = box("#main-box"), viewer = box("#viewer"), answer = box("#answer textarea"), q = box("#question");
  return {
    question: style("#question", ["background-color", "border-top-color", "border-top-width", "border-radius",
                                  "padding-left"]),
    questionText: style("#question p", ["font-size"]),
    title: style("#viewer-title p", ["font-weight"]),
    caption: style("#results .caption-label", ["white-space", "position", "overflow", "background-color"]),
    thumb: style("#results img", ["object-fit"]),
    page: style("#viewer img", ["object-fit", "cursor"]),
    viewerShare: Math.round(20 * viewer.width / main.width) / 20,
    pageLeftOfAnswer: viewer.right <= answer.left,
    stacked: Math.abs(viewer.left - q.left) < 2 && q.bottom <= viewer.top,
  };
}"""


def look(page: Any) -> dict[str, Any]:
    page.locator("#query textarea").fill("riverton water rates")
    page.locator("#search").click()
    page.locator("#results .caption-label").first.wait_for(timeout=T)
    page.locator("#results img").first.click()
    page.locator("#viewer-title").get_by_text("page 5 of 6").wait_for(timeout=T)
    page.locator("#main-box").scroll_into_view_if_needed()
    return dict(page.evaluate(LOOK_JS))


def test_the_tab_looks_as_madqa_human_does(space: tuple[str, Path], tmp_path: Path) -> None:
    from madqa.space.human.app import launch_human
    from madqa.space.human.corpus import HumanCorpus
    from madqa.space.human.service import HumanService, build_plan

    url, _ = space
    service = HumanService(build_plan("dev", out_dir=tmp_path), HumanCorpus.open(None))
    port = free_port()
    demo = launch_human(service, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    try:
        for name, viewport in (("1440", WIDE), ("390", PHONE)):
            with browser_page(viewport) as page:
                page.goto(f"http://127.0.0.1:{port}/", timeout=T)
                page.locator("#annotator textarea").fill("look")
                page.locator("#start").click()
                page.locator("#question").get_by_text("Question 1 of").wait_for(timeout=T)
                alone = look(page)
                open_tab_and_start(page, url)
                assert page.locator("#madqa-human-css").count() == 1
                embedded = look(page)
                save_screens(page, f"practice-{name}", tmp_path)
            assert alone["question"]["border-top-width"] == "2px"  # the app's own CSS is there at all
            assert embedded == alone, name
            assert embedded["pageLeftOfAnswer"] == (viewport is WIDE)
            assert embedded["stacked"] == (viewport is PHONE)  # on a phone the question comes first
    finally:
        demo.close()
        service.close()
