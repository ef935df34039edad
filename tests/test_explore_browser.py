"""Headless Chromium (Debian `chromium` via Playwright; never `playwright install`) against `madqa view`'s app and
its static export, on a scripted-model run of the dev split (see ``test_explore``).

Set ``MADQA_EXPLORE_SCREENSHOT=docs/explore.png`` to save the explorer's screenshot (the README's)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import ARGS, CHROMIUM, free_port, require_browser  # noqa: E402

sync_api = require_browser()

from test_explore import QUERY, derived_runs, scripted_dev_run  # noqa: E402


@pytest.fixture(scope="module")
def runs(layout, tmp_path_factory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("explore_browser")
    return derived_runs(scripted_dev_run(folder / "scripted.jsonl"), folder)


@pytest.fixture(scope="module")
def url(runs) -> Iterator[str]:
    import argparse

    from madqa.cli.view_cmd import prepare
    from madqa.space.explore.ui import build_view_app

    args = argparse.Namespace(results=list(runs["paths"].values()), split="dev", dataset=None, gold=None,
                              no_thumbnails=False, resamples=200)  # fmt: skip
    ws, thumbs = prepare(args)
    demo = build_view_app(ws, thumbs)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


def choose(page: Any, elem_id: str, option: str) -> None:
    """Pick ``option`` in a gradio Dropdown."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def test_filter_open_and_compare_in_the_browser(url: str, runs, tmp_path: Path) -> None:
    expected = runs["retrieval_a"]
    first = runs["gold"][expected[0]]
    errors: list[Any] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.on("pageerror", lambda exc: errors.append(exc))
            page.goto(url, timeout=60_000)
            page.locator("#explore-count").get_by_text(f"{len(runs['order'])} of {len(runs['order'])}").wait_for(
                timeout=60_000)
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
        finally:
            browser.close()
    assert not errors, errors


def test_export_opens_offline_with_the_numbers_of_evaluate(runs, tmp_path: Path, capsys) -> None:
    from madqa.cli import main

    out = tmp_path / "report.html"
    paths = [str(p) for p in runs["paths"].values()]
    assert main(["view", *paths, "--split", "dev", "--export", str(out)]) == 0
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
            loaded = [images.nth(i).evaluate("img => img.complete && img.naturalWidth > 0")
                      for i in range(images.count())]  # fmt: skip
            assert page.locator("#agree-both").inner_text() == str(runs["counts"]["both"])
        finally:
            browser.close()
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    assert len(loaded) >= 4 and all(loaded)
    for key in ("accuracy", "page_f1", "doc_f1", "kuiper", "anls"):
        assert float(values[key]) == expected[key], key
    assert [float(v) for v in values["accuracy_ci"].split(",")] == expected["accuracy_ci"]
    assert [float(v) for v in values["kuiper_ci"].split(",")] == expected["kuiper_ci"]
    assert shown["accuracy"] == f"{100 * expected['accuracy']:.1f}%"
    assert shown["kuiper"] == f"{expected['kuiper']:.3f}"
