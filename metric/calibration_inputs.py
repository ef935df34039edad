"""Parse and validate a judge calibration (``madqa calibrate``'s output) and human/judge label files.

Messages name the file, line and field, as :mod:`.inputs` does for results lines and gold records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .jsonl import InputError, show
from .schema import Calibration


def parse_calibration(record: Any, source: str) -> Calibration:
    """Validate a calibration object ``{"q0", "q1", "m0", "m1"}`` (as written by ``madqa calibrate``)."""
    if not isinstance(record, Mapping):
        raise InputError(f"{source}: a calibration file must hold a JSON object with q0, q1, m0, m1")
    values: dict[str, Any] = {}
    for key in ("q0", "q1"):
        v = record.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
            raise InputError(f"{source}: field '{key}' must be a number in [0, 1], got {show(v)}")
        values[key] = float(v)
    for key in ("m0", "m1"):
        v = record.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{source}: field '{key}' must be a positive integer, got {show(v)}")
        values[key] = v
    if values["q0"] + values["q1"] <= 1.0:
        raise InputError(f"{source}: q0 + q1 must exceed 1 (a judge no better than chance cannot be corrected)")
    return Calibration(values["q0"], values["q1"], values["m0"], values["m1"], source=source)


_LABELS = {"correct": 1.0, "partial": 0.5, "incorrect": 0.0, "true": 1.0, "false": 0.0}


def parse_label(value: Any, where: str, *, allow_partial: bool) -> float:
    """A correctness label as a score: ``correct``/``true``/1 → 1, ``partial``/0.5 → 0.5, ``incorrect``/0 → 0."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, str) and value.strip().lower() in _LABELS:
        score = _LABELS[value.strip().lower()]
    elif isinstance(value, (int, float)) and float(value) in (0.0, 0.5, 1.0):
        score = float(value)
    else:
        allowed = "correct, partial, incorrect, true, false, 1, 0.5 or 0"
        raise InputError(f"{where}: label must be {allowed}; got {show(value)}")
    if score == 0.5 and not allow_partial:
        raise InputError(f"{where}: human labels must be binary (correct or incorrect), got {show(value)}")
    return score


def parse_calibration_labels(rows: Iterable[tuple[int, Any]], source: str) -> tuple[list[bool], list[float]]:
    """Human and judge labels from numbered JSONL rows ``{"human": ..., "judge": ...}``.

    Returns:
        ``(human_correct, judge_scores)``.
    """
    human: list[bool] = []
    judge: list[float] = []
    problems: list[str] = []
    for number, record in rows:
        where = f"{source} line {number}"
        try:
            if not isinstance(record, Mapping) or "human" not in record or "judge" not in record:
                raise InputError(f"{where}: each line needs the fields 'human' and 'judge'")
            human.append(parse_label(record["human"], f"{where}: field 'human'", allow_partial=False) == 1.0)
            judge.append(parse_label(record["judge"], f"{where}: field 'judge'", allow_partial=True))
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    return human, judge
