"""Results-line provenance: every line carries ``schema_version`` and ``dataset``; ``madqa evaluate`` warns when
they do not match the gold, and never rejects a file for them (issue 12, item 5)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from madqa.agents.harness.runner import RunConfig, run_benchmark
from madqa.loading_script.release import dataset_provenance
from madqa.metric.inputs import parse_prediction, parse_results_text
from madqa.metric.report import provenance_summary
from madqa.metric.schema import RECORD_SCHEMA_VERSION, DatasetRef

FAKE = "py:helpers.fake_runs:fake_model"
OLD_LINE = {
    "id": "q1",
    "question": "Q?",
    "answer": ["x"],
    "citations": [{"document": "a.pdf", "page": 1}],
    "search_history": [{"query": "q"}],
}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_sample_provenance_names_the_generator_version_and_seed(layout) -> None:
    manifest = json.loads((layout.sample_dir / "manifest.json").read_text(encoding="utf-8"))
    assert dataset_provenance(None, layout) == {
        "name": "sample",
        "revision": f"{manifest['version']}+seed{manifest['seed']}",
    }
    assert dataset_provenance("owner/not-prepared", layout) == {"name": "owner/not-prepared", "revision": None}


def test_a_scripted_run_writes_schema_version_and_dataset_on_every_line(layout, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(model=FAKE, limit=2), out)
    rows = lines(out)
    assert len(rows) == 2
    expected = dataset_provenance(None, layout)
    assert expected["revision"]
    for row in rows:
        assert row["schema_version"] == RECORD_SCHEMA_VERSION
        assert row["dataset"] == expected
    preds = parse_results_text(out.read_text(encoding="utf-8"), str(out))
    assert {(p.schema_version, p.dataset) for p in preds} == {
        (RECORD_SCHEMA_VERSION, DatasetRef(expected["name"], expected["revision"]))
    }


def test_an_old_line_without_provenance_parses_and_odd_values_never_reject() -> None:
    pred = parse_prediction(OLD_LINE, "old line 1")
    assert (pred.schema_version, pred.dataset, pred.steps) == (None, None, 1)
    odd = {**OLD_LINE, "schema_version": "two", "dataset": ["not", "a", "dict"]}
    pred = parse_prediction(odd, "odd line 1")
    assert (pred.schema_version, pred.dataset) == (None, None)
    partial = parse_prediction({**OLD_LINE, "schema_version": True, "dataset": {"name": "sample", "revision": 7}}, "x")
    assert (partial.schema_version, partial.dataset) == (None, DatasetRef("sample", None))
    summary = provenance_summary([pred], DatasetRef("sample", "1"))
    assert (summary["mismatched"], summary["unstated"], summary["newer_schema"]) == (0, 1, 0)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_evaluate_warns_once_on_another_revision_and_reports_provenance(layout, tmp_path, caplog, capsys) -> None:
    from madqa.cli import main

    out = tmp_path / "run.jsonl"
    run_benchmark(RunConfig(model=FAKE, limit=3), out)
    rows = lines(out)
    gold = dataset_provenance(None, layout)
    rows[0]["dataset"] = {"name": gold["name"], "revision": "some-other-revision"}
    rows[1]["schema_version"] = RECORD_SCHEMA_VERSION + 1
    del rows[2]["dataset"], rows[2]["schema_version"]  # an old line: no warning, no error
    _write(out, rows)
    with caplog.at_level(logging.WARNING):
        assert main(["evaluate", str(out), "--split", "dev", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "dataset" in r.getMessage()]
    assert len(warnings) == 1
    assert "1 of 3 line(s) were produced on another dataset" in warnings[0] and "some-other-revision" in warnings[0]
    assert f"newer than {RECORD_SCHEMA_VERSION}" in warnings[0]
    prov = report["provenance"]
    assert prov["gold"] == gold and prov["schema_version"] == RECORD_SCHEMA_VERSION
    assert (prov["mismatched"], prov["newer_schema"], prov["unstated"], prov["groups"]) == (1, 1, 1, 3)
    assert sum(g["lines"] for g in prov["seen"]) == 3
    assert report["n_predicted"] == 3


def test_matching_provenance_draws_no_warning(layout, tmp_path, caplog, capsys) -> None:
    from madqa.cli import main

    out = tmp_path / "run.jsonl"
    run_benchmark(RunConfig(model=FAKE, limit=2), out)
    with caplog.at_level(logging.WARNING):
        assert main(["evaluate", str(out), "--split", "dev", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not [r for r in caplog.records if "produced on another dataset" in r.getMessage()]
    assert (report["provenance"]["mismatched"], report["provenance"]["newer_schema"]) == (0, 0)
