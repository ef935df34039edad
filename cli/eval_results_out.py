"""``madqa evaluate RUN --eval-results DIR``: the run's Hub Eval Results file, ``DIR/.eval_results/madqa.yaml``.

A model repo lists its scores in ``.eval_results/*.yaml`` (huggingface/hub-docs ``eval_results.yaml``); the Hub
shows them on the model page and on the benchmark's leaderboards, one per task of the benchmark's ``eval.yaml``
(:data:`madqa.loading_script.benchmark_eval.BENCHMARK_TASKS`). The entries are built by the pure
:func:`madqa.metric.eval_results.eval_results_entries`; this module decides whether the run may be published and
writes the file. It refuses (one line, exit 2):

- a run that is incomplete (gold questions without a line, items left unscored, lines that failed for an
  infrastructure reason) unless ``--allow-incomplete`` says so, and then the notes say it too;
- a run scored on a split no task of the track is on (``train``), or against a ``--gold`` file, whose split is
  unknown, unless ``--eval-split`` names the task split the gold is;
- a gold without labels (a hidden-label split): never;
- a gold dataset that is not a Hub id (the local sample) unless ``--eval-dataset ORG/NAME`` names the benchmark;
- lines made with different settings (two runs in one file): their notes would describe neither.

Entries of other tasks or benchmarks already in the file are kept; those of the same dataset and task are replaced.
The written file is checked against the schema copy ``metric/eval_results.schema.yaml`` first.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from madqa.cli.errors import UserError

logger = logging.getLogger(__name__)
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


#: Longest ``--source`` URL accepted (it is written into a model repo's YAML).
MAX_SOURCE_CHARS = 2000


def check_source(url: str) -> None:
    """Refuse a ``--source`` that is not a plain http(s) URL: whitespace or control characters (a newline would
    end the value), and a ``user:password@`` part (the URL is published on a model page)."""
    if len(url) > MAX_SOURCE_CHARS or not re.fullmatch(r"https?://[^\s/?#]+(?:[/?#]\S*)?", url):
        raise UserError(f"--source {url[:200]!r}: expected the http(s) URL where the traces are published")
    if not url.isprintable():
        raise UserError(f"--source {url[:200]!r}: holds control characters")
    if "@" in url.split("://", 1)[1].split("/", 1)[0]:
        raise UserError("--source: the URL holds credentials (user@ or user:password@); they would be published")


@dataclass(frozen=True)
class EvalResultsRequest:
    """The ``--eval-results`` flags: where to write, and what the user states about the run."""

    out_dir: Path
    source: str | None = None
    dataset_id: str | None = None
    split: str | None = None
    allow_incomplete: bool = False
    today: str | None = None  # ISO date; None: today (UTC)


def add_eval_results_arguments(parser: Any) -> None:
    """The ``--eval-results`` group of ``madqa evaluate``."""
    group = parser.add_argument_group("Hub Eval Results (a model repo's .eval_results/madqa.yaml)")
    group.add_argument(
        "--eval-results",
        type=Path,
        metavar="DIR",
        help="write DIR/.eval_results/madqa.yaml: one entry per benchmark task this run scores (DIR: a model "
        "repo's folder; see docs/publishing.md for the pull request)",
    )
    group.add_argument("--source", metavar="URL", help="where the run's traces or logs are published (its link)")
    group.add_argument(
        "--eval-dataset", metavar="ORG/NAME", help="the benchmark's Hub id (default: the gold's dataset, if a Hub id)"
    )
    group.add_argument(
        "--eval-split",
        metavar="SPLIT",
        help="the task split the gold is (needed with --gold, or to publish a run scored on another split)",
    )
    group.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="publish a run with missing, unscored or infrastructure-failed questions (the notes say so)",
    )


def request_of(args: Any) -> EvalResultsRequest | None:
    """The request of parsed ``evaluate`` arguments (``None`` without ``--eval-results``, whose flags need it)."""
    if args.eval_results is None:
        given = [f for f, v in (("--source", args.source), ("--eval-dataset", args.eval_dataset)) if v]
        given += [
            f for f, v in (("--eval-split", args.eval_split), ("--allow-incomplete", args.allow_incomplete)) if v
        ]
        if given:
            raise UserError(f"{', '.join(given)} only apply with --eval-results DIR")
        return None
    if getattr(args, "compare", None):
        raise UserError("--eval-results writes the results of one run: leave out --compare")
    if args.source is not None:
        check_source(args.source)
    return EvalResultsRequest(
        args.eval_results, args.source, args.eval_dataset, args.eval_split, args.allow_incomplete
    )


def harness_version() -> str:
    """The installed madqa's version (``unknown`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("madqa")
    except PackageNotFoundError:
        return "unknown"


