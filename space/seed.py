"""Seed an empty board with simple deterministic baselines computed on the public test questions.

The baselines only see what any participant sees: the public test questions, the page corpus (BM25 search) and
the public dev labels. None of them reads the hidden test labels; they are scored through the same path as user
submissions and stored with origin ``seed`` (shown as "maintainer baseline"). Their names say what they are, and
those names (and the submitter name) are reserved: user submissions cannot use them (:mod:`.identity`).
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .identity import BASELINE_SYSTEMS, MAINTAINER_SUBMITTER
from .submission import Scorer, SubmissionError

logger = logging.getLogger(__name__)

SEED_FORM = {
    "submitter": MAINTAINER_SUBMITTER,
    "contact": "maintainers",
    "models_used": "none (no language model)",
    "training_data": "none; the majority answer uses the public dev labels only",
    "compute": "CPU, seconds",
}


def bm25_query(question: str, max_terms: int = 24) -> str:
    """An OR query of the question's words (:func:`madqa.agents.corpus.search.query.or_query`)."""
    from madqa.agents.corpus.search.query import or_query

    return or_query(question, max_terms)


def top_pages(index: Any, question: str, k: int) -> list[dict[str, Any]]:
    """The ``k`` best pages for a question as citations (none when the query is empty or invalid)."""
    query = bm25_query(question)
    if not query:
        return []
    try:
        hits = index.search(query, k=k)
    except ValueError:  # QuerySyntaxError is a ValueError
        return []
    return [{"document": h.document, "page": h.page} for h in hits]


def majority_answer(dev: Sequence[Mapping[str, Any]]) -> list[str]:
    """The most frequent first answer variant among the public dev labels."""
    counts = Counter(tuple(r["answer_variants"][0]) for r in dev if r.get("answer_variants"))
    return list(counts.most_common(1)[0][0]) if counts else []


def baseline_runs(test: Sequence[Mapping[str, Any]], index: Any, dev: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{system name: (form extras, results lines)}`` for the seed baselines."""
    majority = majority_answer(dev)
    tops = {str(q["id"]): top_pages(index, str(q["question"]), 3) for q in test}

    def lines(answer: list[str], k: int, steps: int) -> list[dict[str, Any]]:
        return [
            {
                "id": q["id"],
                "question": q["question"],
                "answer": answer,
                "citations": tops[str(q["id"])][:k],
                "steps": steps,
            }
            for q in test
        ]

    floor, top1, top3, majority_name = BASELINE_SYSTEMS
    return {
        floor: ({"agent": "none", "model": "none"}, lines([], 0, 0)),
        top1: ({"agent": "BM25 retrieval only", "model": "none"}, lines([], 1, 1)),
        top3: ({"agent": "BM25 retrieval only", "model": "none"}, lines([], 3, 1)),
        majority_name: ({"agent": "BM25 retrieval only", "model": "none (constant answer)"}, lines(majority, 1, 1)),
    }


def seed_board(scorer: Scorer, dataset: str | None = None, seed_dir: Path | None = None) -> int:
    """Score and store the baselines when the store is empty; returns how many were added (0 if not empty).

    The generated results files are written to ``seed_dir`` (when given) so they can be inspected or resubmitted.
    """
    if scorer.store.count():
        return 0
    from madqa.agents.corpus.search import open_index
    from madqa.loading_script.load import load_pages, load_questions

    test = load_questions("test", dataset)
    dev = load_questions("dev", dataset)
    index = open_index(load_pages(dataset), progress=False)
    added = 0
    for system, (extra, rows) in baseline_runs(test, index, dev).items():
        text = "\n".join(json.dumps(r) for r in rows) + "\n"
        if seed_dir is not None:
            seed_dir.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"[^a-z0-9]+", "-", system.lower()).strip("-")
            (seed_dir / f"{name}.jsonl").write_text(text, encoding="utf-8")
        try:
            scorer.submit_text(text, {**SEED_FORM, **extra, "system": system}, origin="seed")
            added += 1
        except SubmissionError as exc:
            logger.warning("seed baseline %r was rejected: %s", system, exc)
    logger.info("seeded the board with %d baseline(s)", added)
    return added
