"""Repeated runs: a results file holding K runs of the same system, each line marked with its ``repeat`` (pure).

``madqa run --repeats K`` writes every question K times, each line with ``repeat`` (0..K-1) and ``seed`` (the model
seed of that repeat). A line's identity is then ``(id, repeat)``: :func:`split_repeats` cuts such a file into one
text per repeat (the other repeats' lines blanked, so every problem still names its line in the file), and each
repeat is scored as an ordinary run, where a repeated id stays an error. A file without ``repeat`` fields is not
split at all (it reports as before), and a file mixing lines with and without ``repeat`` is refused.

Across the K repeats of a gold item with ``c`` correct ones (:func:`summarize_repeats`):

* **per-repeat accuracy**, their mean, sample standard deviation (``ddof=1``; ``None`` for one repeat) and
  min–max: the run-to-run spread;
* **pass@k** = ``1 - C(K - c, k) / C(K, k)``: the chance that at least one of ``k`` repeats drawn without
  replacement is correct (for ``k = K``: any repeat correct); the item mean is reported;
* **pass^k** = ``C(c, k) / C(K, k)``: the chance that all ``k`` drawn repeats are correct (for ``k = K``: every
  repeat correct), the consistency measure of τ-bench (Yao et al., 2024) and the 2026 agent-reliability work;
* **consistency**: the share of items whose correctness is the same in every repeat (all right or all wrong).

Items unscored in any repeat (judge failures) are left out of the item-level measures and counted. A gold item with
no line in a repeat is scored incorrect in that repeat, as in any run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .jsonl import InputError, show, split_lines
from .schema import MAX_LINE_CHARS

#: The results line's field that marks its repeat (``madqa run --repeats``), and the one that records its seed.
REPEAT_FIELD = "repeat"
SEED_FIELD = "seed"


def _repeat_of(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: '{REPEAT_FIELD}' must be a non-negative integer, got {show(value)}")
    return value


def split_repeats(text: str, source: str) -> dict[int, str] | None:
    r"""One JSONL text per repeat of a results file, or ``None`` when no line has a ``repeat``.

    Each repeat's text keeps its own lines and blanks the others' (line numbers stay the file's); a file without
    ``repeat`` is an ordinary run, scored as it is. Lines that are not JSON objects are left to the parser: the file
    is then not split (``None``) and the parser names them.

    >>> parts = split_repeats('{"id": "a", "repeat": 0}\n{"id": "a", "repeat": 1}\n', "f")
    >>> {r: text.splitlines() for r, text in parts.items()}
    {0: ['{"id": "a", "repeat": 0}', ''], 1: ['', '{"id": "a", "repeat": 1}']}
    >>> split_repeats('{"id": "a"}\n', "f") is None
    True

    Raises:
        InputError: a ``repeat`` that is not a non-negative integer, or a line without ``repeat`` in a file whose
            other lines have one (naming ``source`` and the line).
    """
    lines = split_lines(text)
    marks: list[int | None] = []  # per line: its repeat, -1 for none, None for a blank line
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            marks.append(None)
            continue
        if len(raw) > MAX_LINE_CHARS:  # refused by the parser, before any JSON is read
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        where = f"{source} line {number}"
        marks.append(-1 if REPEAT_FIELD not in value else _repeat_of(value[REPEAT_FIELD], where))
    if all(m is None or m == -1 for m in marks):
        return None
    if -1 in marks:
        raise InputError(
            f"{source} line {marks.index(-1) + 1}: the line has no '{REPEAT_FIELD}' while other lines do (a file of "
            "repeated runs, `madqa run --repeats`, gives every line its repeat)"
        )
    return {
        r: "\n".join(raw if mark == r else "" for raw, mark in zip(lines, marks, strict=True))
        for r in sorted({m for m in marks if m is not None})
    }


def pass_at_k(correct: int, n: int, k: int) -> float:
    """pass@k: the chance that one at least of ``k`` repeats drawn from an item's ``n`` is right.

    With ``correct`` of the ``n`` right and no replacement: ``1 - C(n - correct, k) / C(n, k)``.

    >>> pass_at_k(1, 3, 3), pass_at_k(1, 3, 1), pass_at_k(0, 3, 2)
    (1.0, 0.3333333333333333, 0.0)
    """
    _check_counts(correct, n, k)
    return (math.comb(n, k) - math.comb(n - correct, k)) / math.comb(n, k)  # one division: exact where it can be


def pass_hat_k(correct: int, n: int, k: int) -> float:
    """pass^k: the chance that all ``k`` repeats drawn from an item's ``n`` are right.

    With ``correct`` of the ``n`` right and no replacement: ``C(correct, k) / C(n, k)``.

    >>> pass_hat_k(2, 3, 3), pass_hat_k(2, 3, 2), pass_hat_k(3, 3, 3)
    (0.0, 0.3333333333333333, 1.0)
    """
    _check_counts(correct, n, k)
    return math.comb(correct, k) / math.comb(n, k)


def _check_counts(correct: int, n: int, k: int) -> None:
    if not 0 <= correct <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= correct <= n and 1 <= k <= n, got correct={correct}, n={n}, k={k}")


@dataclass(frozen=True)
class RepeatSummary:
    """The spread and consistency of K repeated runs (see the module docstring).

    Attributes:
        repeats: the repeat indexes, in order.
        accuracy: each repeat's accuracy, in that order.
        mean: their mean.
        sd: their sample standard deviation (``None`` with one repeat).
        low: the lowest of them.
        high: the highest.
        k: the number of repeats (pass@k and pass^k are at this k).
        n_items: items scored in every repeat (the item-level measures' denominator).
        unscored: items left out because some repeat could not score them.
        pass_at_k: mean over items of pass@k.
        pass_hat_k: mean over items of pass^k.
        consistency: share of items whose correctness is the same in every repeat.
        curve: pass@j and pass^j for every ``j`` in ``1..k`` (``{"k", "pass_at_k", "pass_hat_k"}``).
    """

    repeats: tuple[int, ...]
    accuracy: tuple[float, ...]
    mean: float
    sd: float | None
    low: float
    high: float
    k: int
    n_items: int
    unscored: int
    pass_at_k: float | None
    pass_hat_k: float | None
    consistency: float | None
    curve: tuple[dict[str, float | int | None], ...]

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields (the report's ``repeats`` entry)."""
        return {
            "repeats": list(self.repeats),
            "accuracy": list(self.accuracy),
            "mean": self.mean,
            "sd": self.sd,
            "min": self.low,
            "max": self.high,
            "k": self.k,
            "n_items": self.n_items,
            "unscored": self.unscored,
            "pass_at_k": self.pass_at_k,
            "pass_hat_k": self.pass_hat_k,
            "consistency": self.consistency,
            "curve": [dict(p) for p in self.curve],
        }


def summarize_repeats(
    correct: Mapping[int, Sequence[bool | None]], accuracy: Mapping[int, float | None] | None = None
) -> RepeatSummary:
    """Spread, pass@k, pass^k and consistency of repeated runs.

    Args:
        correct: repeat → per-item correctness on the same gold list, in the same order (``None``: unscored).
        accuracy: repeat → that repeat's reported accuracy (e.g. judge-corrected); default: its share of scored
            items correct.

    >>> s = summarize_repeats({0: [True, True, False], 1: [True, False, False]})
    >>> s.accuracy, s.pass_at_k, s.pass_hat_k, s.consistency
    ((0.6666666666666666, 0.3333333333333333), 0.6666666666666666, 0.3333333333333333, 0.6666666666666666)

    Raises:
        ValueError: no repeats, or repeats of different lengths.
    """
    if not correct:
        raise ValueError("no repeats to summarize")
    repeats = tuple(sorted(correct))
    rows = [list(correct[r]) for r in repeats]
    if len({len(row) for row in rows}) != 1:
        raise ValueError("the repeats are scored on different item lists")
    accuracies = []
    for r, row in zip(repeats, rows, strict=True):
        given = None if accuracy is None else accuracy.get(r)
        scored = [bool(x) for x in row if x is not None]
        accuracies.append(float(given) if given is not None else (sum(scored) / len(scored) if scored else 0.0))
    k = len(repeats)
    mean = sum(accuracies) / k
    sd = math.sqrt(sum((a - mean) ** 2 for a in accuracies) / (k - 1)) if k > 1 else None
    counts = [sum(bool(x) for x in column) for column in zip(*rows, strict=True) if None not in column]
    n_items = len(counts)
    unscored = len(rows[0]) - n_items

    def item_mean(values: list[float]) -> float | None:
        return sum(values) / n_items if n_items else None

    curve = tuple(
        {
            "k": j,
            "pass_at_k": item_mean([pass_at_k(c, k, j) for c in counts]),
            "pass_hat_k": item_mean([pass_hat_k(c, k, j) for c in counts]),
        }
        for j in range(1, k + 1)
    )
    return RepeatSummary(
        repeats=repeats,
        accuracy=tuple(accuracies),
        mean=mean,
        sd=sd,
        low=min(accuracies),
        high=max(accuracies),
        k=k,
        n_items=n_items,
        unscored=unscored,
        pass_at_k=curve[-1]["pass_at_k"],
        pass_hat_k=curve[-1]["pass_hat_k"],
        consistency=item_mean([1.0 if c in (0, k) else 0.0 for c in counts]),
        curve=curve,
    )
