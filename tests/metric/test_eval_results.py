"""Hub Eval Results entries (``metric/eval_results.py``): built from a report, valid against the schema copy (checked
with ``jsonschema``), and the build-time checker agrees with ``jsonschema`` on broken entries."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from madqa.loading_script.schema_check import SchemaViolation, check, load_schema
from madqa.metric import eval_results as er

SCHEMA = load_schema("madqa.metric", er.SCHEMA_FILE)
TASKS = (er.ResultsTask("qa_test_accuracy", "accuracy"), er.ResultsTask("qa_test_page_f1", "page_f1"))
REPORT = {"accuracy": 0.625, "page_f1": 0.4, "n": 8}


def _provenance(**changes) -> er.ResultsProvenance:
    fields = {
        "dataset_id": "OxRML/MADQA",
        "revision": "5503434ddd753f426f4b38109466949a1217c2bb",
        "date": "2026-12-06",
        "notes": "agent bm25; model fake; scored by madqa 0.1.0 (anls)",
        "source_url": "https://huggingface.co/datasets/me/madqa-traces",
    }
    return er.ResultsProvenance(**{**fields, **changes})


def test_schema_copy_is_a_valid_json_schema_with_its_source():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    header = (Path(er.__file__).parent / er.SCHEMA_FILE).read_text(encoding="utf-8")
    for source in ("huggingface/hub-docs", "path eval_results.yaml", "242f4a1eeb86", "2026-06-24"):
        assert source in header


def test_one_entry_per_task_with_the_reports_value_and_the_shared_provenance():
    entries = er.eval_results_entries(REPORT, TASKS, _provenance())
    jsonschema.validate(entries, SCHEMA)
    check(entries, SCHEMA)
    assert [(e["dataset"]["task_id"], e["value"]) for e in entries] == [
        ("qa_test_accuracy", 0.625),
        ("qa_test_page_f1", 0.4),
    ]
    first = entries[0]
    assert first["dataset"] == {
        "id": "OxRML/MADQA",
        "task_id": "qa_test_accuracy",
        "revision": "5503434ddd753f426f4b38109466949a1217c2bb",
    }
    assert first["date"] == "2026-12-06" and first["notes"].startswith("agent bm25")
    assert first["source"] == {"url": "https://huggingface.co/datasets/me/madqa-traces", "name": "Run traces"}


def test_without_source_or_revision_the_optional_fields_are_left_out():
    entries = er.eval_results_entries(REPORT, TASKS[:1], _provenance(source_url=None, revision=None))
    jsonschema.validate(entries, SCHEMA)
    assert "source" not in entries[0] and "revision" not in entries[0]["dataset"]


@pytest.mark.parametrize("value", [None, float("nan"), True, "0.5"])
def test_a_task_whose_metric_has_no_finite_value_is_refused(value):
    with pytest.raises(ValueError, match=r"no value for 'accuracy' \(task qa_test_accuracy\)"):
        er.eval_results_entries({**REPORT, "accuracy": value}, TASKS, _provenance())
    with pytest.raises(ValueError, match="no task"):
        er.eval_results_entries(REPORT, (), _provenance())


def test_notes_name_agent_model_options_and_harness_version_without_dataset_paths():
    config = {
        "model": "openai:gpt-4.1",
        "agent": "bm25",
        "split": "test",
        "dataset": "/home/me/private/madqa",
        "max_steps": 10,
        "question_timeout": None,
        "top_k": 5,
        "model_options": {"temperature": 0},
    }
    notes = er.run_notes(config, "0.1.0", "anls")
    assert notes == (
        "agent bm25; model openai:gpt-4.1; options max_steps=10, top_k=5; model options temperature=0; "
        "scored by madqa 0.1.0 (anls)"
    )


def _broken() -> list[tuple[str, object]]:
    cases: list[tuple[str, object]] = [("", [])]
    for field, change in (
        ("[0].dataset.id", lambda e: e["dataset"].update(id="MADQA")),
        ("[0].dataset.task_id", lambda e: e["dataset"].pop("task_id")),
        ("[0].value", lambda e: e.update(value="62.5")),
        ("[0].date", lambda e: e.update(date="6 Dec 2026")),
        ("[0].source.url", lambda e: e["source"].pop("url")),
        ("[0].score", lambda e: e.update(score=1)),
    ):
        entries = er.eval_results_entries(REPORT, TASKS[:1], _provenance())
        change(entries[0])
        cases.append((field, entries))
    return cases


@pytest.mark.parametrize(("field", "entries"), _broken(), ids=[f or "empty" for f, _ in _broken()])
def test_the_build_time_check_and_jsonschema_agree_on_broken_entries(field, entries):
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(entries)
    with pytest.raises(SchemaViolation) as caught:
        check(entries, SCHEMA)
    assert caught.value.field == field, str(caught.value)
