"""What a participant may see of a test-split submission: aggregates only, never a per-item signal.

A submission's full report (from ``madqa.metric.report.build_report``) holds curves whose every step is one item:
the Kuiper cumulative-difference curve and the accuracy-vs-step-budget curve are ordered by ``steps``, a value the
participant chooses. Giving each test item a distinct ``steps`` value and reading either curve back recovers every
item's correctness from a single submission. Binning does not repair this: the participant also chooses which items
share a bin (pad an item with known-wrong ones), so any curve ordered by submitted effort reveals one aggregate per
bin. The same holds for group breakdowns by hidden labels (hop type, domain, category): a group's accuracy moves when
a crafted item belongs to it.

So :func:`public_report` keeps a fixed allow-list of whole-submission aggregates (accuracy with its CIs and standard
error, ANLS*, Page and Doc F1, the Kuiper statistic and its CI, mean steps, coverage, H.3 error counts, the error
cascade shares and the accuracy within 1, 3 and 10 steps), plus group accuracies only for groups of at least
:data:`MIN_GROUP` items; everything else (curves, item ids beyond the public missing list, future keys) is dropped.
Also dropped: the wasted-effort ratio (mean steps of wrong over right items), because with ``steps`` chosen as powers
of two its exact value spells out which items were right. The accuracies within a step budget are three points of the
budget curve: like every shown number, each is a sum over items whose steps the participant chose (put one item at 1
step and Acc@1 is that item's correctness), so each counts in the bound below, as one more number of ``n + 1`` values.
The standard error adds nothing: it is a function of the raw accuracy, the number of scored items and the calibration,
which are all shown.

What a participant can still learn, per accepted submission: the allow-listed numbers, as shown (percentages to
0.1, the Kuiper statistic to 0.01). Each is a sum over many items, but the participant chooses the items' answers,
citations and effort, so a crafted file can make a number depend on chosen items (e.g. submit only one item). The
information per submission is therefore bounded by the shown precision of about a dozen numbers, and the Space
bounds and exposes the number of submissions: the rate limit (accepted files only, per Hub user), the refusal of
duplicate files, and the public board on which every accepted submission is listed. Group accuracies by hop type
(a hidden label) also reveal which group the items a participant answers right belong to, never an answer or an
evidence page. The Space stores only this report; per-item scores stay in the server-side ``item_scores`` table,
which nothing a participant can reach reads except as whole-set shares (the cascade).

Also kept: the metric's input notes of the uploaded file (``input_notes``: how many lines have no ``answer``, how
many citations are above the page cap, and the misspelt field names) and their messages (``warnings``), so that a
stored submission shows the warnings it was accepted with. Both are made by the parser from the uploaded text
alone, before any line is matched to a test question (:mod:`madqa.metric.notes`): counts, the file's own field names
and line numbers, never a gold value, and the same for any two files that differ only in which items are right.
They are kept bounded (:func:`input_notes`, :func:`input_warnings`).

What a participant can learn from *when* the answer comes is bounded apart (:mod:`.quiet`: answers leave on a time
grid, at most :func:`~.quiet.timing_bits_bound` bits per file, and the private part is scored while no answer is
at work). ``madqa bench leakage`` measures what a strong decoder learns from the shown numbers, beside
:func:`public_bits_bound`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from madqa.metric.aggregate import FIXED_BUDGETS, accuracy_at_budgets
from madqa.metric.notes import MAX_CHECKED_KEY_CHARS, MAX_WARNED_KEYS

#: Smallest group whose accuracy is shown (smaller groups are dropped with their size).
MIN_GROUP = 20
#: The step budgets of the board's accuracy-at-budget columns (``madqa compare --budgets``' default: one search, a
#: few, the paper's T = 10). Three points of the budget curve, never the curve (see the module docstring).
BOARD_BUDGETS: tuple[int, ...] = FIXED_BUDGETS

#: Report keys that are whole-submission aggregates (or public facts about the submission itself).
AGGREGATE_KEYS: tuple[str, ...] = (
    "metric_version",
    "mode",
    "n",
    "n_predicted",
    "n_scored",
    "missing",
    "n_unknown",
    "matched_by_question",
    "unscored",
    "n_partial",
    "judge_calls",
    "score_sources",
    "accuracy",
    "accuracy_raw",
    "accuracy_ci",
    "accuracy_ci_simplified",
    "accuracy_se",
    "calibration",
    "anls",
    "page_f1",
    "doc_f1",
    "kuiper",
    "kuiper_normalized",
    "kuiper_ci",
    "kuiper_ci_normalized",
    "kuiper_applicable",
    "kuiper_n",
    "kuiper_excluded",
    "kuiper_order",
    "kuiper_resamples",
    "kuiper_seed",
    "mean_steps",
    "errors",
    "cascade",
    "accuracy_at_budgets",
)
#: Group breakdowns by hidden labels: kept per group only when the group is large enough.
GROUP_KEYS: tuple[str, ...] = ("by_hop", "by_domain", "by_category")
#: Fields of a group summary that may be shown (no per-item lists).
GROUP_FIELDS: tuple[str, ...] = ("n", "accuracy", "accuracy_ci")
#: Counts of the metric's input notes (``input_notes``); its ``unknown_fields`` are kept as names too.
NOTE_COUNTS: tuple[str, ...] = ("lines_without_answer", "citations_above_max_page")
#: Most input warnings kept: one per misspelt name the metric warns about, its "more names" count, and two kinds.
MAX_WARNINGS = MAX_WARNED_KEYS + 3
#: Longest input warning kept (the metric's are shorter: a name is at most ``MAX_CHECKED_KEY_CHARS`` characters).
MAX_WARNING_CHARS = 400


def cascade_shares(items: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Shares of all gold items whose document was cited, whose page was cited, and that were answered correctly."""
    n = len(items) or 1
    return {
        "found_doc": sum(1 for it in items if (it.get("doc_f1") or 0) > 0) / n,
        "found_page": sum(1 for it in items if (it.get("page_f1") or 0) > 0) / n,
        "correct": sum(1 for it in items if it.get("correct")) / n,
    }


