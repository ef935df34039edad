"""``madqa bench scale`` at a tiny size: every stage reports wall time and peak RSS beside its target, the scripted
model costs exactly its calls, and the Ray stage writes the local run's number of lines (no speed asserted)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from madqa.cli import main


def test_sleepy_model_searches_twice_then_answers(layout, tmp_path: Path, monkeypatch) -> None:
    from madqa.bench.scale import run_questions

    monkeypatch.setenv("MADQA_BENCH_LATENCY", "0")
    figures = run_questions(6, 3, 0.0, tmp_path / "r.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert figures["errors"] == 0 and len(rows) == 6 == len({r["id"] for r in rows})
    assert all(r["steps"] == 2 and len(r["trajectory"]) == 3 and r["answer"] == ["17.85"] for r in rows)


@pytest.mark.slow
def test_bench_scale_prints_every_stage_beside_its_target(layout, capsys) -> None:
    argv = [
        "bench",
        "scale",
        "--scale",
        "0.01",
        "--questions",
        "12",
        "--workers",
        "4",
        "--latency",
        "0.01",
        "--ocr-pages",
        "2",
        "--skip",
        "space",
        "--json",
    ]
    assert main(argv) == 0
    figures = json.loads(capsys.readouterr().out)
    stages = ["generate", "extract", "ocr", "index_tantivy", "index_whoosh", "run", "evaluate", "run_ray"]
    assert set(stages) <= set(figures)
    for name in stages:
        assert figures[name]["wall_s"] > 0 and figures[name]["peak_rss_mib"] > 0, name
    assert figures["generate"]["pages"] == figures["extract"]["pages"] == round(18_619 * 0.01)
    assert figures["run"]["questions"] == 12 and figures["run"]["errors"] == 0
    if importlib.util.find_spec("ray") is not None:
        assert figures["run_ray"]["questions"] == 12 and figures["run_ray"]["errors"] == 0
    from madqa.bench.scale import report_lines

    text = "\n".join(report_lines(figures))
    for target in (">= 300 pages/s", "<= 20 s", "<= 250 s", "<= 1.5x ideal", "<= 50 ms", "< 2 s", "<= +20%"):
        assert target in text, target
