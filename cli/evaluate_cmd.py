"""``madqa evaluate``: score a results JSONL file against a labelled split (or ``--gold`` file).

Prints a readable table, or with ``--json`` one JSON object on stdout (the report of the first results file; with
``--compare`` it also holds ``compare``: the other systems' reports and the pairwise Cohen's κ). ``--ctt`` writes
Classical Test Theory item statistics and test/dev/train splits built from all the systems given.

Gold: ``--gold PATH.jsonl`` (labelled question records; every record is used, ``--split`` is ignored), or
``madqa.loading_script.load.load_gold(split, dataset)`` with ``--dataset PATH`` (a dataset folder, a Hub id or
``sample``). For ``test`` it reads the private labels file. Without ``--dataset``/``--split`` the gold is the one the
file was run on: the ``dataset.name`` and ``config.split`` its lines record
(:func:`madqa.cli.recorded_gold.choose_gold`; ``madqa run`` writes both), else ``MADQA_DATASET`` or the local sample,
and ``dev``. A file whose lines name two datasets or splits, or none of whose lines matches a gold question, is refused
(exit 2, one line naming the file and the dataset and split it was scored against): a 0 % report of the wrong gold is
never printed.

Provenance: each results file's lines are compared with the gold's dataset
(:func:`madqa.loading_script.release.dataset_provenance`; unknown with ``--gold``) and the record schema this
metric knows; lines from another dataset name or revision, or of a newer ``schema_version``, draw one WARNING with
counts, and every report gets a ``provenance`` entry (:func:`madqa.metric.report.provenance_summary`). Lines
without provenance (older files) are never rejected.

Repeated runs: a file written by ``madqa run --repeats K`` (every line with ``repeat``) is scored repeat by repeat;
the report adds ``repeats`` (per-repeat accuracy, mean ± SD and min–max, pass@k, pass^k, consistency:
:mod:`madqa.cli.evaluate_repeats`). Such a file is evaluated alone (no ``--compare``).

Hub Eval Results: ``--eval-results DIR`` writes ``DIR/.eval_results/madqa.yaml``, the run's entries for a model
repo (:mod:`madqa.cli.eval_results_out`, which says what it refuses to publish).

Judge: ``--judge SPEC`` is a model spec of the agents package (``madqa.agents.models.factory.make_model``), or
``py:MODULE:NAME`` for any importable ``complete(prompt) -> str`` callable (or object with ``generate``).

:func:`evaluate` is the same scoring from Python: plain arguments, the ``--json`` report as a dict.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from madqa.cli import conventions
from madqa.cli.errors import UserError
from madqa.cli.evaluate_repeats import (
    format_repeats,
    refuse_repeats,
    repeat_parts,
    repeats_section,
    warn_on_repeat_gaps,
)
from madqa.cli.recorded_gold import GoldChoice, choose_gold
from madqa.cli.recorded_gold import read_text as _read_text

HELP = "score a results JSONL file: accuracy, Page/Doc F1, Kuiper, breakdowns (paper §3)"
EXAMPLES = (
    "madqa evaluate results.jsonl --split dev",
    "madqa evaluate results.jsonl --gold gold.jsonl --json --per-item",
    "madqa evaluate a.jsonl --compare b.jsonl c.jsonl --ctt ctt.json",
    "madqa evaluate results.jsonl --mode judge --judge openai:gpt-4.1 --calibration judge_calibration.json",
)

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``evaluate`` arguments."""
    parser.add_argument("results", type=Path, help="results JSONL (public harness format)")
    conventions.add_gold_arguments(parser, recorded_default=True)
    parser.add_argument("--mode", choices=("anls", "judge"), default="anls", help="accuracy mode")
    parser.add_argument("--judge", metavar="SPEC", help="judge model spec, or py:MODULE:CALLABLE")
    parser.add_argument("--judge-cache", type=Path, help="verdict cache file (default: MADQA_HOME/judge_cache.jsonl)")
    parser.add_argument("--judge-workers", type=int, default=8, help="concurrent judge calls")
    parser.add_argument("--judge-retries", type=int, default=3, help="retries per judge call")
    parser.add_argument("--api-base", help="judge model server URL (openai:/litellm: judge specs)")
    from madqa.cli.model_options import add_model_option_argument

    add_model_option_argument(parser)
    parser.add_argument("--calibration", type=Path, help="judge calibration file from `madqa calibrate`")
    conventions.add_kuiper_arguments(parser)
    parser.add_argument("--max-budget", type=int, help="largest step budget of the budget curve")
    parser.add_argument(
        "--compare",
        nargs="+",
        type=Path,
        default=[],
        metavar="OTHER.jsonl",
        help="more results files: also report them and Cohen's kappa between systems",
    )
    parser.add_argument("--ctt", type=Path, metavar="OUT.json", help="write CTT item statistics and splits")
    parser.add_argument("--ctt-test-size", type=int, default=500, help="CTT test split size")
    parser.add_argument("--ctt-dev-size", type=int, default=200, help="CTT dev split size")
    parser.add_argument("--per-item", action="store_true", help="include per-item scores in --json output")
    conventions.add_json_flag(parser)
    from madqa.cli.eval_results_out import add_eval_results_arguments

    add_eval_results_arguments(parser)


