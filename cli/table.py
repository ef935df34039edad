"""Plain-text rendering of a report (for the CLI and logs); pure: dict in, string out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from madqa.metric.kuiper import NOT_APPLICABLE, not_applicable


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _num(value: Any, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(pair: Sequence[float] | None, pct: bool = True) -> str:
    """``  95% CI [lo, hi]``, or nothing when there is no interval (never a dangling "95% CI")."""
    if pair is None:
        return ""
    lo, hi = pair
    return f"  95% CI [{100 * lo:.1f}, {100 * hi:.1f}]" if pct else f"  95% CI [{lo:.2f}, {hi:.2f}]"


def _kuiper_line(r: Mapping[str, Any]) -> str:
    """The Kuiper row; without an item that has an effort count there is no statistic, and the row says why."""
    where = f"{r['kuiper_order']} order, {r['kuiper_n']} items, {r['kuiper_excluded']} without effort"
    if not_applicable(r):
        return f"Kuiper        {'n/a':>7}  {NOT_APPLICABLE[5:-1]}: the steps do not vary ({where})"
    if r["kuiper"] is None:
        return (
            f"Kuiper        {_num(None):>7}  undefined: no item has an effort count (steps or search_history); "
            f"{r['kuiper_excluded']} items without effort"
        )
    return (
        f"Kuiper        {_num(r['kuiper']):>7}{_ci(r['kuiper_ci'], pct=False)}; K/N "
        f"{_num(r['kuiper_normalized'], 4)} ({where})"
    )


def _groups(title: str, groups: Mapping[str, Mapping[str, Any]]) -> list[str]:
    rows = [f"{title}:"]
    width = max((len(name) for name in groups), default=0)
    for name, g in groups.items():
        rows.append(
            f"  {name:<{width}}  n={g['n']:<4} acc {_pct(g['accuracy']):>6}  page F1 {_pct(g['page_f1']):>6}"
            f"  doc F1 {_pct(g['doc_f1']):>6}"
        )
    return rows


def format_report(report: Mapping[str, Any], title: str = "") -> str:
    """A readable multi-line summary of one report."""
    r = report
    lines = [title] if title else []
    calibration = r.get("calibration") or {}
    corrected = f" ({calibration['note']})" if r["mode"] == "judge" and calibration.get("note") else ""
    lines += [
        f"mode {r['mode']} · {r['n']} gold items · {r['n_predicted']} predicted · {r['missing']} missing · "
        f"{r['n_unknown']} unknown ids · {r['matched_by_question']} matched by question · {r['unscored']} unscored",
        f"accuracy      {_pct(r['accuracy']):>7}{_ci(r['accuracy_ci'])}{corrected}; raw {_pct(r['accuracy_raw'])}",
        f"ANLS*         {_pct(r['anls']):>7}",
        f"Page F1       {_pct(r['page_f1']):>7}",
        f"Doc F1        {_pct(r['doc_f1']):>7}",
        _kuiper_line(r),
        f"wasted effort {_num(r['wasted_effort_ratio']):>7}  (mean steps incorrect / correct; mean steps "
        f"{_num(r['mean_steps'])})",
    ]
    lines += _groups("by hop type", r["by_hop"])
    lines += _groups("by domain", r["by_domain"])
    lines += _groups("by category", r["by_category"])
    errors = r["errors"]
    parts = [f"{k} {v} ({_pct(errors['shares'][k])})" for k, v in errors["counts"].items()]
    lines.append(f"errors ({errors['n_incorrect']} incorrect): " + ", ".join(parts))
    curve = r["budget_curve"]
    if curve:
        lines.append("accuracy by step budget: " + " ".join(f"≤{p['budget']}:{_pct(p['accuracy'])}" for p in curve))
    if r.get("judge_usage"):
        from madqa.cli.judge_usage import judge_text

        lines.append(judge_text(r["judge_usage"]))
    return "\n".join(lines)


def format_kappa(compare: Mapping[str, Any]) -> str:
    """Cohen's κ matrix as text."""
    names = list(compare["systems"])
    labels = [f"S{i + 1}" for i in range(len(names))]
    lines = ["Cohen's kappa on per-item correctness:"]
    lines += [f"  {label} = {name}" for label, name in zip(labels, names, strict=True)]
    lines.append("        " + " ".join(f"{label:>6}" for label in labels))
    for label, a in zip(labels, names, strict=True):
        row = compare["kappa"][a]
        lines.append(f"  {label:<5} " + " ".join(f"{_num(row[b]):>6}" for b in names))
    return "\n".join(lines)
