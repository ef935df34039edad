"""Hub Eval Results entries for a model repo (``.eval_results/madqa.yaml``), from one report; pure, no I/O.

The Hub (huggingface/hub-docs ``eval_results.yaml``) reads a list of entries, one value each: ``dataset`` (the
benchmark's Hub ``id``, the ``task_id`` of its ``eval.yaml`` and the dataset ``revision``), ``value``, ``date``,
``source`` (where the traces or logs are published) and ``notes`` (how it was run). This module builds them from a
report of :func:`.report.build_report`; which report key is the value of which task is the caller's
(``madqa.loading_script.benchmark_eval.BENCHMARK_TASKS``), as is every check of the run (complete, on the task's
split). The schema copy ``eval_results.schema.yaml`` in this folder describes the file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Where a model repo keeps its result files, and this benchmark's file there.
EVAL_RESULTS_DIR = ".eval_results"
EVAL_RESULTS_FILE = "madqa.yaml"
SCHEMA_FILE = "eval_results.schema.yaml"


@dataclass(frozen=True)
class ResultsTask:
    """A task of the benchmark's ``eval.yaml`` and the report key that is its value.

    Attributes:
        id: the task's ``id`` in ``eval.yaml``.
        metric: the report key (``accuracy``, ``page_f1``).
    """

    id: str
    metric: str


@dataclass(frozen=True)
class ResultsProvenance:
    """What every entry of one file shares.

    Attributes:
        dataset_id: the benchmark dataset's Hub id (``ORG/NAME``).
        revision: the dataset revision scored against, or ``None`` when unknown.
        date: when the run was evaluated (ISO-8601 date or datetime).
        notes: how the run was made (:func:`run_notes`).
        source_url: where the run's traces or logs are published, or ``None``.
        source_name: the source's display name.
    """

    dataset_id: str
    revision: str | None
    date: str
    notes: str
    source_url: str | None = None
    source_name: str = "Run traces"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def eval_results_entries(
    report: Mapping[str, Any], tasks: Sequence[ResultsTask], provenance: ResultsProvenance
) -> list[dict[str, Any]]:
    """One entry per task, in the order given, its value the report's value of the task's metric.

    Args:
        report: a report of :func:`.report.build_report`.
        tasks: the tasks the report is a result of.
        provenance: what the entries share.

    Returns:
        The entries, in the shape of the Hub's ``eval_results.yaml``.

    Raises:
        ValueError: when ``tasks`` is empty or the report has no finite value for a task's metric.
    """
    if not tasks:
        raise ValueError("no task of the benchmark is scored by this report")
    entries: list[dict[str, Any]] = []
    for task in tasks:
        value = _number(report.get(task.metric))
        if value is None:
            raise ValueError(f"the report has no value for {task.metric!r} (task {task.id})")
        dataset: dict[str, Any] = {"id": provenance.dataset_id, "task_id": task.id}
        if provenance.revision:
            dataset["revision"] = provenance.revision
        entry: dict[str, Any] = {"dataset": dataset, "value": value, "date": provenance.date}
        if provenance.source_url:
            entry["source"] = {"url": provenance.source_url, "name": provenance.source_name}
        entry["notes"] = provenance.notes
        entries.append(entry)
    return entries


def run_notes(config: Mapping[str, Any], harness_version: str, mode: str) -> str:
    """The ``notes`` of a run: its agent, model, settings, the scoring mode and the harness version.

    Args:
        config: a results line's ``config`` (``agent``, ``model``, the agent's recorded options, ``model_options``).
        harness_version: the madqa version that scored the run.
        mode: the accuracy mode (``anls`` or ``judge``).

    Returns:
        One line, e.g. ``agent bm25; model openai:gpt-4.1; options max_steps=10, top_k=5; scored by madqa 0.1.0
        (anls)``.
    """
    skipped = {"agent", "model", "dataset", "split", "model_options"}
    options = ", ".join(f"{k}={config[k]}" for k in sorted(config) if k not in skipped and config[k] is not None)
    model_options = config.get("model_options") or {}
    parts = [f"agent {config.get('agent') or 'unknown'}", f"model {config.get('model') or 'unknown'}"]
    if options:
        parts.append(f"options {options}")
    if isinstance(model_options, Mapping) and model_options:
        parts.append("model options " + ", ".join(f"{k}={model_options[k]}" for k in sorted(model_options)))
    parts.append(f"scored by madqa {harness_version} ({mode})")
    return "; ".join(parts)