def scoring_options(args: argparse.Namespace) -> dict[str, Any]:
    """The gold labels and bootstrap settings parsed by ``evaluate``, ``compare`` and ``figures``, as the keyword
    arguments their library functions share."""
    return {
        "split": args.split,
        "dataset": args.dataset,
        "gold": args.gold,
        "max_budget": args.max_budget,
        "resamples": args.resamples,
        "seed": args.seed,
        "kuiper_order": args.kuiper_order,
    }


def load_references(split: str = "dev", dataset: str | None = None, gold: Path | None = None) -> list[Any]:
    """Gold references: the labelled questions of ``gold``, else ``split`` of ``dataset`` (module docstring)."""
    from madqa.metric.inputs import InputError, parse_references, read_jsonl_text

    try:
        if gold is not None:
            rows = read_jsonl_text(_read_text(gold), str(gold))
            return parse_references([r for _, r in rows], str(gold))
        try:
            from madqa.loading_script import load
        except ImportError:
            raise UserError("the dataset loader is not available; pass --gold PATH.jsonl") from None
        unavailable = getattr(load, "DatasetUnavailableError", RuntimeError)
        try:
            records = load.load_gold(split, dataset)
        except (unavailable, FileNotFoundError, ValueError) as exc:
            raise UserError(f"cannot load gold for split {split!r}: {exc}") from None
        return parse_references(records, f"split {split} of {dataset or 'the default dataset'}")
    except InputError as exc:
        hint = " (the public test split has no labels: use the private labels file)" if split == "test" else ""
        raise UserError(f"{exc}{hint}") from None


def resolve_judge(spec: str, options: dict[str, Any] | None = None) -> Any:
    """A judge object from ``--judge``: ``py:MODULE:NAME`` or a model spec of the agents package."""
    if spec.startswith("py:"):
        from madqa.agents.harness.resolve import load_object

        try:
            return load_object(spec)
        except ValueError as exc:
            raise UserError(f"--judge {spec}: {exc}") from None
    try:
        from madqa.agents.models.factory import make_model
    except ImportError:
        hint = "use --judge py:MODULE:CALLABLE"
        raise UserError(f"--judge SPEC needs madqa.agents.models.factory (not available); {hint}") from None
    try:
        return make_model(spec, **(options or {}))
    except (ValueError, KeyError) as exc:
        raise UserError(f"--judge {spec}: {exc}") from None


def _judge(
    mode: str, spec: str | None, cache: Path | None, workers: int, retries: int, model_options: dict[str, Any]
) -> Any:
    if mode != "judge":
        return None
    if not spec:
        raise UserError("--mode judge needs --judge SPEC")
    from madqa.metric.judge import Judge

    if cache is None:
        from madqa.loading_script.paths import madqa_home

        cache = madqa_home() / "judge_cache.jsonl"
    return Judge(resolve_judge(spec, model_options), spec, cache, workers=workers, retries=retries)


def judge_prices(scorer: Any) -> Any:
    """The price table of the judge's cost (the shipped one), ``None`` without a judge."""
    from madqa.cli.judge_usage import shipped_prices

    return shipped_prices() if scorer is not None else None


def _calibration(path: Path | None) -> Any:
    from madqa.metric.calibration_inputs import parse_calibration
    from madqa.metric.inputs import InputError, load_json_line

    if path is None:
        return None  # the judge's own: the paper's for the paper's judge, else none (raw)
    try:
        text = _read_text(path)
        return parse_calibration(load_json_line(text, str(path)), str(path))
    except InputError as exc:
        raise UserError(str(exc)) from None


def gold_dataset(dataset: str | None = None, gold: Path | None = None) -> Any:
    """The gold's :class:`~madqa.metric.schema.DatasetRef`, or ``None`` when unknown (a ``gold`` file)."""
    from madqa.metric.schema import DatasetRef

    if gold is not None:
        return None
    try:
        from madqa.loading_script.release import dataset_provenance
    except ImportError:
        return None
    found = dataset_provenance(dataset)
    return DatasetRef(found.get("name"), found.get("revision"))


def check_provenance(path: Path, predictions: list[Any], gold: Any) -> dict[str, Any]:
    """The file's provenance summary; one WARNING when lines come from another dataset or a newer schema."""
    from madqa.metric.report import provenance_summary

    summary = provenance_summary(predictions, gold)
    problems = []
    if summary["mismatched"]:
        others = {
            f"{g['dataset']['name']}@{g['dataset']['revision']}"
            for g in summary["seen"]
            if g["dataset"] is not None and g["dataset"] != summary["gold"]
        }
        seen = ", ".join(sorted(others)[:3]) or "several"
        problems.append(
            f"{summary['mismatched']} of {len(predictions)} line(s) were produced on another dataset "
            f"than the gold ({gold.name}@{gold.revision}; the lines name {seen})"
        )
    if summary["newer_schema"]:
        problems.append(
            f"{summary['newer_schema']} line(s) have a schema_version newer than "
            f"{summary['schema_version']}, the newest this metric knows (update madqa)"
        )
    if problems:
        logger.warning("%s: %s; scores may not be comparable", path, "; ".join(problems))
    return summary


def _score_file(
    path: Path, references: list[Any], mode: str, judge: Any, gold: Any, choice: GoldChoice, text: str | None = None
) -> Any:
    """Parse and score one results file (``text``: its text, else read here; one repeat's lines of a file of
    repeated runs); returns ``(scored run, provenance summary, input notes)``.

    What the parser read leniently (no ``answer`` key, pages above the cap, misspelt fields) is logged as one
    WARNING per message, the same messages the report's ``warnings`` holds.
    """
    from madqa.metric.inputs import InputError, parse_results
    from madqa.metric.report import score_predictions

    try:
        parsed = parse_results(_read_text(path) if text is None else text, str(path))
        predictions = parsed.predictions
        for warning in parsed.notes.warnings():
            logger.warning("%s", warning)
        run = score_predictions(predictions, references, mode=mode, judge=judge)
    except InputError as exc:
        if exc.count == 1:
            raise UserError(exc.problems[0]) from None
        for problem in exc.problems:
            logger.error("%s", problem)
        listed = "listed above" if exc.count == len(exc.problems) else f"the first {len(exc.problems)} listed above"
        raise UserError(f"{path}: {exc.count} problems ({listed}); nothing was scored") from None
    m = run.matching
    choice.refuse_unmatched(path, len(predictions), len(m.missing_ids), len(references))
    if m.matched_by_question:
        logger.warning("%s: %d line(s) had no id and were matched by question text", path, m.matched_by_question)
    if m.unknown:
        logger.warning(
            "%s: %d line(s) match no gold question and are ignored: %s",
            path,
            len(m.unknown),
            ", ".join(m.unknown[:5]) + (" …" if len(m.unknown) > 5 else ""),
        )
    if m.missing_ids:
        logger.warning("%s: %d gold question(s) have no prediction (scored incorrect)", path, len(m.missing_ids))
    unscored = sum(1 for it in run.items if it.score is None)
    if unscored:
        logger.warning("%s: %d item(s) unscored after judge failures", path, unscored)
    return run, check_provenance(path, predictions, gold), parsed.notes


