"""A submission's traces link in headless Chromium (issue 42): the board's Traces column (from the column chooser)
and the row detail show the link as the browser renders it: the URL, a new tab, no opener or referrer (and, in the
table, nofollow: the detail's Markdown sanitizer drops it); a row without traces shows no link."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.browser_support import chromium, require_browser, watched_page  # noqa: E402
from helpers.ports import free_port  # noqa: E402
from helpers.space_fixtures import gold, results  # noqa: E402
from helpers.submission_form import submission_form

pytestmark = pytest.mark.browser

sync_api = require_browser()
URL = "https://huggingface.co/datasets/me/madqa_traces"


def test_the_board_and_the_detail_link_the_traces(layout, tmp_path: Path) -> None:
    from madqa.space.app import launch
    from madqa.space.config import SpaceConfig
    from madqa.space.services import create_services

    config = SpaceConfig.from_env(
        {"MADQA_HOME": str(layout.root), "MADQA_SPACE_DB": str(tmp_path / "db.sqlite"), "MADQA_SPACE_RESAMPLES": "10"}
    )
    services = create_services(config, seed=False)
    rows = gold(layout)
    for n, (system, traces) in enumerate((("with traces", URL), ("without traces", ""))):
        path = tmp_path / f"r{n}.jsonl"
        path.write_text(results(rows, 2 + n), encoding="utf-8")
        services.scorer.submit(path, submission_form(system=system, submitter="t", traces=traces))
    port = free_port()
    demo = launch(services, port=port, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    try:
        with chromium() as browser:
            page, errors = watched_page(browser, {"width": 1440, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/", timeout=60_000)
            page.locator("#leaderboard").get_by_text("with traces").first.wait_for(timeout=60_000)
            page.locator("#board-columns-box").get_by_text("Columns").first.click()
            page.locator("#board-columns").get_by_label("Traces", exact=True).check()
            links = page.locator(f'#leaderboard a[href="{URL}"]')
            links.first.wait_for(state="attached", timeout=30_000)
            page.wait_for_timeout(500)
            shown = [links.nth(i) for i in range(links.count()) if links.nth(i).is_visible()]
            assert shown, [links.nth(i).evaluate("(a) => a.parentElement.outerHTML") for i in range(links.count())]
            for link in shown:
                assert link.inner_text() == "traces" and link.get_attribute("target") == "_blank"
                assert set((link.get_attribute("rel") or "").split()) == {"nofollow", "noopener", "noreferrer"}
            hrefs = page.locator("#leaderboard a").evaluate_all("(links) => links.map((a) => a.href)")
            assert set(hrefs) == {URL}  # the row without traces has no link
            page.locator("#leaderboard").get_by_text("with traces").first.click()
            detail = page.locator(f'#board-detail a[href="{URL}"]')
            detail.first.wait_for(timeout=30_000)
            assert detail.first.inner_text() == "dataset me/madqa_traces"
            assert detail.first.get_attribute("target") == "_blank"
            # gradio's Markdown sanitizer rewrites an external link's rel to "noopener noreferrer" (no nofollow)
            assert {"noopener", "noreferrer"} <= set((detail.first.get_attribute("rel") or "").split())
            page.close()
            assert not errors, errors
    finally:
        demo.close()