def today(request: EvalResultsRequest) -> str:
    """The entries' date: the request's, else today (UTC)."""
    return request.today or dt.datetime.now(dt.UTC).date().isoformat()


def _lines(path: Path) -> list[dict[str, Any]]:
    from madqa.cli.recorded_gold import read_text

    rows = []
    for text in read_text(path).splitlines():
        try:
            row = json.loads(text)
        except ValueError:
            continue  # the scoring already reported it
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _settings(path: Path, lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    configs = {json.dumps(line.get("config") or {}, sort_keys=True, default=str) for line in lines}
    if len(configs) > 1:
        raise UserError(f"{path}: its lines were made with {len(configs)} different settings; publish one run a file")
    return json.loads(configs.pop()) if configs else {}


def _incomplete(report: Mapping[str, Any], lines: Sequence[Mapping[str, Any]]) -> list[str]:
    from madqa.agents.harness.errors import RETRYABLE

    failed = sum(1 for line in lines if line.get("error") and line.get("error_kind") in RETRYABLE)
    counts = (
        (report.get("missing") or 0, "gold question(s) without a line"),
        (report.get("unscored") or 0, "item(s) unscored"),
        (failed, "line(s) failed for an infrastructure reason"),
    )
    return [f"{n} {what}" for n, what in counts if n]


def task_split(request: EvalResultsRequest, choice: Any, tracks_splits: Sequence[str]) -> str:
    """The task split a run is published as (``choice``: its gold's ``split`` and ``gold`` file, if any)."""
    splits = ", ".join(sorted(set(tracks_splits)))
    if request.split is not None:
        if request.split not in tracks_splits:
            raise UserError(f"--eval-split {request.split}: the benchmark's tasks of this track are on {splits}")
        return request.split
    if choice.gold is not None:
        raise UserError(
            f"the run was scored against the --gold file {choice.gold}, whose split is unknown: name the task "
            "split it holds with --eval-split"
        )
    if choice.split not in tracks_splits:
        raise UserError(
            f"the run was scored on split {choice.split!r}; the benchmark's tasks of this track are on {splits} "
            "(--eval-split SPLIT states which task's split the gold is)"
        )
    return str(choice.split)


def hub_dataset_id(request: EvalResultsRequest, gold: Mapping[str, Any] | None) -> str:
    """The benchmark's Hub id: ``--eval-dataset``, else the gold dataset's name when it is one."""
    if request.dataset_id is not None:
        if not HUB_ID.match(request.dataset_id):
            raise UserError(f"--eval-dataset {request.dataset_id!r}: expected a Hub dataset id ORG/NAME")
        return request.dataset_id
    name = (gold or {}).get("name")
    if isinstance(name, str) and HUB_ID.match(name):
        return name
    raise UserError(
        f"the gold dataset {name or 'of the --gold file'} is not a Hub dataset: name the benchmark's Hub id with "
        "--eval-dataset ORG/NAME"
    )


def _merged(target: Path, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import yaml  # here, not at import: every `madqa evaluate` imports this module, few write the file

    if not target.is_file():
        return entries
    try:
        existing = yaml.safe_load(target.read_text(encoding="utf-8")) or []
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{target}: cannot be read as YAML ({str(exc).splitlines()[0]}); move it aside") from None
    if not isinstance(existing, list):
        raise UserError(f"{target}: expected a list of entries; move it aside")
    new = {(e["dataset"]["id"], e["dataset"]["task_id"]) for e in entries}
    kept = [
        e
        for e in existing
        if not (
            isinstance(e, dict) and isinstance(d := e.get("dataset"), dict) and (d.get("id"), d.get("task_id")) in new
        )
    ]
    return [*kept, *entries]


def write_eval_results(
    request: EvalResultsRequest, results: Path, report: Mapping[str, Any], choice: Any, mode: str
) -> Path:
    """Check the run and write ``request.out_dir/.eval_results/madqa.yaml``; returns its path."""
    from madqa.loading_script.benchmark_eval import BENCHMARK_TASKS, QA_TRACK, tasks_for
    from madqa.metric import eval_results as er

    if not report.get("n") or report.get("n_scored", 0) == 0:
        raise UserError(f"{results}: no question of the gold was scored; nothing to publish")
    split = task_split(request, choice, [t.split for t in BENCHMARK_TASKS if t.track == QA_TRACK])
    lines = _lines(results)
    settings = _settings(results, lines)
    incomplete = _incomplete(report, lines)
    if incomplete and not request.allow_incomplete:
        raise UserError(f"{results}: the run is incomplete ({'; '.join(incomplete)}); finish it or --allow-incomplete")
    gold = (report.get("provenance") or {}).get("gold")
    dataset_id = hub_dataset_id(request, gold)
    notes = er.run_notes({k: v for k, v in settings.items() if k != "log"}, harness_version(), mode)
    if choice.gold is not None or split != choice.split:
        notes += f"; gold: {choice.described()} as split {split}"
    if incomplete:
        notes += f"; INCOMPLETE: {'; '.join(incomplete)}"
    provenance = er.ResultsProvenance(dataset_id, (gold or {}).get("revision"), today(request), notes, request.source)
    tasks = [er.ResultsTask(t.id, t.metric) for t in tasks_for(QA_TRACK, split)]
    return write_entries(request, er.eval_results_entries(report, tasks, provenance))


def write_entries(request: EvalResultsRequest, entries: list[dict[str, Any]]) -> Path:
    """Merge ``entries`` into ``request.out_dir/.eval_results/madqa.yaml``, check the file, write it; its path."""
    from madqa.loading_script.schema_check import SchemaViolation, check, load_schema
    from madqa.metric import eval_results as er

    target = request.out_dir / er.EVAL_RESULTS_DIR / er.EVAL_RESULTS_FILE
    document = _merged(target, entries)
    try:
        check(document, load_schema("madqa.metric", er.SCHEMA_FILE))
    except SchemaViolation as exc:
        raise UserError(f"{target}: {exc}") from None
    import yaml

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    tmp.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    tmp.replace(target)
    logger.info("wrote %d Eval Results entr%s to %s", len(entries), "y" if len(entries) == 1 else "ies", target)
    return target


def write_retrieval_results(
    request: EvalResultsRequest,
    results: Mapping[str, Mapping[str, Any]],
    *,
    split: str,
    dataset: str | None,
    limited: bool,
    depth: int,
) -> Path:
    """``madqa retrieval --eval-results DIR``: one retriever's retrieval-track entries (its page-level measures)."""
    from types import SimpleNamespace

    from madqa.loading_script.benchmark_eval import BENCHMARK_TASKS, RETRIEVAL_TRACK, tasks_for
    from madqa.loading_script.release import dataset_provenance
    from madqa.metric import eval_results as er

    if len(results) != 1:
        raise UserError(f"--eval-results publishes one retriever's results; {len(results)} were given")
    ((name, summary),) = results.items()
    splits = [t.split for t in BENCHMARK_TASKS if t.track == RETRIEVAL_TRACK]
    task = task_split(request, SimpleNamespace(split=split, gold=None), splits)
    if limited and not request.allow_incomplete:
        raise UserError("--limit ranks part of the split: leave it out, or state it with --allow-incomplete")
    gold = dataset_provenance(dataset)
    dataset_id = hub_dataset_id(request, gold)
    tasks = tasks_for(RETRIEVAL_TRACK, task)
    report = {t.metric: summary["page"]["all"][t.metric]["mean"] for t in tasks}
    notes = f"retriever {name}; page level, ranked to depth {depth}; scored by madqa {harness_version()} (ir-measures)"
    if task != split:
        notes += f"; gold: split {split!r} as split {task}"
    if limited:
        notes += "; INCOMPLETE: --limit ranked part of the split"
    provenance = er.ResultsProvenance(dataset_id, gold.get("revision"), today(request), notes, request.source)
    return write_entries(
        request, er.eval_results_entries(report, [er.ResultsTask(t.id, t.metric) for t in tasks], provenance)
    )
