"""The task's scorer: the metric's own per-item scoring of the sample's final answer, and inspect metrics.

Each sample is scored as ``madqa evaluate`` scores its results line: the line's scored part (answer, citations,
searches: :func:`.lines.prediction_fields`) is parsed by :func:`madqa.metric.inputs.parse_prediction`, the gold (the
sample's metadata) by :func:`madqa.metric.inputs.parse_reference`, and :func:`madqa.metric.scoring.score_item` gives
the scores. The value is a dict: ``accuracy`` (1 when ANLS* >= 0.5, else 0: the ``anls`` mode), ``anls``,
``page_f1``, ``doc_f1``. Metrics: the mean of each (so the headline numbers are ``madqa evaluate``'s ``accuracy``,
``anls``, ``page_f1`` and ``doc_f1`` over the same questions), the stderr of accuracy, the Kuiper statistic of
accuracy against effort (number of searches; :func:`madqa.metric.kuiper.kuiper_statistic`, ``block`` order, as
``madqa evaluate`` reports ``kuiper``) and the accuracy per hop type (``by_hop_single``, ``by_hop_cross_page``,
``by_hop_cross_doc``). The other breakdowns, the judge mode and the CIs stay with ``madqa evaluate`` on the imported
file.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    Value,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from madqa.agents.integrations.inspect_task.lines import prediction_fields
from madqa.metric.aggregate import mean as plain_mean
from madqa.metric.inputs import parse_prediction, parse_reference
from madqa.metric.kuiper import kuiper_statistic
from madqa.metric.schema import CORRECT_THRESHOLD, HOP_TYPES
from madqa.metric.scoring import score_item

#: The gold fields a sample's metadata carries (with ``id`` and ``question`` they make a gold record).
GOLD_FIELDS = ("answer_variants", "evidence", "hop_type", "domain", "document_category")


@metric
def kuiper() -> Metric:
    """The Kuiper statistic K of correctness against effort (``madqa evaluate``'s ``kuiper``, ``block`` order)."""

    def compute(scores: list[SampleScore]) -> Value:
        rows = [(s.score.metadata or {}).get("steps") for s in scores]
        pairs = [
            (int(st), s.score.as_float() >= CORRECT_THRESHOLD)
            for st, s in zip(rows, scores, strict=True)
            if st is not None
        ]
        return kuiper_statistic([p[0] for p in pairs], [int(p[1]) for p in pairs], "block")

    return compute


@metric
def by_hop() -> Metric:
    """Accuracy per hop type (``madqa evaluate``'s ``by_hop[...].accuracy``); a hop type without samples is left
    out."""

    def compute(scores: list[SampleScore]) -> Value:
        out: dict[str, float] = {}
        for hop in HOP_TYPES:
            values = [s.score.as_float() for s in scores if (s.score.metadata or {}).get("hop_type") == hop]
            value = plain_mean(values)
            if value is not None:
                out[hop] = value
        return out  # type: ignore[return-value]

    return compute


def gold_record(sample_id: Any, question: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The gold record of a sample (its metadata holds the labels)."""
    return {"id": str(sample_id), "question": question, **{k: metadata.get(k) for k in GOLD_FIELDS}}


@scorer(
    metrics={
        "accuracy": [mean(), stderr(), kuiper(), by_hop()],
        "anls": [mean()],
        "page_f1": [mean()],
        "doc_f1": [mean()],
    }
)
def madqa_scorer() -> Scorer:
    """Accuracy (ANLS* >= 0.5), ANLS*, Page F1 and Doc F1 of the sample's final answer (the metric's scoring)."""

    async def score(state: TaskState, target: Target) -> Score:
        where = f"sample {state.sample_id}"
        reference = parse_reference(gold_record(state.sample_id, state.input_text, dict(state.metadata)), where)
        fields = prediction_fields(dict(state.store.items()))
        line = {"id": str(state.sample_id), "question": state.input_text, **fields}
        item = score_item(reference, parse_prediction(line, where))
        answer = fields["answer"]
        cited = ", ".join(f"{c['document']} p.{c['page']}" for c in fields["citations"]) or "none"
        return Score(
            value={
                "accuracy": float(item.score or 0.0),
                "anls": item.anls,
                "page_f1": item.page_f1,
                "doc_f1": item.doc_f1,
            },
            answer=" | ".join(answer) if answer else None,
            explanation=f"ANLS* {item.anls:.3f} against {len(reference.answer_variants)} variant(s); cited {cited}; "
            f"{fields['steps']} search(es)" + (f"; error type {item.error}" if item.error else ""),
            metadata={"steps": item.steps, "hop_type": reference.hop_type, "error_type": item.error},
        )

    return score
