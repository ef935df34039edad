"""Headless Chromium (Debian `chromium` via Playwright; never `playwright install`) against `madqa view`'s app and
its static export, on a scripted-model run of the dev split (see ``test_explore``).

Set ``MADQA_EXPLORE_SCREENSHOT=docs/explore.png`` to save the explorer's screenshot (the README's). The layout
test runs at a phone's width (390 x 844) and a laptop's (1440 x 900) and saves both screens (``save_screens``)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.browser_support import ARGS, CHROMIUM, browser_page, require_browser, save_screens  # noqa: E402

sync_api = require_browser()

import helpers.explore_runs as explore_runs  # noqa: E402
from helpers.explore_runs import QUERY  # noqa: E402

pytestmark = pytest.mark.browser


#: The shared fixtures, made visible to pytest in this module: ``runs`` (A and B) and ``url`` (the view app's).
runs_fixture = explore_runs.derived_runs_fixture
url_fixture = explore_runs.view_app_url_fixture


def choose(page: Any, elem_id: str, option: str) -> None:
    """Pick ``option`` in a gradio Dropdown."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def test_filter_open_and_compare_in_the_browser(url: str, runs, tmp_path: Path) -> None:
    expected = runs["retrieval_a"]
    first = runs["gold"][expected[0]]
    with browser_page({"width": 1400, "height": 1100}) as page:
        page.goto(url, timeout=60_000)
        page.locator("#explore-count").get_by_text(f"{len(runs['order'])} of {len(runs['order'])}").wait_for(
            timeout=60_000
        )
        choose(page, "explore-outcome", "incorrect")
        choose(page, "explore-error", "retrieval")
        count = page.locator("#explore-count")
        count.get_by_text(f"{len(expected)} of {len(runs['order'])} questions").wait_for(timeout=30_000)
        detail = page.locator("#explore-detail")
        detail.get_by_text(f"{first['id']}: {first['question']}").wait_for(timeout=30_000)
        text = detail.inner_text()
        assert QUERY in text  # the query of the step
        shown = [line for line in text.splitlines() if " p. " in line]
        assert shown, text  # the result pages (labels under thumbnails)
        assert "retrieval" in text and "incorrect" in text
        assert "; ".join(first["answer_variants"][0]) in text  # the gold answer
        assert all(e["document"] in text for e in first["evidence"])  # the gold evidence pages
        assert detail.locator(".run-column").count() == 2  # runs side by side
        assert detail.locator("img").count() >= 1  # thumbnails rendered from the sample's PDFs
        page.get_by_role("tab", name="Compare runs").click()
        panel = page.locator("#explore-compare")
        panel.wait_for(timeout=10_000)
        got = {k: int(page.locator(f"#agree-{k}").inner_text()) for k in ("both", "only_a", "only_b", "neither")}
        assert got == {k: v for k, v in runs["counts"].items() if k != "unscored"}
        page.get_by_role("tab", name="Summary").click()
        page.locator("#explore-summary img").first.wait_for(timeout=10_000)
        page.get_by_role("tab", name="Questions").click()
        shot = os.environ.get("MADQA_EXPLORE_SCREENSHOT")
        if shot:  # the README's picture: filters, table and the top of the trajectories
            page.set_viewport_size({"width": 1300, "height": 1500})
            page.wait_for_timeout(500)
            page.screenshot(path=shot, full_page=False)
            assert Path(shot).stat().st_size < 300_000


