"""Practice-mode feedback: the gold answer, the evidence pages and the item's score, after submitting.

Only for labelled, public splits (dev/train). The app never calls this in test mode, and the study layer keeps no
labels of test questions, so nothing label-derived exists there to leak.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from madqa.loading_script.features import HIDDEN_SPLIT
from madqa.metric.schema import Citation, Prediction, Reference
from madqa.metric.scoring import score_item


def may_reveal(split: str) -> bool:
    """Whether a split's labels may be shown to the person answering (never for the hidden test split)."""
    return split != HIDDEN_SPLIT


def practice_feedback(record: Mapping[str, Any], gold: Mapping[str, Any]) -> dict[str, Any]:
    """Score one human line against its gold row: ANLS*, correct (ANLS* threshold), Page F1, and the gold itself.

    Raises:
        ValueError: ``gold`` is unlabelled (a hidden test row).
    """
    if not gold.get("answer_variants") or not gold.get("evidence"):
        raise ValueError(f"question {gold.get('id')} has no labels to show")
    evidence = tuple(Citation(str(e["document"]), int(e["page"])) for e in gold["evidence"])
    ref = Reference(
        id=str(gold["id"]),
        question=str(gold.get("question") or ""),
        answer_variants=tuple(tuple(v) for v in gold["answer_variants"]),
        evidence=evidence,
        hop_type=gold.get("hop_type") or "single",
    )
    cited = tuple(Citation(str(c["document"]), int(c["page"])) for c in record.get("citations", []))
    pred = Prediction(
        id=ref.id,
        question=ref.question,
        answer=tuple(record.get("answer", [])),
        citations=cited,
        steps=len(record.get("search_history", [])),
    )
    item = score_item(ref, pred)
    return {
        "id": ref.id,
        "answer_variants": [list(v) for v in ref.answer_variants],
        "evidence": [{"document": e.document, "page": e.page} for e in evidence],
        "anls": item.anls,
        "correct": bool(item.correct),
        "page_f1": item.page_f1,
    }


def format_feedback(fb: Mapping[str, Any]) -> str:
    """Markdown of :func:`practice_feedback` for the practice panel."""
    verdict = "correct" if fb["correct"] else "not correct"
    answers = " | ".join("; ".join(v) for v in fb["answer_variants"])
    pages = ", ".join(f"{e['document']} p. {e['page']}" for e in fb["evidence"])
    return (
        f"**Previous question ({fb['id']}): {verdict}** (ANLS* {fb['anls']:.2f}, Page F1 {fb['page_f1']:.2f})\n\n"
        f"Gold answer: {answers}\n\nEvidence: {pages}"
    )


def practice_report(
    run_jsonl: str, gold: Mapping[str, Mapping[str, Any]], *, n_resamples: int = 200
) -> dict[str, Any]:
    """The metric's report of a practice run over the questions it answered (ANLS* mode: offline and free).

    A visitor answers part of a batch, so the run is scored against the gold rows of its answered questions only;
    ``n`` in the report says how many.

    Raises:
        ValueError: the run answered nothing, or answered a question without public labels (a hidden test row).
    """
    from madqa.metric.inputs import parse_references, parse_results_text
    from madqa.metric.report import ReportOptions, evaluate_predictions

    if not run_jsonl.strip():
        raise ValueError("the run has no answered question yet")
    predictions = parse_results_text(run_jsonl, "practice run")
    unlabelled = [p.id for p in predictions if p.id not in gold or not may_reveal_row(gold[p.id])]
    if unlabelled:
        raise ValueError(f"question {unlabelled[0]} has no public labels")
    references = parse_references([gold[p.id] for p in predictions], "practice labels")
    return evaluate_predictions(predictions, references, ReportOptions(n_resamples=n_resamples))


def may_reveal_row(gold: Mapping[str, Any]) -> bool:
    """Whether a gold row carries labels (answer variants and evidence) at all."""
    return bool(gold.get("answer_variants")) and bool(gold.get("evidence"))
