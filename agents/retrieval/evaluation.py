"""How well retrievers find the gold evidence pages before any model runs (the paper's "retrieval bottleneck").

Measures (computed by ``ir-measures`` over ``pytrec_eval``, not by hand): Recall@1/5/10, nDCG@5/10 and MRR@10
(``RR@10``), at two levels: **page** (a hit is a gold evidence page; ids ``DOCUMENT#pPAGE``) and **document** (the
ranking collapsed to documents, each at the rank of its best page; a hit is a document holding evidence). Every
question counts: one whose ranking is empty scores 0 (``pytrec_eval`` would skip it). Each mean comes with a 95 %
t-interval over questions (mean ± t₀.₉₇₅,ₙ₋₁ · sd / √n), overall and per hop type.

The **oracle gap** is the share of questions whose evidence no retriever of the comparison puts in its top ``k``
(``none_in_top_k``: not one gold page; ``not_all_in_top_k``: some gold page missing), i.e. what no choice among
them could retrieve.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from madqa.agents.search.base import PageHit

#: (label, ir-measures name) of every measure, in table order.
MEASURES: tuple[tuple[str, str], ...] = (
    ("R@1", "R@1"), ("R@5", "R@5"), ("R@10", "R@10"), ("nDCG@5", "nDCG@5"), ("nDCG@10", "nDCG@10"),
    ("MRR@10", "RR@10"),
)  # fmt: skip
LEVELS = ("page", "document")


@dataclass(frozen=True)
class Question:
    """What a retrieval evaluation needs of a labelled question."""

    id: str
    text: str
    evidence: tuple[tuple[str, int], ...]
    hop_type: str


def page_id(document: str, page: int) -> str:
    """The id of a page in qrels and TREC runs: ``DOCUMENT#pPAGE``."""
    return f"{document}#p{page}"


def rank_all(retriever: Any, questions: Sequence[Question], depth: int) -> dict[str, list[PageHit]]:
    """Each question's top ``depth`` pages by ``retriever`` (the question text is the query)."""
    return {q.id: retriever.search(q.text, k=depth) for q in questions}


def _documents(hits: Sequence[PageHit]) -> list[tuple[str, float]]:
    seen: dict[str, float] = {}
    for hit in hits:
        seen.setdefault(hit.document, hit.score)
    return list(seen.items())


def per_query(rankings: Mapping[str, Sequence[PageHit]], questions: Sequence[Question],
              level: str) -> dict[str, dict[str, float]]:
    """measure label → question id → value, for every question (0 where the ranking is empty)."""
    import ir_measures

    qrels, run = [], []
    for q in questions:
        if level == "page":
            gold = {page_id(d, p) for d, p in q.evidence}
            ranked = [(page_id(h.document, h.page), h.score) for h in rankings.get(q.id, [])]
        else:
            gold = {d for d, _ in q.evidence}
            ranked = _documents(rankings.get(q.id, []))
        qrels.extend(ir_measures.Qrel(q.id, doc, 1) for doc in sorted(gold))
        n = len(ranked)  # the score is the rank's (ties in the engine's scores must not reorder the ranking)
        run.extend(ir_measures.ScoredDoc(q.id, doc, float(n - i)) for i, (doc, _) in enumerate(ranked))
    wanted = {name: label for label, name in MEASURES}
    values: dict[str, dict[str, float]] = {label: {q.id: 0.0 for q in questions} for label, _ in MEASURES}
    measures = [ir_measures.parse_measure(name) for _, name in MEASURES]
    for m in ir_measures.iter_calc(measures, qrels, run):
        values[wanted[str(m.measure)]][m.query_id] = float(m.value)
    return values


def mean_ci(values: Sequence[float]) -> dict[str, Any]:
    """Mean with its 95 % t-interval (``None`` bounds for fewer than two values)."""
    from scipy import stats

    n = len(values)
    if not n:
        return {"n": 0, "mean": None, "ci": [None, None]}
    mean = sum(values) / n
    if n < 2:
        return {"n": n, "mean": mean, "ci": [None, None]}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "ci": [max(0.0, mean - half), min(1.0, mean + half)]}


def summarise(rankings: Mapping[str, Sequence[PageHit]], questions: Sequence[Question]) -> dict[str, Any]:
    """Every measure at both levels, overall and per hop type."""
    out: dict[str, Any] = {}
    for level in LEVELS:
        values = per_query(rankings, questions, level)
        groups: dict[str, list[str]] = defaultdict(list)
        for q in questions:
            groups[q.hop_type or "unknown"].append(q.id)
        out[level] = {
            "all": {label: mean_ci(list(values[label].values())) for label, _ in MEASURES},
            "by_hop": {hop: {label: mean_ci([values[label][i] for i in ids]) for label, _ in MEASURES}
                       for hop, ids in sorted(groups.items())},
        }  # fmt: skip
    return out


def oracle_gap(all_rankings: Sequence[Mapping[str, Sequence[PageHit]]], questions: Sequence[Question],
               k: int) -> dict[str, Any]:
    """Share of questions whose evidence none of the rankings has in its top ``k`` (see the module docstring)."""
    none, not_all = [], []
    for q in questions:
        gold = set(q.evidence)
        found: set[tuple[str, int]] = set()
        for rankings in all_rankings:
            found |= {(h.document, h.page) for h in rankings.get(q.id, [])[:k]} & gold
        if not found:
            none.append(q.id)
        if found != gold:
            not_all.append(q.id)
    n = len(questions) or 1
    return {"k": k, "none_in_top_k": len(none) / n, "not_all_in_top_k": len(not_all) / n,
            "none_ids": none}  # fmt: skip


def write_trec_run(path: Path, name: str, rankings: Mapping[str, Sequence[PageHit]]) -> None:
    """The rankings as a TREC run file (``qid Q0 DOCUMENT#pPAGE rank score name``), for reuse in IR tools."""
    tag = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
    lines = []
    for qid in sorted(rankings):
        for rank, hit in enumerate(rankings[qid], start=1):
            lines.append(f"{qid} Q0 {page_id(hit.document, hit.page)} {rank} {hit.score:.6f} {tag}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")


def write_trec_qrels(path: Path, questions: Sequence[Question]) -> None:
    """The gold evidence pages as a TREC qrels file (``qid 0 DOCUMENT#pPAGE 1``)."""
    lines = [f"{q.id} 0 {page_id(d, p)} 1\n" for q in questions for d, p in sorted(set(q.evidence))]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
