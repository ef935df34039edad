"""The benchmark's ``eval.yaml``: what makes the dataset a Benchmark on the Hub, with one leaderboard per task.

The Hub (huggingface/hub-docs ``docs/hub/eval-results.md``) reads ``eval.yaml`` at a dataset repo's root: a name,
a description, one ``evaluation_framework`` and ``tasks[]`` (``id``, ``config``, ``split``). Model repos then
publish one value per task in ``.eval_results/*.yaml`` (:mod:`madqa.metric.eval_results`). A task has one value,
so each MADQA task is one (track, split, metric): :data:`BENCHMARK_TASKS` is the single list both files are made
from, and each task's ``metric`` names the key of ``madqa evaluate``'s report (QA track) or of ``madqa
retrieval``'s measures (retrieval track) that is its value.

``evaluation_framework`` is ``madqa``, a value to register in huggingface.js ``packages/tasks/src/eval.ts``, not
``inspect-ai``: the Hub's inspect-ai route runs a generic task built from ``field_spec`` (one row's input and
target), named built-in ``solvers`` and ``scorers``. MADQA's question alone is not the task (the agent searches a
collection of PDFs, which the Hub's generic task does not give it, through this project's tools) and the test
split's answers are hidden, so no Hub-run scorer can score it; the project's inspect task (``madqa/bm25``) needs
this package installed and the private labels. The card says the same (``dataset_card/README.md``).

Every ``eval.yaml`` written is checked against the schema copy ``eval_yaml.schema.yaml`` first; a violation is a
:class:`~.features.SchemaError` naming the field, so a build never writes one the Hub would refuse for a reason
this project can see.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .features import SchemaError
from .schema_check import SchemaViolation, check, load_schema

EVAL_YAML = "eval.yaml"
SCHEMA_FILE = "eval_yaml.schema.yaml"
#: Not yet in huggingface.js ``EVALUATION_FRAMEWORKS``: the module docstring says why not ``inspect-ai``.
EVALUATION_FRAMEWORK = "madqa"
QA_TRACK, RETRIEVAL_TRACK = "qa", "retrieval"


@dataclass(frozen=True)
class BenchmarkTask:
    """One task of ``eval.yaml`` (one leaderboard): its ``id``, track, split and the metric that is its value.

    ``metric`` is a key of ``madqa evaluate``'s report (QA track: ``accuracy``, ``page_f1``) or a measure of
    ``madqa retrieval`` (retrieval track: ``nDCG@10``), a fraction in [0, 1] either way.
    """

    id: str
    track: str
    split: str
    metric: str
    config: str = "default"


BENCHMARK_TASKS: tuple[BenchmarkTask, ...] = (
    BenchmarkTask("qa_test_accuracy", QA_TRACK, "test", "accuracy"),
    BenchmarkTask("qa_test_page_f1", QA_TRACK, "test", "page_f1"),
    BenchmarkTask("qa_dev_accuracy", QA_TRACK, "dev", "accuracy"),
    BenchmarkTask("retrieval_test_ndcg10", RETRIEVAL_TRACK, "test", "nDCG@10"),
    BenchmarkTask("retrieval_dev_ndcg10", RETRIEVAL_TRACK, "dev", "nDCG@10"),
)

_DESCRIPTION = (
    "Agentic question answering over a collection of PDF documents: the agent finds the documents and pages, reads "
    "them and answers, citing the pages it used. QA track: accuracy (ANLS* >= 0.5 against the accepted answers) and "
    "Page F1 of the cited pages, on test (the leaderboard; hidden labels) and dev (development). Retrieval track: "
    "nDCG@10 of a page ranking against the gold evidence pages. Every value is a fraction in [0, 1]. Scored with "
    "the madqa harness (`madqa evaluate`, `madqa retrieval`)."
)

_HEADER = (
    "# The MADQA benchmark's tasks on the Hub (https://huggingface.co/docs/hub/eval-results), written by madqa.\n"
    "# One task per (track, split, metric); the metric of each task:\n"
)


def eval_yaml_document(name: str, tasks: Sequence[BenchmarkTask] = BENCHMARK_TASKS) -> dict[str, Any]:
    """The ``eval.yaml`` content of benchmark ``name`` (pure; not yet checked)."""
    return {
        "name": name,
        "description": _DESCRIPTION,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": [{"id": t.id, "config": t.config, "split": t.split} for t in tasks],
    }


def check_eval_yaml(document: Any) -> None:
    """Raise :class:`SchemaError` (``eval.yaml: field 'tasks[0].id': …``) when ``document`` breaks the schema copy."""
    try:
        check(document, load_schema(__package__ or "madqa.loading_script", SCHEMA_FILE))
    except SchemaViolation as exc:
        raise SchemaError(f"{EVAL_YAML}: {exc}") from None
    ids = [task["id"] for task in document["tasks"]]
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise SchemaError(f"{EVAL_YAML}: field 'tasks[].id': {', '.join(twice)} given more than once")


def render_eval_yaml(name: str, tasks: Sequence[BenchmarkTask] = BENCHMARK_TASKS) -> str:
    """The checked ``eval.yaml`` text (a comment header naming each task's metric, then the document)."""
    document = eval_yaml_document(name, tasks)
    check_eval_yaml(document)
    metrics = "".join(f"#   {t.id}: {t.track} track, {t.metric} on {t.split}\n" for t in tasks)
    return _HEADER + metrics + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=119)


def write_eval_yaml(folder: Path, name: str, tasks: Sequence[BenchmarkTask] = BENCHMARK_TASKS) -> Path:
    """Write ``folder/eval.yaml`` (checked first, then through a temporary file); returns its path."""
    text = render_eval_yaml(name, tasks)
    target = folder / EVAL_YAML
    tmp = folder / f".{EVAL_YAML}.tmp{os.getpid()}"
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
    return target


def tasks_for(track: str, split: str, tasks: Sequence[BenchmarkTask] = BENCHMARK_TASKS) -> list[BenchmarkTask]:
    """The tasks of ``track`` scored on ``split`` (empty when the benchmark declares none)."""
    return [t for t in tasks if t.track == track and t.split == split]


def publish_eval_yaml(dataset: str | None, repo_id: str, *, create_pr: bool = False, api: Any = None) -> Any:
    """Upload the ``eval.yaml`` of the prepared ``dataset`` (checked again first) to the Hub dataset ``repo_id``.

    Returns the ``CommitInfo`` (``pr_url`` set with ``create_pr``). Raises :class:`DatasetUnavailableError` when the
    dataset has no folder with an ``eval.yaml`` and :class:`SchemaError` when the file breaks the schema.
    """
    from .load import DatasetUnavailableError, dataset_spec, resolve_dataset

    spec = dataset_spec(dataset)
    folder = resolve_dataset(spec)
    path = folder / EVAL_YAML if isinstance(folder, Path) else None
    if path is None or not path.is_file():
        raise DatasetUnavailableError(f"no {EVAL_YAML} for '{spec}': run `madqa setup --dataset {spec}` first")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SchemaError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
    check_eval_yaml(document)
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    return api.upload_file(
        path_or_fileobj=str(path),
        path_in_repo=EVAL_YAML,
        repo_id=repo_id,
        repo_type="dataset",
        create_pr=create_pr,
        commit_message=f"MADQA benchmark tasks ({EVAL_YAML}, {len(document['tasks'])} tasks)",
    )
