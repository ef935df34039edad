r"""Parse and validate results lines and gold records, with messages naming file, line and field.

Calibration files and human/judge labels are parsed in :mod:`.calibration_inputs`; what is read leniently is
counted and warned about in :mod:`.notes`.

A results line follows the public harness: ``id``, ``question``, ``answer`` (list of strings or a string),
``citations`` (list of ``{document or file, page}``), ``search_history`` (list) and/or ``steps``/``iterations``
(int); other keys are ignored. Policies decided here (also in the metric card):

* ``answer``: a string becomes a one-element list; ``null`` is *no answer*; numbers inside the list are written
  as text; anything else (dict, bool, nested list, NaN) is an error. A missing ``answer`` key is *no answer*, as
  the public harness writes failed questions; such lines are counted in one warning per file.
* ``citations``: absent or ``null`` means none. Each citation names its document with ``document`` (preferred) or
  ``file``; a ``document`` that is ``null`` or blank falls back to ``file``. ``page`` must be a positive integer
  (1-based); an integer written as a string (``"5"``) is read as that integer; ``0``, negatives, fractions,
  ``"abc"`` and booleans are errors (0 usually means 0-based pages: add 1). An absent or ``null`` page cites the
  whole document (Doc F1 only). A document that no gold question names is a wrong citation, never an error.
* a page above ``schema.MAX_PAGE`` is kept and scored as a wrong citation (no gold page is that high; it lowers
  Page F1 precision), counted in one warning per file, never an error: models do cite pages like 1506387294. A
  digit string of more than 20 significant digits is read from its first 20 (still above the cap, and ``int()``
  of a long string costs quadratic time), so a page is always an ``int`` of bounded cost.
* a field close to a scored field the line lacks (``citatons``, ``anwser``) is ignored and warned about by name,
  once per file (:mod:`.notes`); the other extra fields (``agent``, ``usage``, ``trajectory``, …) are silent.
* effort: ``len(search_history)`` when it is a non-empty list; an empty one falls back to ``iterations`` (0 without
  it), as the public harness's ``evaluate_single`` does; with no list, ``steps``, else ``iterations``; a
  non-negative integer.
  Lines without any of them have unknown effort (left out of Kuiper and the budget curve).
* ``question``: used only to match a line without ``id``; a blank ``question`` next to an ``id`` is ignored.
* ``schema_version`` (integer) and ``dataset`` (``{name, revision}``), written by `madqa run`: read leniently,
  never an error; absent or malformed values read as unknown (they only inform ``madqa evaluate``'s warning).
* ``NaN``/``Infinity`` anywhere in a line is an error (not JSON).
* caps (``schema.MAX_*``): line length, answer string length, total answer length per line, answer items,
  citations, effort values, ``id``, document name and ``question`` length. They bound the cost of scoring a file
  and are checked here, before any scoring work; a value over a cap is an error naming file, line and field.
  `madqa run` never writes a value over them (``agents/harness/answer.py`` cuts answers and document names to fit).
* lines are split on ``\n`` only, and error messages are bounded (see :mod:`.jsonl`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .jsonl import InputError, json_lines, load_json_line, read_jsonl_text, show
from .notes import InputNotes
from .schema import (
    MAX_ANSWER_ITEMS,
    MAX_ANSWER_LINE_CHARS,
    MAX_ANSWER_STRING_CHARS,
    MAX_CITATIONS,
    MAX_EFFORT,
    MAX_ID_CHARS,
    MAX_QUESTION_CHARS,
    Citation,
    DatasetRef,
    Prediction,
    Reference,
)
from .scoring import hop_type as evidence_hop_type

#: Callers import the JSONL helpers from here (this module was their home before ``jsonl.py``).
_REEXPORTED = (load_json_line, read_jsonl_text)

_ASCII_DIGITS = re.compile(r"[0-9]+")  # ASCII only: "²" and "٣" are digits to str.isdigit
#: More significant digits than this are above any page; only this many are read (a long int() costs time).
_PAGE_DIGITS = 20


def _as_page(value: Any, where: str) -> int | None:
    """A 1-based page number; an ASCII digit string is read as that integer (``"²"`` and ``"٣"`` are not).

    A page above ``MAX_PAGE`` is returned as it is (a wrong citation, counted by :mod:`.notes`).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"{where}: page must be a positive integer, got {show(value)}")
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and _ASCII_DIGITS.fullmatch(value.strip()):
        value = int((value.strip().lstrip("0") or "0")[:_PAGE_DIGITS])
    if not isinstance(value, int):
        raise InputError(f"{where}: page must be a positive integer, got {show(value)}")
    if value < 1:
        hint = " (pages are 1-based; if your system counts from 0, add 1)" if value == 0 else ""
        raise InputError(f"{where}: page must be a positive integer, got {show(value)}{hint}")
    return value