def budget_accuracies(items: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Accuracy within each of :data:`BOARD_BUDGETS` steps over the scored items (``build_report``'s ``items``):
    :func:`madqa.metric.aggregate.accuracy_at_budgets`, keyed by the budget as text (a JSON object's keys)."""
    # the metric's function reads an item's ``correct`` and ``steps`` only (a missing one: unscored, unknown)
    scores: list[Any] = [SimpleNamespace(correct=it.get("correct"), steps=it.get("steps")) for it in items]
    return {str(b): v for b, v in accuracy_at_budgets(scores, BOARD_BUDGETS).items()}


def _groups(groups: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, summary in (groups or {}).items():
        if isinstance(summary, Mapping) and int(summary.get("n") or 0) >= MIN_GROUP:
            out[str(name)] = {k: summary.get(k) for k in GROUP_FIELDS}
    return out


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def input_notes(notes: Any) -> dict[str, Any]:
    """The metric's ``input_notes`` of the uploaded file, bounded: its counts, and at most :data:`MAX_WARNED_KEYS`
    misspelt field names with the field each is close to (the names the warnings quote)."""
    notes = notes if isinstance(notes, Mapping) else {}
    out: dict[str, Any] = {key: _count(notes.get(key)) for key in NOTE_COUNTS}
    fields = notes.get("unknown_fields")
    pairs = list(fields.items())[:MAX_WARNED_KEYS] if isinstance(fields, Mapping) else []
    out["unknown_fields"] = {
        name: close
        for name, close in pairs
        if isinstance(name, str) and isinstance(close, str) and max(len(name), len(close)) <= MAX_CHECKED_KEY_CHARS
    }
    return out


def input_warnings(report: Mapping[str, Any]) -> tuple[str, ...]:
    """The metric's input warnings of a (stored) report, bounded; ``()`` for reports stored before they were kept."""
    warnings = report.get("warnings")
    if not isinstance(warnings, (list, tuple)):
        return ()
    return tuple(w[:MAX_WARNING_CHARS] for w in warnings[:MAX_WARNINGS] if isinstance(w, str))


def public_report(report: Mapping[str, Any], items: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The part of a test report that may leave the server (see the module docstring for the argument).

    ``items`` (per-item scores) are used only to add the whole-set error cascade and the accuracies at the
    :data:`BOARD_BUDGETS`; they are not kept. Idempotent:
    applying it to its own output returns the same dict.
    """
    out = {k: report[k] for k in AGGREGATE_KEYS if k in report}
    if items is not None:
        out["cascade"] = cascade_shares(items)
        out["accuracy_at_budgets"] = budget_accuracies(items)
    for key in GROUP_KEYS:
        if key in report:
            out[key] = _groups(report[key])
    if "input_notes" in report:  # from the uploaded file alone (see the module docstring)
        out["input_notes"] = input_notes(report["input_notes"])
    if "warnings" in report:
        out["warnings"] = list(input_warnings(report))
    return out


#: Distinct values of a percentage shown to 0.1 point, and of a Kuiper value shown to 0.01 on its 0–100 scale or
#: "n/a (fixed effort)" (``kuiper_applicable``: whether the file's own steps vary on the items it answers).
_PCT_LEVELS, _KUIPER_LEVELS = 1001, 10001 + 1


def public_bits_bound(n: int, group_sizes: Sequence[int] = (), *, judge: bool = False) -> float:
    """Upper bound, in bits, on what one accepted test submission's shown numbers say about the public part.

    ``n`` public items; ``group_sizes`` the hop groups large enough to be shown (:data:`MIN_GROUP`). Each shown
    number is one of a known number of values, and the bound is the sum of their log2: accuracy (``n + 1`` values,
    ``2n + 1`` with the judge's half credit; its CI, standard error and calibrated value are functions of it and of
    public constants), ANLS*, Page F1 and Doc F1 to 0.1 point, the Kuiper statistic and its CI to 0.01, three H.3
    error counts (the no-answer count is the file's own) and the cascade's found-document and found-page shares
    (``n + 1`` values each), the accuracy within each of the :data:`BOARD_BUDGETS` (``n + 1`` values each: binary
    correctness, whatever the mode), and each shown group's accuracy. The cost column is a function of the file
    alone (its models and token counts) and carries nothing. Counts the participant knows from their own file
    (coverage, mean steps, input notes) carry nothing. The private part adds nothing: no shown number depends on it.

    >>> round(public_bits_bound(24), 1), round(public_bits_bound(250, [100, 80]), 1)
    (111.6, 154.5)
    """
    levels = 2 * n + 1 if judge else n + 1
    bits = math.log2(levels) + 3 * math.log2(_PCT_LEVELS) + 3 * math.log2(_KUIPER_LEVELS)
    bits += (5 + len(BOARD_BUDGETS)) * math.log2(n + 1)
    bits += sum(math.log2((2 * g + 1) if judge else (g + 1)) for g in group_sizes if g >= MIN_GROUP)
    return bits
