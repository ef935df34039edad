"""``madqa bench startup`` run for real (one round, no Space, no built sample: evaluate, --help, the interpreter and
a scoring worker), and its verdicts: a target met, missed, or not measured."""

from __future__ import annotations

import argparse
import json

import pytest

from madqa.bench import startup


@pytest.fixture
def no_sample(tmp_path, monkeypatch):
    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "home"))  # no built sample: info and run are skipped


@pytest.mark.slow
def test_one_round_measures_every_command_and_checks_each_target(no_sample, capsys) -> None:
    parser = argparse.ArgumentParser()
    startup.configure(parser)
    code = startup.run(parser.parse_args(["--repeat", "1", "--no-space", "--json"]))
    figures = json.loads(capsys.readouterr().out)
    commands = figures["commands"]
    assert set(commands) == {"interpreter", "help", "evaluate"}
    for label, c in commands.items():
        assert 0 < c["wall_min_s"] <= c["wall_s"] <= c["wall_max_s"], label
        assert c["peak_rss_mib"] > 5 and c["heavy_imported"] == [], label
    assert commands["evaluate"]["peak_rss_mib"] > commands["interpreter"]["peak_rss_mib"]
    assert figures["worker"]["worker_peak_rss_mib"] > 5 and figures["worker"]["heavy_imported"] == []
    assert "madqa setup" in figures["sample_skipped"]
    timed = {c["what"]: c["ok"] for c in figures["checks"] if "target" in c}
    assert len(timed) == 4 and timed["Space (python -m madqa.space.app) ready"] is None
    assert all(ok is not None for what, ok in timed.items() if "Space (" not in what)
    assert code == (1 if any(c["ok"] is False for c in figures["checks"]) else 0)


def test_the_report_says_pass_fail_and_not_measured() -> None:
    figures = {
        "commands": {
            "interpreter": {"wall_s": 0.02, "heavy_imported": []},
            "help": {"wall_s": 0.08, "heavy_imported": []},
            "evaluate": {"wall_s": 0.7, "heavy_imported": ["scipy"]},
        },
        "worker": {"worker_peak_rss_mib": 54.0, "heavy_imported": []},
        "space": {"startup_skipped": "--no-space"},
    }
    checks = {c["what"]: c for c in startup.checks(figures)}
    assert checks["madqa evaluate, 2,250 lines: wall"]["ok"] is True
    assert checks["madqa --help: wall / the interpreter's"]["value"] == pytest.approx(4.0)
    assert checks["madqa --help: wall / the interpreter's"]["ok"] is False  # 4x > 3x
    assert checks["Space (python -m madqa.space.app) ready"]["ok"] is None
    assert checks["evaluate: imports none of scipy, torch, transformers, gradio"]["ok"] is False
    assert checks["worker: imports none of scipy, torch, transformers, gradio"]["ok"] is True


def test_imports_are_read_from_importtime_lines() -> None:
    text = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       120 |        120 |   torch._C\n"
        "import time:      3000 |      90000 | madqa.metric.report\n"
        "some other line\n"
    )
    assert startup.imported_modules(text) == {"torch._C", "madqa.metric.report"}
    assert startup.heavy_in(startup.imported_modules(text)) == ["torch"]
