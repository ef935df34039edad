"""`madqa evaluate RUN --eval-results DIR` writes the model repo's ``.eval_results/madqa.yaml`` (issue 42, item 2).

One entry per benchmark task the run scores, valid against the schema copy (checked with ``jsonschema``); the run is
refused in one line (exit 2) when it is incomplete or scored on a split no task is on (unless a flag says so), and
always when its gold has no labels. The last test puts the file on a model repo as docs/publishing.md shows, with
``huggingface_hub`` against a local stand-in of the Hub's HTTP API.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import jsonschema
import pyarrow.parquet as pq
import pytest
import yaml
from helpers.agent_cli import madqa, madqa_env, run_agent_lines
from helpers.fake_runs import FAKE
from helpers.hub_http import hub_stand_in

from madqa.cli import main
from madqa.loading_script.benchmark_eval import BENCHMARK_TASKS
from madqa.loading_script.release import dataset_provenance
from madqa.loading_script.schema_check import load_schema

HERE = Path(__file__).parent
SCHEMA = load_schema("madqa.metric", "eval_results.schema.yaml")
HUB_ID = "OxRML/MADQA-sample"
CONFIG = {
    "model": "fake",
    "agent": "bm25",
    "dataset": None,
    "max_steps": 10,
    "question_timeout": None,
    "top_k": 5,
    "model_options": {"temperature": 0},
}


def _lines(split: str, drop: int = 0, **extra) -> list[dict]:
    """Every question of the sample's ``split`` answered right (the first ``drop`` left out), as `madqa run` would."""
    from madqa.loading_script.load import load_gold

    provenance = dataset_provenance("sample")
    return [
        {
            "id": q["id"],
            "question": q["question"],
            "answer": q["answer_variants"][0],
            "citations": q["evidence"],
            "search_history": ["q"],
            "error": None,
            "error_kind": None,
            "config": {**CONFIG, "split": split},
            "dataset": provenance,
            **extra,
        }
        for q in load_gold(split)[drop:]
    ]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _evaluate(args: list[str], caplog) -> tuple[int, list[str]]:
    return _command(["evaluate", *args], caplog)


