"""Parse and validate results lines, gold records and calibration data, with messages naming file, line and field.

A results line follows the public harness: ``id``, ``question``, ``answer`` (list of strings or a string),
``citations`` (list of ``{document or file, page}``), ``search_history`` (list) and/or ``steps``/``iterations``
(int); other keys are ignored. Policies decided here (also in the metric card):

* ``answer``: a string becomes a one-element list; ``null`` is *no answer*; numbers inside the list are written
  as text; anything else (dict, bool, nested list, NaN) is an error. A missing ``answer`` key is an error.
* ``citations``: absent or ``null`` means none. Each citation names its document with ``document`` (preferred) or
  ``file``. ``page`` must be a positive integer (1-based); an integer written as a string (``"5"``) is read as
  that integer; ``0``, negatives, fractions, ``"abc"`` and booleans are errors (0 usually means 0-based pages:
  add 1). An absent or ``null`` page cites the whole document (Doc F1 only).
* effort: ``len(search_history)`` when present, else ``steps``, else ``iterations``; a non-negative integer.
  Lines without any of them have unknown effort (left out of Kuiper and the budget curve).
* ``NaN``/``Infinity`` anywhere in a line is an error (not JSON).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .schema import Calibration, Citation, Prediction, Reference
from .scoring import hop_type as evidence_hop_type

#: At most this many problems are spelled out in an :class:`InputError` message.
MAX_REPORTED_PROBLEMS = 10


class InputError(ValueError):
    """Invalid user input. ``problems`` lists every ``where: what`` found; ``str()`` is one summary line."""

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        shown = "; ".join(self.problems[:MAX_REPORTED_PROBLEMS])
        more = len(self.problems) - MAX_REPORTED_PROBLEMS
        super().__init__(shown + (f"; … and {more} more problem(s)" if more > 0 else ""))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (use null or a number)")


def load_json_line(text: str, where: str) -> Any:
    """Parse one JSON value, rejecting ``NaN``/``Infinity``.

    Raises:
        InputError: naming ``where``.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise InputError(f"{where}: invalid JSON ({exc})") from None


def read_jsonl_text(text: str, source: str) -> list[tuple[int, Any]]:
    """Split JSONL text into ``(line number, value)`` pairs, skipping blank lines.

    Raises:
        InputError: for invalid lines (all of them listed) or when there is no line at all.
    """
    rows, problems = _json_lines(text, source)
    if problems:
        raise InputError(problems)
    return rows


def _json_lines(text: str, source: str) -> tuple[list[tuple[int, Any]], list[str]]:
    """``(line number, value)`` for every valid non-blank line, and one problem per invalid line (or empty file)."""
    rows: list[tuple[int, Any]] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rows.append((number, load_json_line(raw, f"{source} line {number}")))
        except InputError as exc:
            problems.extend(exc.problems)
    if not rows and not problems:
        problems.append(f"{source}: the file is empty (no JSON lines)")
    return rows, problems


def _as_page(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"{where}: page must be a positive integer, got {value!r}")
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int):
        raise InputError(f"{where}: page must be a positive integer, got {value!r}")
    if value < 1:
        hint = " (pages are 1-based; if your system counts from 0, add 1)" if value == 0 else ""
        raise InputError(f"{where}: page must be a positive integer, got {value}{hint}")
    return value


