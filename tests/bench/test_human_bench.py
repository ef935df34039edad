"""`madqa bench human` runs end to end at a small size and reports what it measured (no timing thresholds here:
targets live in the benchmark's printout). Each click is timed on the page's clock and on the driver's; the
page's interval lies inside the driver's, sample by sample."""

from __future__ import annotations

import json

import pytest
from helpers.browser_support import require_browser  # noqa: E402

pytestmark = pytest.mark.browser

require_browser()


def test_bench_human_measures_both_clocks(layout, capsys: pytest.CaptureFixture[str]) -> None:
    from madqa.bench import human
    from madqa.cli import main

    seen: list[dict[str, list[float]]] = []
    drive = human.drive

    def recording_drive(*args, **kwargs):  # the same driver; keeps the raw samples for the checks below
        out = drive(*args, **kwargs)
        seen.append(out)
        return out

    human.drive = recording_drive
    try:
        code = main(["bench", "human", "--pages", "400", "--queries", "4", "--navs", "4", "--json"])
    finally:
        human.drive = drive
    assert code == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["target_p95_ms"] == human.TARGET_P95_MS
    assert set(figures["corpora"]) == {"sample", "bench"} and figures["corpora"]["bench"]["pages"] == 400
    for row in figures["corpora"].values():
        for what in ("search", "navigation", "search_driver", "navigation_driver"):
            assert row[what]["n"] >= 3 and 0 < row[what]["p50_ms"] <= row[what]["p95_ms"]
    assert len(seen) == 2
    for times in seen:
        for what in ("search", "navigation"):
            page, driver = times[f"{what}_ms"], times[f"{what}_driver_ms"]
            assert len(page) == len(driver) and all(0 < p <= d for p, d in zip(page, driver, strict=True))


def test_bench_without_a_set_up_sample_names_the_setup_command(tmp_path, monkeypatch, capsys, caplog) -> None:
    """A user mistake (no `madqa setup` yet): one line naming the command, exit 2, no traceback."""
    from madqa.cli import main

    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "empty-home"))
    monkeypatch.delenv("MADQA_DATASET", raising=False)
    code = main(["bench", "human", "--no-bench-corpus", "--queries", "1", "--navs", "1"])
    said = capsys.readouterr().err + caplog.text  # the CLI logs its one line (pytest captures logging)
    assert code == 2 and "run `madqa setup` first" in said and "Traceback" not in said
