"""How well retrievers find the gold evidence pages before any model runs (the paper's "retrieval bottleneck").

Measures (computed by ``ir-measures`` over ``pytrec_eval``, not by hand): Recall@1/5/10, nDCG@5/10 and MRR@10
(``RR@10``), at two levels: **page** (a hit is a gold evidence page; ids ``DOCUMENT#pPAGE``) and **document** (the
ranking collapsed to documents, each at the rank of its best page; a hit is a document holding evidence). The page
level reads each question's top 10 pages (the deepest cut-off); the document level reads a deeper ranking of
``depth`` pages (``madqa retrieval --depth``, default :data:`DEFAULT_DEPTH`), because ten pages often come from
fewer than ten documents (110 of the sample's 203 pages belong to one document). How many documents each
deep ranking held, and how many were cut short by the depth, is reported (``ranked``). The page level is asked
separately, so ``--depth`` never changes it: ``rrf:`` and ``hybrid:`` widen their pools for deeper requests.

Every question counts: one whose ranking is empty scores 0 (``pytrec_eval`` would skip it; ``trec_eval -c``).
The runs are scored with the retriever's **order**, never its raw scores: engines tie (equal BM25 scores, equal
fused RRF sums) and trec_eval orders tied scores by document id, which would silently re-rank them. So a page's
score is ``n + 1 - rank`` (``n`` pages ranked), in the measures and in the TREC runs written for IR tools alike,
and ``trec_eval -c -M 10`` (:data:`TREC_EVAL_COMMAND`) on those files gives the printed table.

Each mean comes with a 95 % **Wilson score interval** (:func:`wilson`), overall and per hop type: exact for 0/1
values (R@1 with one gold page), and conservative for values in [0, 1] (nDCG, MRR, recall over several gold pages),
because a variable in [0, 1] of mean p has variance at most p(1 - p). Unlike a t-interval it does not collapse to
``[1.00, 1.00]`` when every question scores 1.

:func:`missed_by_all` is the share of questions whose evidence no retriever of the comparison puts in its top ``k``:
a retrieval miss rate. It is deliberately not called "oracle gap": the paper's Oracle Gap (~18 %, §5.2) is an
accuracy difference between humans given oracle retrieval and the best agents.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from madqa.agents.corpus.search.base import PageHit

#: (label, ir-measures name) of every measure, in table order.
MEASURES: tuple[tuple[str, str], ...] = (
    ("R@1", "R@1"),
    ("R@5", "R@5"),
    ("R@10", "R@10"),
    ("nDCG@5", "nDCG@5"),
    ("nDCG@10", "nDCG@10"),
    ("MRR@10", "RR@10"),
)
#: The same measures as trec_eval names them (label → trec_eval measure); ``recip_rank`` is MRR@10 under ``-M 10``.
TREC_EVAL_MEASURES: dict[str, str] = {
    "R@1": "recall_1",
    "R@5": "recall_5",
    "R@10": "recall_10",
    "nDCG@5": "ndcg_cut_5",
    "nDCG@10": "ndcg_cut_10",
    "MRR@10": "recip_rank",
}
#: The deepest cut-off of :data:`MEASURES` (trec_eval's ``-M``).
CUTOFF = 10
#: The trec_eval command line that reproduces the table from the written runs (``-c``: a question with no ranking
#: scores 0; ``-M 10``: MRR@10).
TREC_EVAL_COMMAND = "trec_eval -c -M 10 -m recall.1,5,10 -m ndcg_cut.5,10 -m recip_rank QRELS RUN"
#: Pages ranked per question for the document level by default: on the sample (203 pages, one document of 110)
#: 100 pages left 6 of 38 dense rankings with fewer than ten documents; ``ranked`` in the output says how many
#: rankings the depth cut short.
DEFAULT_DEPTH = 1000
LEVELS = ("page", "document")
#: The standard normal quantile of a two-sided 95 % interval.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Question:
    """What a retrieval evaluation needs of a labelled question."""

    id: str
    text: str
    evidence: tuple[tuple[str, int], ...]
    hop_type: str


def questions_from_gold(rows: Sequence[Mapping[str, Any]]) -> list[Question]:
    """The labelled questions (``load_gold`` rows) as :class:`Question` s, in their order: what ``madqa retrieval``
    and the MTEB task (:mod:`madqa.agents.integrations.mteb_task`) both rank pages for."""
    return [
        Question(
            str(r["id"]),
            str(r["question"]),
            tuple((e["document"], int(e["page"])) for e in r["evidence"]),
            str(r.get("hop_type") or ""),
        )
        for r in rows
    ]


def page_id(document: str, page: int) -> str:
    """The id of a page in qrels and TREC runs: ``DOCUMENT#pPAGE``."""
    return f"{document}#p{page}"


