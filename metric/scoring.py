"""Pure per-item scoring: ANLS*, Page/Doc F1 (paper F.2), hop type and the H.3 error category.

No I/O, no state. Every function takes plain data and returns numbers or labels.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from anls_star import anls_score

from .schema import (
    CORRECT_THRESHOLD,
    Citation,
    ErrorType,
    HopType,
    ItemScore,
    Prediction,
    Reference,
    ScoreSource,
)

_PDF_SUFFIX = re.compile(r"\.pdf$", re.IGNORECASE)
_PATH_SEPARATOR = re.compile(r"[/\\]")


@lru_cache(maxsize=1 << 16)  # a run names few documents, each many times (citations and evidence of every line)
def doc_key(document: str) -> str:
    """Normalise a document identifier for matching citations to gold evidence.

    The key is the last path component, stripped of surrounding whitespace and of a trailing ``.pdf``
    (any case), so ``"docs/report.pdf"``, ``"report.PDF"`` and ``" report "`` all cite ``report``. Case is kept.

    >>> doc_key("corpus/annual_report.pdf")
    'annual_report'
    >>> doc_key(" annual_report ")
    'annual_report'
    """
    name = _PATH_SEPARATOR.split(document.strip())[-1].strip()
    return _PDF_SUFFIX.sub("", name)


def answer_is_empty(answer: Sequence[str]) -> bool:
    """Whether an answer carries no content (no strings, or only blank ones).

    >>> answer_is_empty([]), answer_is_empty(["  "]), answer_is_empty(["0"])
    (True, True, False)
    """
    return not any(s.strip() for s in answer)


def answer_chars(answer: Sequence[str]) -> int:
    """Total number of characters over the answer's strings."""
    return sum(len(s) for s in answer)


def _anls(gold: list[str], pred: list[str]) -> float:
    value = anls_score(gold, pred)  # a bare float unless return_gt/return_key_scores is asked for
    return float(value[0] if isinstance(value, tuple) else value)


def anls_star(answer: Sequence[str], variants: Iterable[Sequence[str]]) -> float:
    """ANLS* of an answer list against the gold variants: the maximum over variants.

    Uses the ``anls-star`` package (case-insensitive, whitespace-collapsing, Hungarian matching of list items,
    per-string threshold 0.5). An empty answer scores 0 against any non-empty variant.

    >>> anls_star(["Paris"], [["paris"]])
    1.0
    >>> anls_star(["12 kg"], [["11 kg"], ["12 kg "]])
    1.0
    >>> anls_star([], [["x"]])
    0.0
    """
    best = 0.0
    pred = list(answer)
    for variant in variants:
        gold = list(variant)
        if gold == pred:  # ANLS* of identical lists is 1 (every string matches itself): skip the Levenshtein work,
            return 1.0  # 60 % of `madqa evaluate`'s scoring time on right answers (issue 47)
        score = _anls(gold, pred)
        if score > best:
            best = score
            if best >= 1.0:
                break
    return best


def f1(cited: set[object], gold: set[object]) -> float:
    """F1 of a set of cited units against the gold units (paper F.2).

    No citations give 0; an empty gold set gives 0 (labelled questions always have evidence).

    >>> f1({1, 2}, {2, 3})
    0.5
    >>> f1(set(), {1})
    0.0
    """
    if not cited or not gold:
        return 0.0
    hits = len(cited & gold)
    if hits == 0:
        return 0.0
    precision = hits / len(cited)
    recall = hits / len(gold)
    return 2 * precision * recall / (precision + recall)


def page_units(citations: Iterable[Citation]) -> set[tuple[str, int]]:
    """Unique ``(document key, page)`` units; whole-document citations (page ``None``) are left out."""
    return {(doc_key(c.document), c.page) for c in citations if c.page is not None}


def doc_units(citations: Iterable[Citation]) -> set[str]:
    """Unique document keys of a set of citations (with or without a page)."""
    return {doc_key(c.document) for c in citations}


def page_f1(citations: Iterable[Citation], evidence: Iterable[Citation]) -> float:
    """Page F1: unique cited pages vs gold pages.

    >>> ev = [Citation("a.pdf", 2), Citation("a.pdf", 5)]
    >>> page_f1([Citation("a.pdf", 2), Citation("a.pdf", 2)], ev)
    0.6666666666666666
    """
    return f1(set(page_units(citations)), set(page_units(evidence)))


def doc_f1(citations: Iterable[Citation], evidence: Iterable[Citation]) -> float:
    """Doc F1: unique cited documents vs gold documents.

    >>> doc_f1([Citation("a.pdf", 9)], [Citation("a.pdf", 2)])
    1.0
    """
    return f1(set(doc_units(citations)), set(doc_units(evidence)))


def hop_type(evidence: Iterable[Citation]) -> HopType | None:
    """Hop type of an evidence set (one page / several pages of one document / several documents)."""
    pages = page_units(evidence)
    if not pages:
        return None
    if len({d for d, _ in pages}) > 1:
        return "cross_doc"
    return "single" if len(pages) == 1 else "cross_page"


def error_type(answer: Sequence[str], page_f1_value: float, doc_f1_value: float) -> ErrorType:
    """H.3 category of an incorrect item.

    Precedence: an empty answer is ``no_answer`` whatever it cites; otherwise no gold document cited is
    ``retrieval``, a gold document but no gold page is ``navigation``, a gold page is ``comprehension``.

    >>> error_type([], 1.0, 1.0), error_type(["x"], 0.0, 0.0), error_type(["x"], 0.0, 0.5), error_type(["x"], 0.4, 1)
    ('no_answer', 'retrieval', 'navigation', 'comprehension')
    """
    if answer_is_empty(answer):
        return "no_answer"
    if doc_f1_value <= 0.0:
        return "retrieval"
    if page_f1_value <= 0.0:
        return "navigation"
    return "comprehension"


def score_item(
    reference: Reference,
    prediction: Prediction | None,
    *,
    score: float | None = None,
    source: ScoreSource | None = None,
    order: int = -1,
    anls_value: float | None = None,
) -> ItemScore:
    """Score one gold item.

    Args:
        reference: the gold question.
        prediction: the matched prediction, or ``None`` when missing (incorrect, F1 0, ``no_answer``).
        score: the item score from the judge (1 / 0.5 / 0, ``None`` = unscored); when omitted, the ``anls``
            mode rule applies: 1 if ANLS* ≥ 0.5 else 0.
        source: where ``score`` came from (required with ``score``).
        order: the prediction's position in its file.
        anls_value: a precomputed ANLS* (saves recomputing it in judge mode).

    Returns:
        The item's scores.
    """
    if prediction is None:
        return ItemScore(reference.id, 0.0, False, 0.0, 0.0, 0.0, None, "no_answer", "missing", missing=True)
    anls_v = anls_star(prediction.answer, reference.answer_variants) if anls_value is None else anls_value
    if source is None:
        score, source = (1.0 if anls_v >= CORRECT_THRESHOLD else 0.0), "anls"
    pf1 = page_f1(prediction.citations, reference.evidence)
    df1 = doc_f1(prediction.citations, reference.evidence)
    correct = None if score is None else score >= CORRECT_THRESHOLD
    error = error_type(prediction.answer, pf1, df1) if correct is False else None
    return ItemScore(reference.id, score, correct, anls_v, pf1, df1, prediction.steps, error, source, order=order)
