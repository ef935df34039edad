"""A results text checked and scored against the test labels: pure functions (no I/O, no store).

:func:`evaluate_results` is what the Space's request threads and its walled scoring processes
(:mod:`.scoring_pool`) run; :mod:`.submission` adds the form, the guards and the store around it. Every rejection
is a :class:`~.identity.SubmissionError` whose message names the problem (line, field) and is safe to show: it is
built from the user's own input and public ids only, never from gold answers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from madqa.metric.inputs import InputError, parse_results
from madqa.metric.matching import Matching, match_predictions
from madqa.metric.report import DEFAULT_OPTIONS, ReportOptions, build_report, score_predictions
from madqa.metric.schema import Reference

from .disclosure import public_report
from .identity import SubmissionError

#: Name under which the uploaded file is referred to in messages (the server-side temp path is never echoed).
SOURCE_NAME = "results.jsonl"


def _deep_line(text: str) -> int:
    """The first line whose JSON nesting is too deep for the parser."""
    import json

    for number, raw in enumerate(text.split("\n"), start=1):  # line numbers as the parser counts them
        try:
            json.loads(raw)
        except RecursionError:
            return number
        except ValueError:
            continue
    return 0


#: Lines named in a grouped rejection ("20 lines hold dev questions' ids … (line 1 'd1', …)").
GROUP_EXAMPLES = 3


def check_ids(predictions: Sequence[Any], test_ids: set[str], other_split_ids: Mapping[str, str]) -> None:
    """Every line with an id must name a test question; other splits' ids get their own message.

    A reason shared by several lines is one problem that counts them and names the first few (a dev file sent by
    mistake gets "2,250 lines hold dev questions' ids", not the same sentence 2,250 times).
    """
    groups: dict[str, list[tuple[int, str]]] = {}  # other split ("" for none) -> (line, id as shown)
    for p in predictions:
        if p.id is not None and p.id not in test_ids:
            shown = p.id if len(p.id) <= 80 else p.id[:77] + "..."
            groups.setdefault(other_split_ids.get(p.id, ""), []).append((p.line, shown))
    problems = []
    for split, lines in groups.items():
        if len(lines) == 1:
            why = f"is a {split} question, not a test question" if split else "is not a test-split id"
            problems.append(f"{SOURCE_NAME} line {lines[0][0]}: field 'id' {lines[0][1]!r} {why}")
            continue
        what = f"hold {split} questions' ids, not test questions'" if split else "hold ids that are not test-split ids"
        named = ", ".join(f"line {line} {shown!r}" for line, shown in lines[:GROUP_EXAMPLES])
        more = f", … {len(lines) - GROUP_EXAMPLES:,} more" if len(lines) > GROUP_EXAMPLES else ""
        problems.append(f"{SOURCE_NAME}: {len(lines):,} lines {what} ({named}{more})")
    if problems:
        raise InputError(problems)


@dataclass(frozen=True)
class Evaluation:
    """A scored results text: the public report, the per-item scores (server side), the content's hash, and the
    metric's input warnings (from the file alone: safe to show)."""

    report: dict[str, Any]
    items: list[dict[str, Any]]
    content_sha256: str
    warnings: tuple[str, ...] = ()