def rank_all(retriever: Any, questions: Sequence[Question], depth: int) -> dict[str, list[PageHit]]:
    """Each question's top ``depth`` pages by ``retriever`` (the question text is the query)."""
    return {q.id: retriever.search(q.text, k=depth) for q in questions}


def ranked_ids(hits: Sequence[PageHit], level: str) -> list[str]:
    """The ranking's ids at ``level``, best first: pages, or documents at the rank of their best page."""
    if level == "page":
        return [page_id(h.document, h.page) for h in hits]
    return list(dict.fromkeys(h.document for h in hits))


def gold_ids(question: Question, level: str) -> list[str]:
    """The question's relevant ids at ``level``, sorted."""
    return sorted({page_id(d, p) if level == "page" else d for d, p in question.evidence})


def per_query(
    rankings: Mapping[str, Sequence[PageHit]], questions: Sequence[Question], level: str
) -> dict[str, dict[str, float]]:
    """measure label → question id → value, for every question (0 where the ranking is empty)."""
    import ir_measures

    qrels, run = [], []
    for q in questions:
        qrels.extend(ir_measures.Qrel(q.id, doc, 1) for doc in gold_ids(q, level))
        ranked = ranked_ids(rankings.get(q.id, []), level)
        n = len(ranked)  # the order's score, as written in the TREC runs (see the module docstring)
        run.extend(ir_measures.ScoredDoc(q.id, doc, float(n - i)) for i, doc in enumerate(ranked))
    wanted = {name: label for label, name in MEASURES}
    values: dict[str, dict[str, float]] = {label: {q.id: 0.0 for q in questions} for label, _ in MEASURES}
    measures = [ir_measures.parse_measure(name) for _, name in MEASURES]
    for m in ir_measures.iter_calc(measures, qrels, run):
        values[wanted[str(m.measure)]][m.query_id] = float(m.value)
    return values


def wilson(values: Sequence[float], z: float = Z95) -> dict[str, Any]:
    """The mean of values in [0, 1] with its Wilson score interval (``None`` for no values).

    The interval is every p with ``(mean - p)² ≤ z² p (1 - p) / n``; see the module docstring for why it holds for
    fractional values too.
    """
    n = len(values)
    if not n:
        return {"n": 0, "mean": None, "ci": [None, None]}
    mean = sum(values) / n
    centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(max(0.0, mean * (1 - mean)) / n + z * z / (4 * n * n))
    return {"n": n, "mean": mean, "ci": [max(0.0, centre - half), min(1.0, centre + half)]}


def _sizes(
    rankings: Mapping[str, Sequence[PageHit]], questions: Sequence[Question], level: str, depth: int | None
) -> dict[str, Any]:
    hits = [rankings.get(q.id, []) for q in questions]
    counts = [len(ranked_ids(h, level)) for h in hits]
    if not counts:
        return {"median": None, "min": None, "short": 0, "cut": 0}
    cut = sum(c < CUTOFF and depth is not None and len(h) >= depth for c, h in zip(counts, hits, strict=True))
    return {
        "median": statistics.median(counts),
        "min": min(counts),
        "short": sum(c < CUTOFF for c in counts),
        "cut": cut,
    }