def _write_ctt(out: Path, runs: dict[str, Any], references: list[Any], test_size: int, dev_size: int) -> None:
    import numpy as np

    from madqa.metric.ctt import build_splits, item_statistics

    if len(runs) < 2:
        raise UserError("--ctt needs at least two systems (use --compare)")
    matrix = np.array([[bool(it.correct) for it in run.items] for run in runs.values()], dtype=np.int64)
    p, r = item_statistics(matrix)
    splits = build_splits(matrix, test_size, dev_size)
    ids = [ref.id for ref in references]
    data = {
        "systems": list(runs),
        "items": [
            {"id": i, "p": float(pj), "r_pbis": None if np.isnan(rj) else float(rj)}
            for i, pj, rj in zip(ids, p, r, strict=True)
        ],
        "test": [ids[j] for j in splits.test],
        "test_sentinel": [ids[j] for j in splits.test_sentinel],
        "dev": [ids[j] for j in splits.dev],
        "train": [ids[j] for j in splits.train],
        "spearman_test_vs_all": splits.spearman_test_vs_all,
    }
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    logger.info(
        "wrote CTT splits to %s (test %d, dev %d, train %d; Spearman ρ %s)",
        out,
        len(splits.test),
        len(splits.dev),
        len(splits.train),
        splits.spearman_test_vs_all,
    )


def evaluate(
    results: str | Path,
    *,
    compare: Sequence[str | Path] = (),
    split: str | None = None,
    dataset: str | None = None,
    gold: str | Path | None = None,
    mode: str = "anls",
    judge: str | None = None,
    judge_cache: str | Path | None = None,
    judge_workers: int = 8,
    judge_retries: int = 3,
    model_options: dict[str, Any] | None = None,
    calibration: str | Path | None = None,
    kuiper_order: str = "block",
    resamples: int = 1000,
    seed: int = 0,
    max_budget: int | None = None,
    per_item: bool = False,
    ctt: str | Path | None = None,
    ctt_test_size: int = 500,
    ctt_dev_size: int = 200,
) -> dict[str, Any]:
    """Score a results file: the report ``madqa evaluate --json`` prints, as a dict.

    The gold is ``gold`` (a labelled questions JSONL) or the ``split`` of ``dataset``; ``None`` for either: the one the
    files' lines record (:func:`~madqa.cli.recorded_gold.choose_gold`), else the default dataset and ``dev``. With
    ``compare`` (more results files) the report also holds ``compare``: every file's report and Cohen's κ between them;
    ``ctt`` writes Classical Test Theory item statistics and splits there. ``mode="judge"`` scores with ``judge`` (a
    model spec or ``py:MODULE:NAME``; ``model_options``: its provider settings). Raises
    :class:`~madqa.cli.errors.UserError` for a mistake in the input, with the one-line message the command prints.
    """
    from madqa.cli.judge_usage import judge_section, judge_usage_delta
    from madqa.metric.report import ReportOptions, build_report, compare_runs

    paths = [Path(results), *(Path(p) for p in compare)]
    if len({str(p) for p in paths}) != len(paths):
        raise UserError("the same results file is given twice")
    if resamples < 1:
        raise UserError("--resamples must be positive")
    choice = choose_gold(paths, split, dataset, None if gold is None else Path(gold))
    try:
        references = load_references(choice.split, choice.dataset, choice.gold)
    except UserError as exc:
        raise choice.load_failed(exc) from None
    calibration_found = _calibration(None if calibration is None else Path(calibration))
    cache = None if judge_cache is None else Path(judge_cache)
    scorer = _judge(mode, judge, cache, judge_workers, judge_retries, model_options or {})
    gold_ref = gold_dataset(choice.dataset, choice.gold)
    parts = _repeats_of(paths, ctt)
    options = ReportOptions(
        mode=mode,
        calibration=calibration_found,
        kuiper_order=kuiper_order,
        n_resamples=resamples,
        seed=seed,
        max_budget=max_budget,
        include_items=per_item,
    )
    judged: dict[Any, dict[str, Any]] = {}  # the judge's calls, tokens and cost per scored run (or repeat)
    prices = judge_prices(scorer)

    def score(path: Path, key: Any, text: str | None = None) -> Any:
        before = scorer.usage() if scorer is not None else {}
        scored_file = _score_file(path, references, mode, scorer, gold_ref, choice, text)
        if scorer is not None:
            judged[key] = {"judge_usage": judge_section(str(judge), judge_usage_delta(before, scorer.usage()), prices)}
        return scored_file

    if parts is not None:
        repeat_runs = {r: score(paths[0], r, t) for r, t in parts.items()}
        repeat_reports = {
            r: {**build_report(run, references, options, notes), "provenance": provenance, **judged.get(r, {})}
            for r, (run, provenance, notes) in repeat_runs.items()
        }
        section = repeats_section(parts, {r: run for r, (run, _, _) in repeat_runs.items()}, repeat_reports)
        return {**repeat_reports[section["report_of_repeat"]], "repeats": section}
    scored = {str(p): score(p, str(p)) for p in paths}
    runs = {name: run for name, (run, _, _) in scored.items()}
    reports = {
        name: {
            **build_report(r, references, options, scored[name][2]),
            "provenance": scored[name][1],
            **judged.get(name, {}),
        }
        for name, r in runs.items()
    }
    main = dict(reports[str(paths[0])])
    if compare:
        main["compare"] = {**compare_runs(runs), "reports": reports}
    if ctt is not None:
        _write_ctt(Path(ctt), runs, references, ctt_test_size, ctt_dev_size)
    return main


