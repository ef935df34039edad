"""The benchmark's ``eval.yaml``: `madqa setup` writes it at the dataset folder's root, valid against the schema copy
(checked here with ``jsonschema``), and a bad one is a build error naming the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pyarrow.parquet as pq
import pytest
import yaml

from madqa.loading_script import benchmark_eval, build
from madqa.loading_script.benchmark_eval import BENCHMARK_TASKS, EVAL_YAML, SCHEMA_FILE, render_eval_yaml
from madqa.loading_script.features import SchemaError
from madqa.loading_script.load import folder_configs
from madqa.loading_script.schema_check import SchemaViolation, check, load_schema

SCHEMA = load_schema("madqa.loading_script", SCHEMA_FILE)


def test_schema_copy_is_a_valid_json_schema_with_its_source():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    header = (Path(benchmark_eval.__file__).parent / SCHEMA_FILE).read_text(encoding="utf-8")
    for source in ("huggingface/hub-docs", "docs/hub/eval-results.md", "242f4a1eeb86", "huggingface/huggingface.js"):
        assert source in header


def test_setup_writes_a_valid_eval_yaml_whose_tasks_name_the_folders_splits(layout):
    document = yaml.safe_load((layout.dataset_dir / EVAL_YAML).read_text(encoding="utf-8"))
    jsonschema.validate(document, SCHEMA)
    assert document["evaluation_framework"] == "madqa"
    assert [t["id"] for t in document["tasks"]] == [t.id for t in BENCHMARK_TASKS]
    splits = {t["split"] for t in document["tasks"]}
    assert splits == {"test", "dev"}
    configs = folder_configs(layout.dataset_dir)
    assert {t["config"] for t in document["tasks"]} == {"default"} and "default" in configs
    for split in splits:  # every task's split is a data file of the folder
        assert (layout.dataset_dir / build.QA_FILE.format(split=split)).is_file()


def _valid() -> dict:
    return yaml.safe_load(render_eval_yaml("MADQA"))


def _broken() -> list[tuple[str, dict]]:
    cases = []
    for field, change in (
        ("name", lambda d: d.pop("name")),
        ("description", lambda d: d.update(description="")),
        ("evaluation_framework", lambda d: d.update(evaluation_framework="my-harness")),
        ("tasks", lambda d: d.update(tasks=[])),
        ("tasks[1].id", lambda d: d["tasks"][1].pop("id")),
        ("tasks[0].split", lambda d: d["tasks"][0].update(split=3)),
        ("tasks[0].metric", lambda d: d["tasks"][0].update(metric="accuracy")),
        ("leaderboard", lambda d: d.update(leaderboard=True)),
        ("tasks[0].field_spec", lambda d: d.update(evaluation_framework="inspect-ai")),
    ):
        document = _valid()
        change(document)
        cases.append((field, document))
    return cases


@pytest.mark.parametrize(("field", "document"), _broken(), ids=[f for f, _ in _broken()])
def test_the_build_time_check_and_jsonschema_agree_and_name_the_field(field, document):
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(document)
    with pytest.raises(SchemaViolation) as caught:
        check(document, SCHEMA)
    assert caught.value.field.startswith(field.split(".field_spec")[0]), str(caught.value)


def test_an_inspect_ai_task_with_its_fields_passes_both():
    document = _valid()
    document["evaluation_framework"] = "inspect-ai"
    for task in document["tasks"]:
        task.update(field_spec={"input": "question", "target": "answer"}, solvers=[{"name": "generate"}])
        task["scorers"] = [{"name": "match"}]
    jsonschema.validate(document, SCHEMA)
    check(copy.deepcopy(document), SCHEMA)


def test_a_bad_eval_yaml_fails_the_build_naming_the_field_and_keeps_the_old_folder(layout, tmp_path, monkeypatch):
    pages = pq.read_table(layout.dataset_dir / build.PAGES_FILE).to_pylist()
    out, labels = tmp_path / "madqa", tmp_path / "private" / "test_labels.jsonl"
    build.build_dataset(layout.sample_dir, pages, out, labels)
    assert (out / EVAL_YAML).is_file()
    monkeypatch.setattr(build, "SAMPLE_BENCHMARK_NAME", "")
    with pytest.raises(SchemaError, match=r"eval\.yaml: field 'name': must not be empty"):
        build.build_dataset(layout.sample_dir, pages, out, labels)
    assert (out / EVAL_YAML).is_file() and (out / "README.md").is_file()  # the staging folder took the failure


def test_task_ids_given_twice_are_refused():
    twice = (*BENCHMARK_TASKS, BENCHMARK_TASKS[0])
    with pytest.raises(SchemaError, match=r"field 'tasks\[\]\.id': qa_test_accuracy given more than once"):
        render_eval_yaml("MADQA", twice)


def test_publish_benchmark_pushes_the_checked_eval_yaml_as_a_pull_request(
    layout, tmp_path, monkeypatch, capsys, caplog
):
    import shutil

    import huggingface_hub
    from helpers.hub_http import hub_stand_in

    from madqa.cli import main

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # the stand-in is on loopback
    real_api = huggingface_hub.HfApi
    with hub_stand_in() as hub:
        monkeypatch.setattr(huggingface_hub, "HfApi", lambda: real_api(endpoint=hub.endpoint, token="hf_maintainer"))
        argv = ["publish", "benchmark", "--dataset", "sample", "--repo", "OxRML/MADQA-sample", "--create-pr", "--json"]
        assert main(argv) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["url"] == f"{hub.endpoint}/datasets/OxRML/MADQA-sample/discussions/1"
        (commit,) = hub.commits
        assert (commit.repo_type, commit.repo_id, commit.create_pr) == ("dataset", "OxRML/MADQA-sample", True)
        assert commit.files == {EVAL_YAML: (layout.dataset_dir / EVAL_YAML).read_bytes()}

        broken = tmp_path / "madqa"
        shutil.copytree(layout.dataset_dir, broken)
        text = (broken / EVAL_YAML).read_text(encoding="utf-8")
        (broken / EVAL_YAML).write_text(text.replace("evaluation_framework: madqa", "evaluation_framework: mine"))
        assert main(["publish", "benchmark", "--dataset", str(broken), "--repo", "OxRML/MADQA-sample"]) == 2
        errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
        assert len(errors) == 1 and "eval.yaml: field 'evaluation_framework': 'mine' is not one of" in errors[0]
        assert len(hub.commits) == 1
