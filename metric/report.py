"""Score a system against the gold set and assemble the JSON report (plain dicts, lists and numbers).

The flow is: :func:`score_predictions` (match, ANLS*/F1 per item, judge verdicts through an injected batch
judge) then :func:`build_report` (aggregates, as one :class:`ReportOptions` value says). :func:`evaluate_predictions`
does both. No file or network I/O
happens here; the judge is whatever callable the caller passes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .accuracy import calibration_for, calibration_summary, summarize_accuracy
from .aggregate import breakdown, budget_curve, error_breakdown, kappa_matrix, mean, wasted_effort_ratio
from .judge import JudgeOutcome, JudgeRequest
from .kuiper import effort_varies, kuiper
from .matching import Matching, match_predictions
from .notes import InputNotes
from .schema import (
    HOP_TYPES,
    METRIC_VERSION,
    RECORD_SCHEMA_VERSION,
    VERDICT_SCORES,
    Calibration,
    DatasetRef,
    ItemScore,
    KuiperOrder,
    Mode,
    Prediction,
    Reference,
)
from .scoring import anls_star, score_item

BatchJudge = Callable[[Sequence[JudgeRequest]], Sequence[JudgeOutcome]]


@dataclass(frozen=True)
class ReportOptions:
    """How a run is scored and aggregated: the metric's keyword arguments other than the judge, in one value.

    Attributes:
        mode: ``"anls"`` (offline) or ``"judge"`` (verdicts of an LLM judge, bias-corrected where the judge has a
            calibration).
        calibration: the judge's sensitivity/specificity estimate (judge mode only); ``None``: the judge's own, the
            paper's for the paper's judge and none (raw accuracy) for another (:func:`.accuracy.calibration_for`).
        kuiper_order: ``"block"`` (independent of line order) or ``"file"`` (the public harness's tie order; its
            value only where the harness sees the same items and efforts, see :mod:`.kuiper`).
        n_resamples: bootstrap resamples of the Kuiper confidence interval.
        seed: bootstrap seed.
        max_budget: largest step budget of the budget curve (``None``: the largest observed effort).
        include_items: add the per-item scores under ``"items"``.
    """

    mode: Mode = "anls"
    calibration: Calibration | None = None
    kuiper_order: KuiperOrder = "block"
    n_resamples: int = 1000
    seed: int = 0
    max_budget: int | None = None
    include_items: bool = False


#: The metric's defaults (what ``evaluate``'s ``compute`` uses without keyword arguments).
DEFAULT_OPTIONS = ReportOptions()


@dataclass(frozen=True)
class ScoredRun:
    """Per-item scores of one system (in gold order), how its lines were matched, and the judge's name.

    The judge's name matters in judge mode: the calibration belongs to the judge.
    """

    items: tuple[ItemScore, ...]
    matching: Matching
    judge_calls: int = 0
    judge_name: str | None = None


def score_predictions(
    predictions: Sequence[Prediction | None],
    references: Sequence[Reference],
    *,
    mode: Mode = "anls",
    judge: BatchJudge | None = None,
    matching: Matching | None = None,
) -> ScoredRun:
    """Match predictions to the gold list and score each gold item.

    ``matching`` is :func:`match_predictions`'s result when the caller needed it first (e.g. to refuse unknown lines
    before any gold-dependent work); by default it is computed here.

    Raises:
        InputError: duplicate predictions.
        ValueError: ``judge`` mode without a judge, or an unknown mode.
    """
    if mode not in ("anls", "judge"):
        raise ValueError(f"unknown mode {mode!r} (use 'anls' or 'judge')")
    if mode == "judge" and judge is None:
        raise ValueError("judge mode needs a judge")
    if matching is None:
        matching = match_predictions(predictions, references)
    pairs = list(zip(references, matching.predictions, matching.orders, strict=True))
    anls_values = [0.0 if p is None else anls_star(p.answer, r.answer_variants) for r, p, _ in pairs]
    outcomes: dict[int, JudgeOutcome] = {}
    if mode == "judge" and judge is not None:
        todo: list[int] = []
        requests: list[JudgeRequest] = []
        for i, (ref, pred, _) in enumerate(pairs):
            if pred is not None:
                todo.append(i)
                requests.append(JudgeRequest(ref.question, pred.answer, ref.answer_variants, anls_values[i]))
        outcomes = dict(zip(todo, judge(requests), strict=True))  # one outcome per request
    items = []
    for i, (ref, pred, order) in enumerate(pairs):
        out = outcomes.get(i)
        if out is None:
            items.append(score_item(ref, pred, order=order, anls_value=anls_values[i]))
        else:
            score = VERDICT_SCORES.get(out.verdict)
            items.append(score_item(ref, pred, score=score, source=out.source, order=order, anls_value=anls_values[i]))
    calls = sum(1 for o in outcomes.values() if o.called)
    name = getattr(judge, "model_name", None) if mode == "judge" else None
    return ScoredRun(tuple(items), matching, calls, None if name is None else str(name))


def _clean(value: Any) -> Any:
    """Replace non-finite floats by ``None`` and tuples by lists, recursively (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def build_report(
    run: ScoredRun,
    references: Sequence[Reference],
    options: ReportOptions = DEFAULT_OPTIONS,
    notes: InputNotes | None = None,
) -> dict[str, Any]:
    """Aggregate a scored run into the report (keys documented in the metric card).

    ``notes`` (the parser's :class:`~.notes.InputNotes`) adds ``input_notes`` (its counts) and ``warnings`` (its
    messages); without it both are empty.
    """
    mode, kuiper_order = options.mode, options.kuiper_order
    calibration = calibration_for(run.judge_name, options.calibration) if mode == "judge" else None
    n_resamples, seed = options.n_resamples, options.seed
    items = run.items
    scored = [it for it in items if it.score is not None]
    acc = summarize_accuracy([it.score for it in scored], mode, calibration)  # type: ignore[misc]
    effort_items = [it for it in scored if it.steps is not None]
    kz = kuiper(
        np.array([it.steps for it in effort_items], dtype=np.int64),
        np.array([bool(it.correct) for it in effort_items], dtype=np.int64),
        kuiper_order,
        np.array([it.order for it in effort_items], dtype=np.int64),
        n_resamples=n_resamples,
        seed=seed,
    )
    varies = effort_varies([it.steps for it in effort_items if it.steps is not None])
    sources = Counter(it.source for it in items)
    report: dict[str, Any] = {
        "metric_version": METRIC_VERSION,
        "mode": mode,
        "n": len(items),
        "n_predicted": len(items) - len(run.matching.missing_ids),
        "n_scored": len(scored),
        "missing": len(run.matching.missing_ids),
        "missing_ids": list(run.matching.missing_ids),
        "unknown_ids": list(run.matching.unknown),
        "n_unknown": len(run.matching.unknown),
        "matched_by_question": run.matching.matched_by_question,
        "unscored": len(items) - len(scored),
        "n_partial": sum(1 for it in scored if it.score == 0.5),
        "judge_calls": run.judge_calls,
        "score_sources": dict(sorted(sources.items())),
        "accuracy": acc.accuracy,
        "accuracy_raw": acc.raw,
        "accuracy_ci": acc.ci,
        "accuracy_se": acc.se,
        "accuracy_ci_simplified": acc.ci_simplified,
        "calibration": None if mode == "anls" else calibration_summary(run.judge_name, calibration),
        "anls": mean([it.anls for it in items]),
        "page_f1": mean([it.page_f1 for it in items]),
        "doc_f1": mean([it.doc_f1 for it in items]),
        # no Kuiper value where effort does not vary (n/a: fixed effort, kuiper.effort_varies)
        "kuiper": kz.statistic if varies else None,
        "kuiper_normalized": kz.normalized if varies else None,
        "kuiper_ci": kz.ci if varies else None,
        "kuiper_ci_normalized": kz.ci_normalized if varies else None,
        "kuiper_applicable": varies,
        "kuiper_n": kz.n,
        "kuiper_excluded": len(items) - kz.n,
        "kuiper_order": kuiper_order,
        "kuiper_resamples": n_resamples,
        "kuiper_seed": seed,
        "kuiper_curve": kz.curve,
        "wasted_effort_ratio": wasted_effort_ratio(items),
        "mean_steps": mean([float(it.steps) for it in effort_items if it.steps is not None]),
        "by_hop": breakdown(items, references, lambda r: r.hop_type, mode, calibration, order=HOP_TYPES),
        "by_domain": breakdown(items, references, lambda r: r.domain, mode, calibration),
        "by_category": breakdown(items, references, lambda r: r.document_category, mode, calibration),
        "errors": error_breakdown(items),
        "budget_curve": budget_curve(items, options.max_budget),
        "input_notes": (notes or InputNotes("")).summary(),
        "warnings": [] if notes is None else notes.warnings(),
    }
    if options.include_items:
        report["items"] = [vars(it).copy() for it in items]
    cleaned: dict[str, Any] = _clean(report)
    return cleaned


def evaluate_predictions(
    predictions: Sequence[Prediction | None],
    references: Sequence[Reference],
    options: ReportOptions = DEFAULT_OPTIONS,
    *,
    judge: BatchJudge | None = None,
    notes: InputNotes | None = None,
) -> dict[str, Any]:
    """Score and report in one call (see :func:`score_predictions` and :func:`build_report`)."""
    run = score_predictions(predictions, references, mode=options.mode, judge=judge)
    return build_report(run, references, options, notes)


#: Most distinct (schema version, dataset) groups listed in a provenance summary (the rest are counted).
MAX_PROVENANCE_GROUPS = 10


def _differs(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a != b


def provenance_summary(predictions: Sequence[Prediction], gold: DatasetRef | None = None) -> dict[str, Any]:
    """What a file's lines say they were produced with, against the gold's dataset and the known record schema.

    A line is ``mismatched`` when its dataset name or revision differs from ``gold``'s (a part unknown on either
    side is not compared), ``newer_schema`` when its ``schema_version`` exceeds :data:`RECORD_SCHEMA_VERSION`;
    ``unstated`` lines carry no dataset (written before records had one). ``seen`` lists the most common
    (schema version, dataset) groups with their line counts.
    """
    groups = Counter((p.schema_version, p.dataset) for p in predictions)
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1], repr(kv[0])))
    seen = [
        {"schema_version": version, "dataset": None if ref is None else vars(ref).copy(), "lines": count}
        for (version, ref), count in ranked[:MAX_PROVENANCE_GROUPS]
    ]
    mismatched = 0
    if gold is not None:
        mismatched = sum(
            1
            for p in predictions
            if p.dataset is not None
            and (_differs(p.dataset.name, gold.name) or _differs(p.dataset.revision, gold.revision))
        )
    return {
        "schema_version": RECORD_SCHEMA_VERSION,
        "gold": None if gold is None else vars(gold).copy(),
        "seen": seen,
        "groups": len(groups),
        "mismatched": mismatched,
        "newer_schema": sum(1 for p in predictions if (p.schema_version or 0) > RECORD_SCHEMA_VERSION),
        "unstated": sum(1 for p in predictions if p.dataset is None),
    }


def compare_runs(runs: dict[str, ScoredRun]) -> dict[str, Any]:
    """Cohen's κ matrix between systems on per-item binary correctness (same gold list for all)."""
    outcomes = {name: [it.correct for it in run.items] for name, run in runs.items()}
    return {"systems": list(runs), "kappa": _clean(kappa_matrix(outcomes))}
