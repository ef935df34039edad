"""What a participant may see of a test-split submission: aggregates only, never a per-item signal.

A submission's full report (from ``madqa.metric.report.build_report``) holds curves whose every step is one item:
the Kuiper cumulative-difference curve and the accuracy-vs-step-budget curve are ordered by ``steps``, a value the
participant chooses. Giving each test item a distinct ``steps`` value and reading either curve back recovers every
item's correctness from a single submission. Binning does not repair this: the participant also chooses which items
share a bin (pad an item with known-wrong ones), so any curve ordered by submitted effort reveals one aggregate per
bin. The same holds for group breakdowns by hidden labels (hop type, domain, category): a group's accuracy moves when
a crafted item belongs to it.

So :func:`public_report` keeps a fixed allow-list of whole-submission aggregates (accuracy with its CIs and
standard error, ANLS*, Page and Doc F1, the Kuiper statistic and its CI, mean steps, coverage, H.3 error counts and
the error cascade shares), plus group accuracies only for groups of at least :data:`MIN_GROUP` items; everything
else (curves, item ids beyond the public missing list, future keys) is dropped. Also dropped: the wasted-effort
ratio (mean steps of wrong over right items), because with ``steps`` chosen as powers of two its exact value spells
out which items were right. The standard error adds nothing: it is a function of the raw accuracy, the number of
scored items and the calibration, which are all shown.

What a participant can still learn, per accepted submission: the allow-listed numbers, as shown (percentages to
0.1, the Kuiper statistic to 0.01). Each is a sum over many items, but the participant chooses the items' answers,
citations and effort, so a crafted file can make a number depend on chosen items (e.g. submit only one item). The
information per submission is therefore bounded by the shown precision of about a dozen numbers, and the Space
bounds and exposes the number of submissions: the rate limit (accepted files only, per Hub user), the refusal of
duplicate files, and the public board on which every accepted submission is listed. Group accuracies by hop type
(a hidden label) also reveal which group the items a participant answers right belong to, never an answer or an
evidence page. The Space stores only this report; per-item scores stay in the server-side ``item_scores`` table,
which nothing a participant can reach reads except as whole-set shares (the cascade).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Smallest group whose accuracy is shown (smaller groups are dropped with their size).
MIN_GROUP = 20

#: Report keys that are whole-submission aggregates (or public facts about the submission itself).
AGGREGATE_KEYS: tuple[str, ...] = (
    "metric_version", "mode", "n", "n_predicted", "n_scored", "missing", "n_unknown", "matched_by_question",
    "unscored", "n_partial", "judge_calls", "score_sources", "accuracy", "accuracy_raw", "accuracy_ci",
    "accuracy_ci_simplified", "accuracy_se", "calibration", "anls", "page_f1", "doc_f1", "kuiper", "kuiper_normalized",
    "kuiper_ci", "kuiper_ci_normalized", "kuiper_n", "kuiper_excluded", "kuiper_order", "kuiper_resamples",
    "kuiper_seed", "mean_steps", "errors", "cascade",
)  # fmt: skip
#: Group breakdowns by hidden labels: kept per group only when the group is large enough.
GROUP_KEYS: tuple[str, ...] = ("by_hop", "by_domain", "by_category")
#: Fields of a group summary that may be shown (no per-item lists).
GROUP_FIELDS: tuple[str, ...] = ("n", "accuracy", "accuracy_ci")


def cascade_shares(items: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Shares of all gold items whose document was cited, whose page was cited, and that were answered correctly."""
    n = len(items) or 1
    return {
        "found_doc": sum(1 for it in items if (it.get("doc_f1") or 0) > 0) / n,
        "found_page": sum(1 for it in items if (it.get("page_f1") or 0) > 0) / n,
        "correct": sum(1 for it in items if it.get("correct")) / n,
    }


def _groups(groups: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, summary in (groups or {}).items():
        if isinstance(summary, Mapping) and int(summary.get("n") or 0) >= MIN_GROUP:
            out[str(name)] = {k: summary.get(k) for k in GROUP_FIELDS}
    return out


def public_report(report: Mapping[str, Any], items: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The part of a test report that may leave the server (see the module docstring for the argument).

    ``items`` (per-item scores) are used only to add the whole-set error cascade; they are not kept. Idempotent:
    applying it to its own output returns the same dict.
    """
    out = {k: report[k] for k in AGGREGATE_KEYS if k in report}
    if items is not None:
        out["cascade"] = cascade_shares(items)
    for key in GROUP_KEYS:
        if key in report:
            out[key] = _groups(report[key])
    return out
