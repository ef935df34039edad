"""``madqa compare``'s paired inference: every pair's difference in accuracy with its CI and p-value, and rank
intervals with tie groups (the statistics are :mod:`madqa.metric.paired`'s; this module applies and prints them).

Each pair is compared on the items both runs scored (in ``compare``'s ANLS* mode, every gold item: a missing
answer is scored 0): the difference ``A - B`` in points, its 95% paired bootstrap interval (``--resamples``,
``--seed``), McNemar's exact p-value, and whether Holm's correction across all pairs keeps it significant at 5%.
The rank intervals and tie groups follow from those significant differences.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ALPHA_TEXT = "5% family-wise (Holm across pairs)"


def paired_results(
    runs: Mapping[str, Any], accuracy: Mapping[str, float | None], *, resamples: int, seed: int
) -> tuple[dict[tuple[str, str], dict[str, Any]], dict[str, dict[str, Any]]]:
    """Per pair ``(a, b)`` (``a`` before ``b`` in ``runs``) the paired fields, and per run its rank interval.

    ``runs``: name → the metric's ``ScoredRun`` (items in gold order); ``accuracy``: name → the point estimate
    the ranks order by.
    """
    from madqa.metric.paired import ALPHA, PairedError, holm_significant, paired_difference, rank_intervals

    names = list(runs)
    scores = {name: {it.id: it.score for it in run.items} for name, run in runs.items()}
    fields: dict[tuple[str, str], dict[str, Any]] = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            try:
                d = paired_difference(scores[a], scores[b], n_resamples=resamples, seed=seed)
            except PairedError as exc:
                fields[(a, b)] = {"n_shared": 0, "difference": None, "difference_ci": None, "p_value": None}
                fields[(a, b)]["reason"] = str(exc)
                continue
            fields[(a, b)] = {
                "n_shared": d.n_shared,
                "difference": d.difference,
                "difference_ci": list(d.ci),
                "p_value": d.p_value,
                "test": d.test,
            }
    p_values = {pair: f["p_value"] for pair, f in fields.items() if f["p_value"] is not None}
    significant = holm_significant(p_values, ALPHA) if p_values else set()
    for pair, f in fields.items():
        f["significant"] = pair in significant
    estimates = {name: float(accuracy[name] or 0.0) for name in names}
    ranks = rank_intervals(estimates, p_values, ALPHA)
    return fields, {
        name: {"low": r.low, "high": r.high, "text": r.text(), "tie_group": r.group} for name, r in ranks.items()
    }


def pareto_fronts(systems: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The accuracy–cost (USD per question, runs whose every line is priced) and accuracy–steps (mean steps)
    frontiers of ``compare``'s systems (:func:`madqa.metric.pareto.pareto_front`), and the runs each leaves out."""
    from madqa.metric.pareto import pareto_front

    out: dict[str, Any] = {}
    for axis, value in (("cost", _usd_per_question), ("steps", lambda s: s.get("mean_steps"))):
        points, left_out = {}, []
        for system in systems:
            x, accuracy = value(system), system.get("accuracy")
            if x is None or accuracy is None:
                left_out.append(system["name"])
            else:
                points[system["name"]] = (float(x), float(accuracy))
        out[axis] = {"frontier": pareto_front(points), "left_out": left_out}
    return out


def _usd_per_question(system: Mapping[str, Any]) -> float | None:
    cost = system.get("cost") or {}
    return cost.get("per_question_usd") if cost.get("complete") else None


def format_pareto(pareto: Mapping[str, Any]) -> list[str]:
    """One line per frontier: its members by increasing cost (or steps), and the runs it leaves out."""
    lines = []
    for axis, label in (("cost", "USD per question"), ("steps", "mean steps")):
        front = pareto.get(axis) or {}
        members = ", ".join(front.get("frontier") or []) or "—"
        out = f" (left out, no {label}: {', '.join(front['left_out'])})" if front.get("left_out") else ""
        lines.append(f"Pareto frontier, accuracy vs {label}: {members}{out}")
    return lines


def _points(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f}"


def _p(value: float | None) -> str:
    return "p=—" if value is None else ("p<0.001" if value < 0.001 else f"p={value:.3f}")


def format_paired(result: Mapping[str, Any], names: Sequence[str], width: int) -> list[str]:
    """The pairwise matrix (row minus column, points, and p) and the rank intervals, as text lines."""
    pairs = {(p["a"], p["b"]): p for p in result["pairs"]}
    lines = [
        "",
        f"paired difference in accuracy, row − column (points; p: McNemar exact; *: significant at {ALPHA_TEXT})",
        " " * (width + 2) + "".join(f"{n[:16]:>18}" for n in names),
    ]
    for a in names:
        cells = []
        for b in names:
            p = pairs.get((a, b)) or pairs.get((b, a))
            if p is None or p.get("difference") is None:
                cells.append(f"{'—':>18}")
                continue
            sign = 1 if (a, b) in pairs else -1
            mark = "*" if p["significant"] else " "
            cells.append(f"{_points(sign * p['difference']):>7} {_p(p['p_value']):<8}{mark:>2}")
        lines.append(f"{a:<{width}}  " + "".join(cells))
    lines += ["", "95% paired bootstrap intervals (A − B, points)"]
    for p in result["pairs"]:
        ci = p.get("difference_ci")
        ci_text = "—" if not ci else f"[{_points(ci[0])}, {_points(ci[1])}]"
        shared = f"{p['n_shared']} shared items" if p["n_shared"] else str(p.get("reason", "no shared items"))
        lines.append(f"  A={p['a']}  B={p['b']}: {_points(p.get('difference'))} {ci_text} ({shared})")
    ranks = result.get("ranks") or {}
    if ranks:
        lines += ["", "rank interval (the ranks each run could hold given the significant differences) · tie group"]
        for name in sorted(names, key=lambda n: (ranks[n]["low"], ranks[n]["high"], names.index(n))):
            lines.append(f"{name:<{width}}  {ranks[name]['text']:>7}  group {ranks[name]['tie_group']}")
    return lines