def _is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _document_name(item: Mapping[str, Any]) -> Any:
    """``document`` unless it is absent, ``null`` or blank; then ``file`` (a harness may write both keys)."""
    doc = item.get("document")
    return item.get("file") if _is_blank(doc) else doc


def parse_citations(value: Any, where: str) -> tuple[Citation, ...]:
    """Validate a ``citations`` value (see module docstring for the policy and the caps)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        kind = type(value).__name__
        raise InputError(f"{where}: field 'citations' must be a list of {{document, page}}, got {kind}")
    if len(value) > MAX_CITATIONS:
        raise InputError(f"{where}: field 'citations' has {len(value)} items; the limit is {MAX_CITATIONS}")
    out = []
    for i, item in enumerate(value):
        here = f"{where}: citations[{i}]"
        if not isinstance(item, Mapping):
            raise InputError(f"{here} must be an object with 'document' (or 'file') and 'page'")
        doc = _document_name(item)
        if not isinstance(doc, str) or not doc.strip():
            raise InputError(f"{here} needs a non-empty 'document' (or 'file') string, got {show(doc)}")
        if len(doc) > MAX_ID_CHARS:
            raise InputError(f"{here}: the document name has {len(doc)} characters; the limit is {MAX_ID_CHARS}")
        out.append(Citation(doc, _as_page(item.get("page"), here)))
    return tuple(out)


def parse_answer(value: Any, where: str) -> tuple[str, ...]:
    """Validate an ``answer`` value (see module docstring for the policy and the caps).

    The caps are checked here, before any scoring, so an over-long answer costs a length check, never ANLS*.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise InputError(f"{where}: field 'answer' must be a list of strings or a string, got {type(value).__name__}")
    if len(value) > MAX_ANSWER_ITEMS:
        raise InputError(f"{where}: field 'answer' has {len(value)} items; the limit is {MAX_ANSWER_ITEMS}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            text = item
        elif isinstance(item, int) and not isinstance(item, bool):
            text = str(item)
        elif isinstance(item, float) and math.isfinite(item):
            text = repr(item)
        else:
            raise InputError(f"{where}: answer[{i}] must be a string, got {show(item)}")
        if len(text) > MAX_ANSWER_STRING_CHARS:
            raise InputError(
                f"{where}: answer[{i}] has {len(text)} characters; the limit is {MAX_ANSWER_STRING_CHARS}"
            )
        out.append(text)
    total = sum(len(t) for t in out)
    if total > MAX_ANSWER_LINE_CHARS:
        raise InputError(
            f"{where}: field 'answer' has {total} characters in all; the limit is {MAX_ANSWER_LINE_CHARS}"
        )
    return tuple(out)


def _as_count(value: Any, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: field '{name}' must be a non-negative integer, got {show(value)}")
    if value > MAX_EFFORT:
        raise InputError(f"{where}: field '{name}' is {show(value)}; the limit is {MAX_EFFORT}")
    return value


def parse_steps(record: Mapping[str, Any], where: str) -> int | None:
    """Effort of a line: ``len(search_history)``, else ``steps``, else ``iterations``, else ``None``.

    An empty ``search_history`` falls back to ``iterations`` (0 without it), as the public harness does
    (``eval/evaluate.py`` ``evaluate_single``: ``len(search_history) if search_history else iterations``): a line
    of an agent that records its effort only as ``iterations`` keeps it. ``steps`` is not read next to an empty
    list, which says that this agent's searches, its effort, were none. Every effort field present is checked
    (type and :data:`~.schema.MAX_EFFORT`), also those not used.

    >>> parse_steps({"search_history": [], "iterations": 3}, "line 1"), parse_steps({"search_history": []}, "l")
    (3, 0)
    """
    history = record.get("search_history")
    if history is not None and not isinstance(history, list):
        raise InputError(f"{where}: field 'search_history' must be a list, got {type(history).__name__}")
    if history is not None and len(history) > MAX_EFFORT:
        raise InputError(f"{where}: field 'search_history' has {len(history)} entries; the limit is {MAX_EFFORT}")
    counts = {
        name: _as_count(record[name], where, name) for name in ("steps", "iterations") if record.get(name) is not None
    }
    if history:
        return len(history)
    if history is not None:  # an empty list: the public harness's fallback
        return counts.get("iterations", 0)
    return next(iter(counts.values()), None)


_TEXT_LIMITS = {"id": MAX_ID_CHARS, "question": MAX_QUESTION_CHARS}


def _optional_text(record: Mapping[str, Any], key: str, where: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and key == "id":
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: field '{key}' must be a non-empty string, got {show(value)}")
    if len(value) > _TEXT_LIMITS[key]:
        raise InputError(f"{where}: field '{key}' has {len(value)} characters; the limit is {_TEXT_LIMITS[key]}")
    return value


def _short_text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() and len(value) <= MAX_ID_CHARS else None


def parse_provenance(record: Mapping[str, Any]) -> tuple[int | None, DatasetRef | None]:
    """``(schema_version, dataset)`` of a line, each ``None`` when absent or malformed.

    Never raises: provenance feeds a warning, and a file must never be rejected for it.
    """
    version = record.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= MAX_EFFORT:
        version = None
    raw = record.get("dataset")
    dataset = None
    if isinstance(raw, Mapping):
        name, revision = _short_text(raw.get("name")), _short_text(raw.get("revision"))
        if name is not None or revision is not None:
            dataset = DatasetRef(name, revision)
    return version, dataset


def parse_prediction(record: Any, where: str, line: int = 0, notes: InputNotes | None = None) -> Prediction:
    """Validate one results line (every cap of ``schema.py`` except the line length, which needs the text).

    ``notes`` (when given) counts what the line has that is read leniently (:class:`~.notes.InputNotes`).

    Raises:
        InputError: naming ``where`` and the field.
    """
    if not isinstance(record, Mapping):
        raise InputError(f"{where}: a results line must be a JSON object, got {type(record).__name__}")
    pid = _optional_text(record, "id", where)
    # A blank question is only needed for matching when there is no id; with an id it is ignored.
    blank_question = pid is not None and isinstance(record.get("question"), str) and _is_blank(record["question"])
    question = None if blank_question else _optional_text(record, "question", where)
    if pid is None and question is None:
        raise InputError(f"{where}: the line has neither 'id' nor 'question', so it cannot be matched")
    schema_version, dataset = parse_provenance(record)
    prediction = Prediction(
        id=pid,
        question=question,
        answer=parse_answer(record.get("answer"), where),  # no key: no answer (the public harness's failures)
        citations=parse_citations(record.get("citations"), where),
        steps=parse_steps(record, where),
        line=line,
        schema_version=schema_version,
        dataset=dataset,
    )
    if notes is not None:
        notes.note(record, where, prediction.citations)
    return prediction


@dataclass(frozen=True)
class ParsedResults:
    """A parsed results file: its predictions, and what was read leniently (the warnings come from ``notes``)."""

    predictions: list[Prediction]
    notes: InputNotes


def parse_results(text: str, source: str) -> ParsedResults:
    """Parse a whole results JSONL text, with its :class:`~.notes.InputNotes` (see :func:`parse_results_text`).

    Raises:
        InputError: as :func:`parse_results_text`.
    """
    rows, problems = json_lines(text, source)
    notes = InputNotes(source)
    out: list[Prediction] = []
    for number, value in rows:
        try:
            out.append(parse_prediction(value, f"{source} line {number}", line=number, notes=notes))
        except InputError as exc:
            problems.add(exc)
    if problems:  # JSON problems first, then field problems; each names its line
        raise problems.error()
    return ParsedResults(out, notes)


def parse_predictions(
    records: Iterable[Any], source: str = "predictions"
) -> tuple[list[Prediction | None], InputNotes]:
    """Validate the evaluate module's prediction dicts (``None`` stays: a placeholder for an absent prediction).

    Raises:
        InputError: for the first invalid prediction, naming ``source[i]`` and the field.
    """
    notes = InputNotes(source)
    out = [None if r is None else parse_prediction(r, f"{source}[{i}]", notes=notes) for i, r in enumerate(records)]
    return out, notes


def parse_results_text(text: str, source: str) -> list[Prediction]:
    """Parse a whole results JSONL text; JSON and field problems of all lines are reported together.

    Raises:
        InputError: naming the first invalid lines (file and line number, field) and counting all of them, or
            an empty file.
    """
    return parse_results(text, source).predictions


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
        raise InputError(f"{where}: field 'hop_type' must be single, cross_page or cross_doc, got {show(hop)}")
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