def test_export_opens_offline_with_the_numbers_of_evaluate(runs, tmp_path: Path, capsys) -> None:
    from madqa.cli import main

    out = tmp_path / "report.html"
    paths = [str(p) for p in runs["paths"].values()]
    assert main(["view", *paths, "--split", "dev", "--output", str(out)]) == 0
    capsys.readouterr()
    assert main(["evaluate", paths[0], "--split", "dev", "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)
    requests: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            context = browser.new_context(offline=True)
            page = context.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.goto(out.as_uri(), timeout=30_000)
            cells = page.locator("td[data-run='agent-a']")
            values = {c.get_attribute("data-key"): c.get_attribute("data-value") for c in cells.all()}
            shown = {c.get_attribute("data-key"): c.inner_text() for c in cells.all()}
            images = page.locator("#explore-summary img")
            loaded = [
                images.nth(i).evaluate("img => img.complete && img.naturalWidth > 0") for i in range(images.count())
            ]
            assert page.locator("#agree-both").inner_text() == str(runs["counts"]["both"])
        finally:
            browser.close()
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    assert len(loaded) >= 4 and all(loaded)
    for key in ("accuracy", "page_f1", "doc_f1", "anls"):
        assert float(values[key]) == expected[key], key
    assert [float(v) for v in values["accuracy_ci"].split(",")] == expected["accuracy_ci"]
    assert shown["accuracy"] == f"{100 * expected['accuracy']:.1f}%"
    if expected["kuiper_applicable"]:
        assert float(values["kuiper"]) == expected["kuiper"]
        assert [float(v) for v in values["kuiper_ci"].split(",")] == expected["kuiper_ci"]
        assert shown["kuiper"] == f"{expected['kuiper']:.3f}"
    else:  # the scripted run's steps do not vary: no value, and the page says why (as evaluate does)
        assert expected["kuiper"] is None and values["kuiper"] == "" and "n/a" in shown["kuiper"], shown["kuiper"]


@pytest.mark.parametrize("width, height", [(390, 844), (1440, 900)])
def test_deep_link_outcomes_on_screen_and_page_zoom(url: str, runs, tmp_path: Path, width: int, height: int) -> None:
    """``?q=ID&runs=agent-b`` opens that question in that run; the ✓/✗ columns are within the first screen's width;
    a click on a thumbnail opens the page large; the link box follows the selection."""
    expect = sync_api.expect
    qid, other = runs["order"][2], runs["order"][0]
    with browser_page({"width": width, "height": height}) as page:
        page.goto(f"{url}?q={qid}&runs=agent-b", timeout=60_000)
        detail = page.locator("#explore-detail")
        detail.get_by_text(f"{qid}: {runs['gold'][qid]['question']}").wait_for(timeout=60_000)
        expect(detail.locator(".run-column")).to_have_count(1, timeout=30_000)
        assert detail.locator(".run-column").get_attribute("data-run") == "agent-b"
        assert "max steps T" in detail.locator(".run-config").inner_text()
        link = page.locator("#explore-link textarea, #explore-link input").first
        expect(link).to_have_value(re.compile(rf"^http://127\.0\.0\.1:\d+/\?q={qid}&runs=agent-b$"), timeout=30_000)
        table = page.locator("#explore-table")
        for name in ("agent-a", "agent-b"):
            head = table.get_by_text(name, exact=True).filter(visible=True).first.bounding_box()
            assert head is not None and 0 <= head["x"] and head["x"] + head["width"] <= width, (name, head)
        mark = table.get_by_text(re.compile("^[✓✗]")).filter(visible=True).first.bounding_box()
        assert mark is not None and mark["x"] + mark["width"] <= width, mark
        table.scroll_into_view_if_needed()
        save_screens(page, f"explore-{width}", tmp_path)
        thumb = detail.locator("img.thumb").first
        thumb.scroll_into_view_if_needed()
        small = thumb.evaluate("img => img.naturalWidth")
        thumb.click()
        big = page.locator("#explore-zoom-img")
        expect(big).to_have_attribute("data-large", "1", timeout=30_000)
        assert big.evaluate("img => img.naturalWidth") > 3 * small
        assert big.bounding_box()["width"] > min(width - 40, 900)  # type: ignore[index]
        save_screens(page, f"explore-zoom-{width}", tmp_path)
        page.keyboard.press("Escape")
        expect(page.locator("#explore-zoom")).to_be_hidden()
        # gradio's cell holds a hidden copy of its text before the shown one: click the shown one
        table.get_by_text(other, exact=True).filter(visible=True).first.click()
        expect(link).to_have_value(re.compile(rf"\?q={other}&runs=agent-b$"), timeout=30_000)
        assert f"q={other}" in page.url  # the address bar holds the selection too


def test_export_header_filter_and_sort_offline(runs, tmp_path: Path) -> None:
    from madqa.cli import main

    expect = sync_api.expect
    out = tmp_path / "report.html"
    assert main(["view", *[str(p) for p in runs["paths"].values()], "--split", "dev", "--output", str(out)]) == 0
    order, first = runs["order"], runs["gold"][runs["order"][1]]
    errors: list[Any] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_context(offline=True, viewport={"width": 390, "height": 844}).new_page()
            page.on("pageerror", lambda exc: errors.append(exc))
            page.goto(out.as_uri(), timeout=30_000)
            assert page.locator("#report-dataset").inner_text().startswith("sample")
            rows = page.locator("table.questions tbody tr")
            expect(page.locator("#q-count")).to_have_text(f"{len(order)} of {len(order)} questions shown")
            page.locator("#q-filter").fill(first["question"][:40].upper())
            expect(page.locator("table.questions tbody tr:visible")).to_have_count(1)
            assert page.locator("table.questions tbody tr:visible").get_attribute("data-id") == first["id"]
            assert page.locator(f"details[id='q-{order[0]}']").is_hidden()  # its trajectory is filtered too
            expect(page.locator("#q-count")).to_have_text(f"1 of {len(order)} questions shown")
            page.locator("#q-filter").fill("")
            header = page.locator("table.questions th", has_text=re.compile("^id"))
            header.click()
            assert [r.get_attribute("data-id") for r in rows.all()] == sorted(order)
            header.click()
            assert [r.get_attribute("data-id") for r in rows.all()] == sorted(order, reverse=True)
            page.locator("table.questions th", has_text=re.compile("^agent-a")).click()
            marks = [r.locator("td").nth(1).inner_text()[0] for r in rows.all()]
            assert marks == sorted(marks) and len(set(marks)) == 2  # ✓ and ✗ grouped
            save_screens(page, "explore-export-390", tmp_path)
        finally:
            browser.close()
    assert not errors, errors
