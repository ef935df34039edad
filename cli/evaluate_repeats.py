"""``madqa evaluate`` on a file of repeated runs (``madqa run --repeats K``): each repeat scored as a run, then the
spread and consistency across them (:mod:`madqa.metric.repeats`).

The report is repeat ``min(repeat)``'s own report (what the file would report had it been run without ``--repeats``)
with a ``repeats`` entry: per repeat its seed, accuracy and CI; the accuracies' mean, sample SD and min–max; pass@k
and pass^k at k = K (and for every k below, ``curve``); and per-item consistency. A file without ``repeat`` fields
never comes here: it reports exactly as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from madqa.cli.errors import UserError

logger = logging.getLogger(__name__)


def repeat_parts(path: Path, text: str) -> dict[int, str] | None:
    """The file's text per repeat, or ``None`` for an ordinary run (a bad ``repeat`` is a one-line error)."""
    from madqa.metric.jsonl import InputError
    from madqa.metric.repeats import split_repeats

    try:
        return split_repeats(text, str(path))
    except InputError as exc:
        raise UserError(str(exc)) from None


def warn_on_repeat_gaps(path: Path, repeats: Sequence[int]) -> None:
    """A warning when the repeats are not 0..K-1: a gap is usually an unfinished or hand-edited file, and the
    report's k is then the number of repeats present, not the highest label."""
    expected = range(len(repeats))
    if list(repeats) == list(expected):
        return
    missing = sorted(set(range(max(repeats) + 1)) - set(repeats)) if max(repeats) < 10_000 else []
    gap = f"; missing {', '.join(map(str, missing[:10]))}{' …' if len(missing) > 10 else ''}" if missing else ""
    logger.warning(
        "%s: repeats %s are not 0..%d%s; k is the %d repeat(s) present (resume the run with `madqa run --repeats` "
        "to fill the gaps)",
        path,
        ", ".join(map(str, repeats[:10])) + (" …" if len(repeats) > 10 else ""),
        len(repeats) - 1,
        gap,
        len(repeats),
    )


def refuse_repeats(path: Path, text: str, command: str) -> None:
    """A one-line error when ``path`` holds repeated runs, for a command that takes ordinary runs only."""
    if repeat_parts(path, text) is not None:
        raise UserError(f"{path}: holds repeated runs (madqa run --repeats); {command}")


def _seed_of(text: str) -> int | None:
    """The ``seed`` the first line of a repeat records (``None`` when it records none)."""
    from madqa.metric.repeats import SEED_FIELD

    for raw in text.splitlines():
        if raw.strip():
            seed = json.loads(raw).get(SEED_FIELD)
            return seed if isinstance(seed, int) and not isinstance(seed, bool) else None
    return None


def repeats_section(
    parts: Mapping[int, str], runs: Mapping[int, Any], reports: Mapping[int, Mapping[str, Any]]
) -> dict[str, Any]:
    """The report's ``repeats`` entry from each repeat's text, scored run and report."""
    from madqa.metric.repeats import summarize_repeats

    summary = summarize_repeats(
        {r: [it.correct for it in run.items] for r, run in runs.items()},
        {r: reports[r]["accuracy"] for r in runs},
    )
    per_repeat = [
        {
            "repeat": r,
            "seed": _seed_of(parts[r]),
            "accuracy": reports[r]["accuracy"],
            "accuracy_ci": reports[r]["accuracy_ci"],
            "n_predicted": reports[r]["n_predicted"],
        }
        for r in summary.repeats
    ]
    return {**summary.as_dict(), "per_repeat": per_repeat, "report_of_repeat": summary.repeats[0]}


def format_repeats(section: Mapping[str, Any]) -> str:
    """The ``repeats`` entry as text lines (printed above the repeat's own report)."""

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{100 * value:.1f}"

    per = "  ".join(f"r{p['repeat']} (seed {p['seed']}): {pct(p['accuracy'])}" for p in section["per_repeat"])
    sd = "—" if section["sd"] is None else f"{100 * section['sd']:.1f}"
    k = section["k"]
    left_out = f"; {section['unscored']} item(s) unscored in some repeat left out" if section["unscored"] else ""
    return "\n".join(
        [
            f"{k} repeats · accuracy per repeat: {per}",
            f"accuracy mean {pct(section['mean'])} ± {sd} (SD across repeats) · min–max "
            f"{pct(section['min'])}–{pct(section['max'])}",
            f"pass@{k} {pct(section['pass_at_k'])} (any repeat correct) · pass^{k} {pct(section['pass_hat_k'])} "
            f"(every repeat correct) · consistency {pct(section['consistency'])} (same outcome in every repeat) "
            f"over {section['n_items']} items{left_out}",
            f"(the report below is repeat {section['report_of_repeat']}'s)",
        ]
    )