def _command(argv: list[str], caplog) -> tuple[int, list[str]]:
    """``madqa ARGV`` in this process: its exit status and the ERROR lines it logged."""
    caplog.clear()
    with caplog.at_level(logging.INFO):
        rc = main(argv)
    return rc, [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def _entries(repo: Path) -> list[dict]:
    entries = yaml.safe_load((repo / ".eval_results" / "madqa.yaml").read_text(encoding="utf-8"))
    jsonschema.validate(entries, SCHEMA)
    return entries


def test_a_real_run_writes_one_valid_entry_per_task_of_its_split(layout, tmp_path):
    env = madqa_env(HERE)
    run = tmp_path / "run.jsonl"
    run_agent_lines("bm25", run, ["--model", FAKE, "--split", "dev", "--top-k", "3"], env)
    repo = tmp_path / "my-model"
    args = ["evaluate", str(run), "--json", "--eval-results", str(repo), "--eval-dataset", HUB_ID]
    done = madqa(args, env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (entry,) = _entries(repo)
    assert entry["dataset"] == {
        "id": HUB_ID,
        "task_id": "qa_dev_accuracy",
        "revision": dataset_provenance("sample")["revision"],
    }
    assert entry["value"] == report["accuracy"] and "source" not in entry
    assert entry["notes"].startswith("agent bm25; model ") and "top_k=3" in entry["notes"]
    assert "scored by madqa 0.1.0 (anls)" in entry["notes"]


def test_test_split_entries_with_source_merge_with_the_files_other_entries(layout, tmp_path, caplog):
    repo, source = tmp_path / "my-model", "https://huggingface.co/datasets/me/madqa-traces"
    dev = _write(tmp_path / "dev.jsonl", _lines("dev"))
    test = _write(tmp_path / "test.jsonl", _lines("test"))
    assert _evaluate([str(dev), "--eval-results", str(repo), "--eval-dataset", HUB_ID], caplog) == (0, [])
    flags = ["--eval-results", str(repo), "--eval-dataset", HUB_ID, "--source", source]
    assert _evaluate([str(test), *flags, "--json"], caplog) == (0, [])
    assert _evaluate([str(test), *flags], caplog) == (0, [])  # again: replaced, not repeated
    entries = _entries(repo)
    wanted = [t.id for t in BENCHMARK_TASKS if t.track == "qa" and t.split == "test"]
    assert [e["dataset"]["task_id"] for e in entries] == ["qa_dev_accuracy", *wanted]
    assert all(e["value"] == 1.0 for e in entries)
    assert [e.get("source") for e in entries] == [None, *[{"url": source, "name": "Run traces"}] * len(wanted)]


def _refusals(tmp_path: Path) -> list[tuple[list[str], str]]:
    dev, base = _lines("dev"), ["--eval-dataset", HUB_ID]
    public_test = pq.read_table(next((dataset_dir(tmp_path) / "data").glob("test-*.parquet"))).to_pylist()
    unlabelled = _write(tmp_path / "public_test.jsonl", public_test)
    test_run = _write(tmp_path / "test_run.jsonl", _lines("test"))
    mixed = [*dev[:1], *({**line, "config": {**line["config"], "top_k": 9}} for line in dev[1:])]
    timed_out = [*dev[:-1], {**dev[-1], "error": "took too long", "error_kind": "timeout", "answer": []}]
    return [
        ([str(_write(tmp_path / "short.jsonl", _lines("dev", drop=1))), *base], "the run is incomplete (1 gold"),
        ([str(_write(tmp_path / "timeout.jsonl", timed_out)), *base], "1 line(s) failed for an infrastructure"),
        ([str(_write(tmp_path / "train.jsonl", _lines("train"))), *base], "scored on split 'train'"),
        ([str(_write(tmp_path / "dev.jsonl", dev))], "the gold dataset sample is not a Hub dataset"),
        ([str(_write(tmp_path / "mixed.jsonl", mixed)), *base], "made with 2 different settings"),
        (
            [str(_write(tmp_path / "gold.jsonl", dev)), "--gold", str(tmp_path / "dev_gold.jsonl"), *base],
            "whose split is unknown: name the task split it holds with --eval-split",
        ),
        (
            [str(test_run), "--gold", str(unlabelled), "--eval-split", "test", "--allow-incomplete", *base],
            "unlabelled rows cannot be scored",
        ),
        ([str(tmp_path / "dev.jsonl"), *base, "--source", "me/traces"], "--source 'me/traces': expected the http"),
        ([str(tmp_path / "dev.jsonl"), *base, "--eval-split", "train"], "--eval-split train: the benchmark's tasks"),
        ([str(tmp_path / "dev.jsonl"), *base, "--source", "https://hf.co/x\nnotes: y"], "expected the http(s) URL"),
        ([str(tmp_path / "dev.jsonl"), *base, "--source", "https://me:hf_tok@hf.co/x"], "the URL holds credentials"),
    ]


def dataset_dir(tmp_path: Path) -> Path:
    from madqa.loading_script.paths import Layout

    return Layout.default().dataset_dir


@pytest.mark.parametrize("case", range(11))
def test_a_run_that_cannot_be_published_is_refused_in_one_line_and_nothing_is_written(layout, tmp_path, caplog, case):
    from madqa.loading_script.load import load_gold

    _write(tmp_path / "dev_gold.jsonl", load_gold("dev"))
    args, message = _refusals(tmp_path)[case]
    repo = tmp_path / "my-model"
    rc, errors = _evaluate([*args, "--eval-results", str(repo)], caplog)
    assert rc == 2 and len(errors) == 1 and message in errors[0], errors
    assert not (repo / ".eval_results").exists()


def test_flags_state_an_incomplete_run_or_another_split_and_the_notes_say_so(layout, tmp_path, caplog):
    from madqa.loading_script.load import load_gold

    repo, base = tmp_path / "my-model", ["--eval-dataset", HUB_ID, "--eval-results", str(tmp_path / "my-model")]
    short = _write(tmp_path / "short.jsonl", _lines("dev", drop=1))
    assert _evaluate([str(short), *base, "--allow-incomplete"], caplog) == (0, [])
    assert "INCOMPLETE: 1 gold question(s) without a line" in _entries(repo)[0]["notes"]
    gold = _write(tmp_path / "dev_gold.jsonl", load_gold("dev"))
    dev = _write(tmp_path / "dev.jsonl", _lines("dev"))
    assert _evaluate([str(dev), "--gold", str(gold), "--eval-split", "dev", *base], caplog) == (0, [])
    (entry,) = _entries(repo)
    assert entry["value"] == 1.0 and f"gold: the --gold file {gold} as split dev" in entry["notes"]
    assert "revision" not in entry["dataset"]  # a --gold file's revision is unknown


def test_eval_results_flags_without_eval_results_are_refused(layout, tmp_path, caplog):
    dev = _write(tmp_path / "dev.jsonl", _lines("dev"))
    rc, errors = _evaluate([str(dev), "--source", "https://example.org/traces"], caplog)
    assert rc == 2 and errors == ["--source only apply with --eval-results DIR"]


def test_the_pull_request_a_user_opens_puts_the_file_on_the_model_repo(layout, tmp_path, caplog, monkeypatch):
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError

    repo = tmp_path / "my-model"
    dev = _write(tmp_path / "dev.jsonl", _lines("dev"))
    assert _evaluate([str(dev), "--eval-results", str(repo), "--eval-dataset", HUB_ID], caplog) == (0, [])
    written = repo / ".eval_results" / "madqa.yaml"
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the suite runs offline; the stand-in is on loopback
    with hub_stand_in() as hub:
        # docs/publishing.md, "Scores on model pages": the same call, with the user's token
        api = HfApi(endpoint=hub.endpoint, token="hf_user_token")
        commit = api.upload_file(
            path_or_fileobj=str(written),
            path_in_repo=".eval_results/madqa.yaml",
            repo_id="someone/their-model",
            create_pr=True,
            commit_message="Add MADQA results",
        )
        assert commit.pr_url == f"{hub.endpoint}/someone/their-model/discussions/1" and commit.pr_num == 1
        (received,) = hub.commits
        assert (received.repo_type, received.repo_id, received.revision) == ("model", "someone/their-model", "main")
        assert received.create_pr and received.summary == "Add MADQA results"
        assert received.files == {".eval_results/madqa.yaml": written.read_bytes()}
        jsonschema.validate(yaml.safe_load(received.files[".eval_results/madqa.yaml"]), SCHEMA)
        with pytest.raises(HfHubHTTPError):  # no token: the Hub refuses, nothing is committed
            HfApi(endpoint=hub.endpoint, token=False).upload_file(
                path_or_fileobj=str(written), path_in_repo=".eval_results/madqa.yaml", repo_id="x/y", create_pr=True
            )
        assert len(hub.commits) == 1


def test_an_imported_inspect_run_names_its_harness_and_no_local_log_path(layout, tmp_path, caplog):
    inspect_config = {**CONFIG, "harness": "inspect_ai", "inspect_ai": "0.3.285", "log": "/home/me/logs/run.eval"}
    lines = [{**line, "config": {**inspect_config, "split": "dev"}} for line in _lines("dev")]
    run, repo = _write(tmp_path / "inspect.jsonl", lines), tmp_path / "my-model"
    assert _evaluate([str(run), "--eval-results", str(repo), "--eval-dataset", HUB_ID], caplog) == (0, [])
    (entry,) = _entries(repo)
    assert "harness=inspect_ai, inspect_ai=0.3.285" in entry["notes"] and "/home/me" not in entry["notes"]


def test_retrieval_writes_the_retrieval_track_entry_of_one_retriever(layout, tmp_path, caplog, capsys):
    repo, flags = (
        tmp_path / "my-retriever",
        ["--eval-dataset", HUB_ID, "--eval-results", str(tmp_path / "my-retriever")],
    )
    caplog.clear()
    assert main(["retrieval", "--retriever", "bm25", "--split", "dev", "--json", "--no-progress", *flags]) == 0
    printed = json.loads(capsys.readouterr().out)
    (entry,) = _entries(repo)
    assert entry["dataset"]["task_id"] == "retrieval_dev_ndcg10"
    assert entry["dataset"]["revision"] == dataset_provenance("sample")["revision"]
    assert entry["value"] == printed["retrievers"]["bm25"]["page"]["all"]["nDCG@10"]["mean"]
    assert entry["notes"].startswith("retriever bm25; page level")
    (repo / ".eval_results" / "madqa.yaml").unlink()
    for args, message in (
        (["--retriever", "bm25,dense:wordllama"], "publishes one retriever's results; 2 were given"),
        (["--retriever", "bm25", "--limit", "3"], "--limit ranks part of the split"),
        (["--retriever", "bm25", "--split", "train"], "scored on split 'train'"),
    ):
        rc, errors = _command(["retrieval", *args, "--no-progress", *flags], caplog)
        assert rc == 2 and len(errors) == 1 and message in errors[0], errors
        assert not (repo / ".eval_results" / "madqa.yaml").exists()