def evaluate_results(
    text: str,
    references: Sequence[Reference],
    test_ids: set[str],
    other_split_ids: Mapping[str, str],
    *,
    options: ReportOptions = DEFAULT_OPTIONS,
    judge: Any = None,
    scored_ids: frozenset[str] | None = None,
) -> Evaluation:
    """Validate and score a results text against the test labels.

    Pure (no I/O): the scoring processes of :mod:`.scoring_pool` call it as the Space's request threads do. Every
    rejection happens before any work that touches a gold answer, so a refused file (which costs no quota) cannot
    time the labels. The per-item scores are always computed (they are stored), whatever ``options.include_items``.

    ``scored_ids`` (one part of the labels, :mod:`madqa.loading_script.label_parts`; ``None`` = all) are the items
    scored and reported: the file is checked and matched against every test question (ids and question texts are
    public), then only that part's gold is touched, so the report, its timing and any refusal after matching
    depend on that part alone.

    Raises:
        SubmissionError: any validation problem (the message names line and field, never a gold value).
    """
    try:
        try:
            parsed = parse_results(text, SOURCE_NAME)
            predictions = parsed.predictions
        except RecursionError:
            raise InputError(f"{SOURCE_NAME} line {_deep_line(text)}: JSON nested too deeply") from None
        check_ids(predictions, test_ids, other_split_ids)
        matching = match_predictions(predictions, references)
        if matching.unknown:
            first = matching.unknown[0]
            raise InputError(f"{len(matching.unknown)} line(s) match no test question, e.g. {first[:160]}")
    except InputError as exc:
        raise SubmissionError(str(exc)) from None
    if scored_ids is not None:
        references, matching = part_matching(references, matching, scored_ids)
    run = score_predictions(predictions, references, mode=options.mode, judge=judge, matching=matching)
    report = build_report(run, references, replace(options, include_items=True), parsed.notes)
    items = report.pop("items")
    # the warnings are computed before any gold-dependent work, from the uploaded text only (no label can leak)
    warnings = tuple(parsed.notes.warnings())
    return Evaluation(public_report(report, items), items, canonical_sha256(text), warnings)


def part_matching(
    references: Sequence[Reference], matching: Matching, scored_ids: frozenset[str]
) -> tuple[list[Reference], Matching]:
    """The references of one part and the file's matching restricted to them (gold order kept)."""
    keep = [i for i, r in enumerate(references) if r.id in scored_ids]
    part = [references[i] for i in keep]
    sub = Matching(
        predictions=tuple(matching.predictions[i] for i in keep),
        orders=tuple(matching.orders[i] for i in keep),
        missing_ids=tuple(i for i in matching.missing_ids if i in scored_ids),
        unknown=matching.unknown,
        matched_by_question=sum(
            1 for i in keep if matching.predictions[i] is not None and matching.predictions[i].id is None
        ),  # type: ignore[union-attr]
    )
    return part, sub


def results_system_type(text: str) -> str:
    """``"human"`` when every line of a results file says ``system_type: "human"`` (``madqa human``), else
    ``"agent"``; the board labels and filters rows by it.

    >>> results_system_type('{"id": "a", "system_type": "human"}\\n'), results_system_type('{"id": "a"}')
    ('human', 'agent')
    """
    if '"system_type"' not in text:  # the common case costs one scan, no parsing
        return "agent"
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        human = bool(lines) and all(json.loads(line).get("system_type") == "human" for line in lines)
    except (ValueError, AttributeError):
        human = False
    return "human" if human else "agent"


def file_cost(text: str, table: Any) -> dict[str, Any]:
    """The inference cost of a results text (:func:`madqa.metric.board_cost.submission_cost`, every line priced by
    ``table``, a :class:`~madqa.metric.cost.PriceTable`): from the file alone, never from a gold answer.

    Called on an accepted (parsed) text; a line that is no JSON object counts as a line without token counts.
    """
    from madqa.metric.board_cost import submission_cost

    lines: list[dict[str, Any]] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        lines.append(line if isinstance(line, dict) else {})
    return submission_cost(lines, table)


def canonical_sha256(text: str) -> str:
    """sha256 of a results text's content: each JSON line re-serialised with sorted keys, the lines sorted.

    Whitespace, key order, line order and blank lines do not make a file new (unparsable lines count as is).
    """
    import json

    lines = []
    for raw in text.split("\n"):
        if not raw.strip():
            continue
        try:
            lines.append(json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False))
        except (ValueError, RecursionError):
            lines.append(raw.strip())
    return hashlib.sha256("\n".join(sorted(lines)).encode("utf-8", "surrogatepass")).hexdigest()
