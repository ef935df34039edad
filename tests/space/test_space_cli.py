"""`madqa space` and `madqa bench space` wiring (no long-running server here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("gradio")


def test_space_subcommand_is_registered_and_parses() -> None:
    from madqa.cli import build_parser

    args = build_parser().parse_args(["space", "--port", "7999", "--no-seed"])
    assert args.port == 7999 and args.no_seed and args.host == "127.0.0.1"


def test_space_without_labels_is_a_clear_user_error(tmp_path: Path, monkeypatch, caplog) -> None:
    from madqa.cli import main

    # With no configuration at all `madqa space` now builds the sample first; a named labels file that is missing
    # is the user's mistake and fails fast, naming the variable (before any set-up work).
    monkeypatch.setenv("MADQA_HOME", str(tmp_path))
    monkeypatch.setenv("MADQA_SPACE_LABELS", str(tmp_path / "missing.jsonl"))
    monkeypatch.delenv("MADQA_SPACE_LABELS_REPO", raising=False)
    assert main(["space", "--port", "7998"]) == 2
    assert "MADQA_SPACE_LABELS" in caplog.text and "missing.jsonl" in caplog.text
    assert not (tmp_path / "sample").exists()


@pytest.mark.slow
def test_bench_space_small_run_prints_json(capsys) -> None:
    from madqa.cli import main

    assert main(["-q", "bench", "space", "--items", "60", "--submissions", "5", "--repeats", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["items"] == 60 and figures["submit_s"] > 0 and figures["refresh_s"] > 0
