"""Headless Chromium against the launched Space's "Solve it yourself" tab: nothing is stored while a visitor
practises; a reload keeps the visitor (their id lives in the browser's local storage) and Start resumes the run;
"Share my run" stores it and shows it on the practice board; another browser is another visitor."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import ARGS, CHROMIUM, free_port, require_browser  # noqa: E402

sync_api = require_browser()
T = 60_000


@pytest.fixture(scope="module")
def space(layout, tmp_path_factory) -> Iterator[tuple[str, Path]]:
    from madqa.space.app import launch
    from madqa.space.config import SpaceConfig
    from madqa.space.services import create_services

    folder = tmp_path_factory.mktemp("practice_ui")
    db = folder / "db.sqlite"
    config = SpaceConfig.from_env({"MADQA_HOME": str(layout.root), "MADQA_SPACE_DB": str(db),
                                   "MADQA_SPACE_RESAMPLES": "50"})  # fmt: skip
    port = free_port()
    demo = launch(create_services(config, seed=False), port=port, host="127.0.0.1", prevent_thread_lock=True,
                  quiet=True)  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}/", db
    finally:
        demo.close()


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
    errors: list[Any] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("pageerror", lambda exc: errors.append(exc))
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
            page.wait_for_function("() => (document.querySelector('#practice-board')?.innerText || '')"
                                   ".includes('Browser Visitor')", timeout=T)  # the table keeps hidden copies
            assert shared_rows(db) == [("Browser Visitor", 1)]
            page.locator("#share").click()  # the same run again
            page.locator("#share-msg").get_by_text("already on the practice board").wait_for(timeout=T)
            assert len(shared_rows(db)) == 1

            other = browser.new_context().new_page()  # another browser profile: another visitor
            open_tab_and_start(other, url)
            other.locator("#question").get_by_text("Question 1 of").wait_for(timeout=T)
        finally:
            browser.close()
    assert not errors, errors
