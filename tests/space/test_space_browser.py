"""Headless Chromium (Debian `chromium`, driven by Playwright; never `playwright install`) against the launched Space:
every tab opens, a file submitted through the UI shows up as a new board row, and a screenshot is saved."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.browser_support import browser_page, require_browser  # noqa: E402
from helpers.launched_space import launched_space  # noqa: E402

pytestmark = pytest.mark.browser

sync_api = require_browser()


@pytest.fixture(scope="module")
def url(layout, tmp_path_factory) -> Iterator[str]:
    with launched_space(layout.root, tmp_path_factory.mktemp("space_ui")) as (address, _):
        yield address


def test_browser_tabs_submit_and_new_row(url: str, layout, tmp_path: Path) -> None:
    rows = [json.loads(x) for x in layout.test_labels.read_text(encoding="utf-8").splitlines() if x.strip()]
    results = tmp_path / "ui_results.jsonl"
    results.write_text(
        "".join(
            json.dumps({"id": r["id"], "answer": r["answer_variants"][0], "citations": r["evidence"], "steps": 2})
            + "\n"
            for r in rows[:30]
        )
    )
    with browser_page({"width": 1400, "height": 1000}) as page:
        page.goto(url, timeout=60_000)
        board = page.locator("#leaderboard")
        board.wait_for(timeout=60_000)
        page.get_by_text("Baseline: no answer (floor)").first.wait_for(timeout=30_000)
        for tab in ("Submit", "Try an agent", "About", "Leaderboard"):
            page.get_by_role("tab", name=tab).click()
        page.locator("#pick label").first.click()
        page.locator("#plot-button").click()
        page.locator("#plot img, #plot svg, #plot canvas").first.wait_for(timeout=60_000)
        page.get_by_role("tab", name="Try an agent").click()
        page.locator("#run-agent").wait_for(timeout=10_000)
        page.get_by_role("tab", name="Submit").click()
        page.locator("#upload input[type=file]").set_input_files(str(results))
        fields = {
            "#f-system textarea": "ui-browser-system",
            "#f-submitter textarea": "browser",
            "#f-agent textarea": "a",
            "#f-model textarea": "m",
            "#f-contact textarea": "x@y.z",
            "#f-models textarea": "m",
            "#f-training textarea": "none",
            "#f-compute textarea": "1 min",
        }
        for selector, value in fields.items():
            page.locator(selector).fill(value)
        page.wait_for_timeout(500)
        page.locator("#submit").click()
        page.locator("#status").get_by_text("Accepted").wait_for(timeout=60_000)
        page.get_by_role("tab", name="Leaderboard").click()
        page.locator("#leaderboard").get_by_text("ui-browser-system").first.wait_for(timeout=30_000)
        shot = Path(os.environ.get("MADQA_SCREENSHOT_DIR", str(tmp_path))) / "space_leaderboard.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