def summarise(
    rankings: Mapping[str, Sequence[PageHit]],
    questions: Sequence[Question],
    deep: Mapping[str, Sequence[PageHit]] | None = None,
    depth: int | None = None,
) -> dict[str, Any]:
    """Every measure at both levels, overall and per hop type: the page level from ``rankings``, the document level
    from ``deep`` (the ``depth`` pages ranked for it; ``rankings`` when not given). ``ranked`` says how many ids the
    level's rankings held: median, fewest, ``short`` (questions with fewer than :data:`CUTOFF`) and ``cut`` (of
    those, the ones whose ranking filled ``depth``: a deeper one might hold more)."""
    out: dict[str, Any] = {}
    groups: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        groups[q.hop_type or "unknown"].append(q.id)
    for level in LEVELS:
        source = rankings if level == "page" or deep is None else deep
        values = per_query(source, questions, level)
        out[level] = {
            "all": {label: wilson(list(values[label].values())) for label, _ in MEASURES},
            "by_hop": {
                hop: {label: wilson([values[label][i] for i in ids]) for label, _ in MEASURES}
                for hop, ids in sorted(groups.items())
            },
            "ranked": _sizes(source, questions, level, None if level == "page" else depth),
        }
    return out


def missed_by_all(
    all_rankings: Sequence[Mapping[str, Sequence[PageHit]]], questions: Sequence[Question], k: int
) -> dict[str, Any]:
    """Share of questions whose evidence none of the rankings has in its top ``k``, with Wilson intervals
    (``none_in_top_k``: not one gold page; ``not_all_in_top_k``: some gold page missing)."""
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
    none_ci = wilson([float(q.id in none) for q in questions])
    not_all_ci = wilson([float(q.id in not_all) for q in questions])
    return {
        "k": k,
        "none_in_top_k": none_ci["mean"] or 0.0,
        "none_ci": none_ci["ci"],
        "not_all_in_top_k": not_all_ci["mean"] or 0.0,
        "not_all_ci": not_all_ci["ci"],
        "none_ids": none,
    }


def trec_id(text: str) -> str:
    """An id safe in a whitespace-separated TREC file: ``%`` and whitespace percent-encoded (reversible)."""
    return re.sub(r"[%\s]", lambda m: f"%{ord(m.group()):02X}", text)


def write_trec_run(path: Path, name: str, rankings: Mapping[str, Sequence[PageHit]], level: str = "page") -> None:
    """The rankings at ``level`` as a TREC run file (``qid Q0 ID rank score name``), for reuse in IR tools.

    The score is ``n + 1 - rank`` (strictly decreasing), the one the printed table was computed with; see the module
    docstring.
    """
    tag = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
    lines = []
    for qid in sorted(rankings):
        ranked = ranked_ids(rankings[qid], level)
        for rank, doc in enumerate(ranked, start=1):
            lines.append(f"{trec_id(qid)} Q0 {trec_id(doc)} {rank} {len(ranked) + 1 - rank} {tag}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")


def write_trec_qrels(path: Path, questions: Sequence[Question], level: str = "page") -> None:
    """The gold evidence at ``level`` as a TREC qrels file (``qid 0 ID 1``)."""
    lines = [f"{trec_id(q.id)} 0 {trec_id(doc)} 1\n" for q in questions for doc in gold_ids(q, level)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")


Rankings = Mapping[str, Sequence[PageHit]]


def write_runs(
    folder: Path, runs: Sequence[tuple[str, Rankings, Rankings]], questions: Sequence[Question], depth: int
) -> dict[str, Any]:
    """Every retriever's (name, page rankings, deep rankings) as ``NN.page.trec`` and ``NN.document.trec`` (the deep
    ranking collapsed to documents), the gold as ``qrels.page.txt`` and ``qrels.document.txt``, and ``runs.json``
    (which file is which retriever, the document level's depth, the trec_eval command)."""
    manifest: dict[str, Any] = {
        "depth": depth,
        "trec_eval": TREC_EVAL_COMMAND,
        "measures": TREC_EVAL_MEASURES,
        "qrels": {level: f"qrels.{level}.txt" for level in LEVELS},
        "runs": [],
    }
    for level in LEVELS:
        write_trec_qrels(folder / f"qrels.{level}.txt", questions, level)
    for number, (name, rankings, deep) in enumerate(runs, start=1):
        files = {level: f"{number:02d}.{level}.trec" for level in LEVELS}
        write_trec_run(folder / files["page"], name, rankings, "page")
        write_trec_run(folder / files["document"], name, deep, "document")
        manifest["runs"].append({"retriever": name, **files})
    (folder / "runs.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest
