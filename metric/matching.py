"""Match predictions to gold questions: by ``id``, by question text only for lines without one.

Coverage rules: every gold item counts (a gold item without a prediction is *missing*); a prediction whose id is
not in the gold set is listed and ignored; two predictions for the same gold item are an error naming them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from .jsonl import InputError, show
from .schema import Prediction, Reference


def normalise_question(text: str) -> str:
    r"""Question text used for the fallback match: whitespace collapsed, case kept.

    >>> normalise_question("  What is\n the  total? ")
    'What is the total?'
    """
    return " ".join(text.split())


@dataclass(frozen=True)
class Matching:
    """Predictions aligned with the gold list.

    Attributes:
        predictions: one entry per gold item, in gold order (``None`` = missing).
        orders: for each gold item, the matched line's position in the file (0-based), -1 when missing.
        missing_ids: gold ids without a prediction.
        unknown: ids (or question texts, for lines without an id) that match no gold item; ignored.
        matched_by_question: number of lines matched through their question text.
    """

    predictions: tuple[Prediction | None, ...]
    orders: tuple[int, ...]
    missing_ids: tuple[str, ...]
    unknown: tuple[str, ...]
    matched_by_question: int


def _where(p: Prediction, index: int) -> str:
    return f"line {p.line}" if p.line else f"prediction {index}"


def match_predictions(predictions: Sequence[Prediction | None], references: Sequence[Reference]) -> Matching:
    """Align predictions with gold questions.

    ``None`` entries in ``predictions`` are placeholders for absent predictions and are skipped.

    Raises:
        InputError: when two predictions resolve to the same gold item (duplicate ids), naming ids and lines.
    """
    by_id = {r.id: i for i, r in enumerate(references)}
    by_question: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(references):
        by_question[normalise_question(r.question)].append(i)
    claims: dict[int, list[tuple[int, Prediction]]] = defaultdict(list)
    unknown: list[str] = []
    unknown_ids: list[str] = []
    by_text = 0
    for pos, p in enumerate(predictions):
        if p is None:
            continue
        if p.id is not None:
            target = by_id.get(p.id)
            if target is None:
                unknown.append(p.id)
                unknown_ids.append(p.id)
                continue
        else:
            candidates = by_question.get(normalise_question(p.question or ""), [])
            if len(candidates) != 1:
                label = "ambiguous question" if candidates else "unknown question"
                unknown.append(f"{label} ({_where(p, pos)}): {show(p.question)}")
                continue
            target = candidates[0]
            by_text += 1
        claims[target].append((pos, p))
    duplicates = []
    for target, items in sorted(claims.items()):
        if len(items) > 1:
            lines = ", ".join(_where(p, pos) for pos, p in items[:5])  # bounded: 10^5 copies of one id
            lines += f" and {len(items) - 5} more" if len(items) > 5 else ""
            duplicates.append(f"gold id {references[target].id!r} is predicted more than once ({lines})")
    repeated = sorted(u for u, count in Counter(unknown_ids).items() if count > 1)
    duplicates.extend(f"id {u!r} (not in the gold set) appears more than once" for u in repeated)
    if duplicates:
        raise InputError(["duplicate predictions: " + d for d in duplicates])
    matched: list[Prediction | None] = [None] * len(references)
    orders = [-1] * len(references)
    for target, ((pos, p),) in claims.items():
        matched[target] = p
        orders[target] = pos
    missing = tuple(r.id for r, m in zip(references, matched, strict=True) if m is None)
    return Matching(tuple(matched), tuple(orders), missing, tuple(unknown), by_text)