def _repeats_of(paths: list[Path], ctt: str | Path | None) -> dict[int, str] | None:
    """The first file's text per repeat when it holds repeated runs (``madqa run --repeats``), else ``None``;
    repeated runs are evaluated alone (no ``--compare``, no ``--ctt``)."""
    parts = repeat_parts(paths[0], _read_text(paths[0]))
    for other in paths[1:]:
        refuse_repeats(other, _read_text(other), "evaluate it alone, without --compare")
    if parts is not None and (len(paths) > 1 or ctt is not None):
        raise UserError(
            f"{paths[0]}: holds repeated runs (madqa run --repeats); evaluate it alone (no --compare/--ctt)"
        )
    if parts is not None:
        warn_on_repeat_gaps(paths[0], sorted(parts))
    return parts


def run(args: argparse.Namespace) -> int:
    """Score the results file(s) and print the report."""
    from madqa.cli.eval_results_out import request_of, write_eval_results
    from madqa.cli.model_options import model_options_of
    from madqa.cli.table import format_kappa, format_report

    eval_results = request_of(args)  # its flags are checked before any scoring
    main = evaluate(
        args.results,
        compare=args.compare,
        mode=args.mode,
        judge=args.judge,
        judge_cache=args.judge_cache,
        judge_workers=args.judge_workers,
        judge_retries=args.judge_retries,
        model_options=model_options_of(args),
        calibration=args.calibration,
        per_item=args.per_item,
        ctt=args.ctt,
        ctt_test_size=args.ctt_test_size,
        ctt_dev_size=args.ctt_dev_size,
        **scoring_options(args),
    )
    if eval_results is not None:
        choice = choose_gold([args.results], args.split, args.dataset, args.gold)
        write_eval_results(eval_results, args.results, main, choice, args.mode)
    if args.json:
        sys.stdout.write(json.dumps(main, allow_nan=False, ensure_ascii=False) + "\n")
        return 0
    reports = main["compare"]["reports"] if args.compare else {str(args.results): main}
    if "repeats" in main:
        sys.stdout.write(format_repeats(main["repeats"]) + "\n")
    sys.stdout.write("\n\n".join(format_report(rep, f"== {name}") for name, rep in reports.items()) + "\n")
    if args.compare:
        sys.stdout.write("\n" + format_kappa(main["compare"]) + "\n")
    return 0