def parse_citations(value: Any, where: str) -> tuple[Citation, ...]:
    """Validate a ``citations`` value (see module docstring for the policy)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        kind = type(value).__name__
        raise InputError(f"{where}: field 'citations' must be a list of {{document, page}}, got {kind}")
    out = []
    for i, item in enumerate(value):
        here = f"{where}: citations[{i}]"
        if not isinstance(item, Mapping):
            raise InputError(f"{here} must be an object with 'document' (or 'file') and 'page'")
        doc = item.get("document", item.get("file"))
        if not isinstance(doc, str) or not doc.strip():
            raise InputError(f"{here} needs a non-empty 'document' (or 'file') string, got {doc!r}")
        out.append(Citation(doc, _as_page(item.get("page"), here)))
    return tuple(out)


def parse_answer(value: Any, where: str) -> tuple[str, ...]:
    """Validate an ``answer`` value (see module docstring for the policy)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise InputError(f"{where}: field 'answer' must be a list of strings or a string, got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            out.append(str(item))
        elif isinstance(item, float) and math.isfinite(item):
            out.append(repr(item))
        else:
            raise InputError(f"{where}: answer[{i}] must be a string, got {item!r}")
    return tuple(out)


def _as_count(value: Any, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: field '{name}' must be a non-negative integer, got {value!r}")
    return value


def parse_steps(record: Mapping[str, Any], where: str) -> int | None:
    """Effort of a line: ``len(search_history)``, else ``steps``, else ``iterations``, else ``None``."""
    history = record.get("search_history")
    if history is not None:
        if not isinstance(history, list):
            raise InputError(f"{where}: field 'search_history' must be a list, got {type(history).__name__}")
        return len(history)
    for name in ("steps", "iterations"):
        if record.get(name) is not None:
            return _as_count(record[name], where, name)
    return None


def _optional_text(record: Mapping[str, Any], key: str, where: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and key == "id":
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: field '{key}' must be a non-empty string, got {value!r}")
    return value


def parse_prediction(record: Any, where: str, line: int = 0) -> Prediction:
    """Validate one results line.

    Raises:
        InputError: naming ``where`` and the field.
    """
    if not isinstance(record, Mapping):
        raise InputError(f"{where}: a results line must be a JSON object, got {type(record).__name__}")
    pid = _optional_text(record, "id", where)
    question = _optional_text(record, "question", where)
    if pid is None and question is None:
        raise InputError(f"{where}: the line has neither 'id' nor 'question', so it cannot be matched")
    if "answer" not in record:
        raise InputError(f"{where}: missing field 'answer' (use [] or null for no answer)")
    return Prediction(
        id=pid,
        question=question,
        answer=parse_answer(record["answer"], where),
        citations=parse_citations(record.get("citations"), where),
        steps=parse_steps(record, where),
        line=line,
    )


def parse_results_text(text: str, source: str) -> list[Prediction]:
    """Parse a whole results JSONL text; JSON and field problems of all lines are reported together.

    Raises:
        InputError: listing every invalid line (file and line number, field), or an empty file.
    """
    rows, problems = _json_lines(text, source)
    out: list[Prediction] = []
    for number, value in rows:
        try:
            out.append(parse_prediction(value, f"{source} line {number}", line=number))
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:  # JSON problems first, then field problems; each names its line
        raise InputError(problems)
    return out


def _variants(value: Any, where: str) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list) or not value:
        raise InputError(f"{where}: field 'answer_variants' must be a non-empty list of lists of strings")
    out = []
    for i, variant in enumerate(value):
        if isinstance(variant, str):
            variant = [variant]
        if not isinstance(variant, list) or not variant or not all(isinstance(s, str) for s in variant):
            raise InputError(f"{where}: answer_variants[{i}] must be a non-empty list of strings")
        out.append(tuple(variant))
    return tuple(out)


def parse_reference(record: Any, where: str) -> Reference:
    """Validate one labelled gold question (``id, question, answer_variants, evidence``; hop type optional).

    Raises:
        InputError: naming ``where`` and the field; unlabelled records (hidden test rows) are rejected.
    """
    if not isinstance(record, Mapping):
        raise InputError(f"{where}: a gold record must be a JSON object")
    rid = _optional_text(record, "id", where)
    if rid is None:
        raise InputError(f"{where}: missing field 'id'")
    evidence_raw = record.get("evidence")
    if not isinstance(evidence_raw, list) or not evidence_raw:
        raise InputError(f"{where}: gold needs a non-empty 'evidence' list (unlabelled rows cannot be scored)")
    evidence = parse_citations(evidence_raw, where)
    if any(c.page is None for c in evidence):
        raise InputError(f"{where}: every evidence item needs a page")
    hop = record.get("hop_type") or evidence_hop_type(evidence)
    if hop not in ("single", "cross_page", "cross_doc"):
        raise InputError(f"{where}: field 'hop_type' must be single, cross_page or cross_doc, got {hop!r}")
    return Reference(
        id=rid,
        question=str(record.get("question") or ""),
        answer_variants=_variants(record.get("answer_variants"), where),
        evidence=evidence,
        hop_type=hop,
        domain=str(record.get("domain") or "unknown"),
        document_category=str(record.get("document_category") or "unknown"),
    )


def parse_references(records: Iterable[Any], source: str) -> list[Reference]:
    """Validate gold records; duplicate gold ids are an error."""
    out: list[Reference] = []
    problems: list[str] = []
    for i, record in enumerate(records):
        where = f"{source} record {i + 1}"
        try:
            out.append(parse_reference(record, where))
        except InputError as exc:
            problems.extend(exc.problems)
    dups = sorted(rid for rid, count in Counter(r.id for r in out).items() if count > 1)
    if dups:
        problems.append(f"{source}: duplicate gold ids {dups}")
    if problems:
        raise InputError(problems)
    if not out:
        raise InputError(f"{source}: no gold questions")
    return out


def parse_calibration(record: Any, source: str) -> Calibration:
    """Validate a calibration object ``{"q0", "q1", "m0", "m1"}`` (as written by ``madqa calibrate``)."""
    if not isinstance(record, Mapping):
        raise InputError(f"{source}: a calibration file must hold a JSON object with q0, q1, m0, m1")
    values: dict[str, Any] = {}
    for key in ("q0", "q1"):
        v = record.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
            raise InputError(f"{source}: field '{key}' must be a number in [0, 1], got {v!r}")
        values[key] = float(v)
    for key in ("m0", "m1"):
        v = record.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{source}: field '{key}' must be a positive integer, got {v!r}")
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
        raise InputError(f"{where}: label must be {allowed}; got {value!r}")
    if score == 0.5 and not allow_partial:
        raise InputError(f"{where}: human labels must be binary (correct or incorrect), got {value!r}")
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
