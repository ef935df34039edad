"""``madqa compare``'s accuracy at fixed step budgets and the paper's Oracle Gap.

**Fixed budgets** (``--budgets``, default :data:`madqa.metric.aggregate.FIXED_BUDGETS`: 1, 3 and 10 steps): each
run's accuracy counting only the items it answered correctly within that many steps
(:func:`madqa.metric.aggregate.accuracy_at_budgets`, read off the paper's budget curve, Fig. 9). Not on the
leaderboard: a submitter writes ``steps`` themself, so accuracy at a budget on hidden labels could be steered to
isolate single items (set one item's steps to 1 and the rest above the budget: the column then shows whether that one
item is right).

**Oracle Gap** (paper §5.2: oracle accuracy minus the agent's, "nearly 20 %"). A run is an oracle run when every line's
``config.oracle`` is true (``madqa run --oracle``: the gold evidence pages are shown instead of searched) or, for a
human run, ``mode`` is ``"oracle"`` (``madqa human --oracle``: the paper's Human Oracle Retriever). Every oracle
run is set against every other run of the comparison: the gap ``oracle − run`` in accuracy on their shared items, its
95% paired bootstrap interval and McNemar's exact p-value (:func:`madqa.metric.paired.paired_difference`, seeded by
``--seed``, ``--resamples``); ``same_system`` says whether the two runs' lines name the same agent and model (the
paper's gap of one system). Detected automatically: no flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def is_oracle(lines: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every line of a run was answered with the gold evidence pages: an agent's ``config.oracle`` true, or
    a human's ``mode: "oracle"`` (``madqa human --oracle``).

    >>> is_oracle([{"config": {"oracle": True}}]), is_oracle([{"config": {"oracle": True}}, {"config": {}}])
    (True, False)
    >>> is_oracle([{"mode": "oracle", "system_type": "human"}]), is_oracle([])
    (True, False)
    """

    def oracle(line: Mapping[str, Any]) -> bool:
        config = line.get("config")
        return line.get("mode") == "oracle" or (isinstance(config, Mapping) and config.get("oracle") is True)

    return bool(lines) and all(oracle(line) for line in lines)


def system_of(lines: Sequence[Mapping[str, Any]]) -> tuple[Any, Any] | None:
    """The ``(agent, model)`` every line names, or ``None`` when they differ or are missing.

    >>> system_of([{"agent": "bm25", "model": "m"}] * 2), system_of([{"agent": "a"}, {"agent": "b"}])
    (('bm25', 'm'), None)
    """
    found = {(line.get("agent"), line.get("model")) for line in lines}
    return next(iter(found)) if len(found) == 1 and None not in next(iter(found)) else None


def oracle_gaps(
    runs: Mapping[str, Any], lines: Mapping[str, Sequence[Mapping[str, Any]]], *, resamples: int, seed: int
) -> list[dict[str, Any]]:
    """Per (oracle run, other run) the Oracle Gap (module docstring); empty when no run is an oracle run.

    ``runs``: name → the metric's ``ScoredRun`` (items in gold order); ``lines``: name → the file's line objects.
    """
    from madqa.metric.paired import PairedError, paired_difference

    oracles = [name for name in runs if is_oracle(lines[name])]
    scores = {name: {it.id: it.score for it in run.items} for name, run in runs.items()}
    gaps = []
    for oracle in oracles:
        for other in runs:
            if other == oracle or other in oracles:
                continue
            system = system_of(lines[oracle])
            gap: dict[str, Any] = {
                "oracle": oracle,
                "run": other,
                "same_system": system is not None and system == system_of(lines[other]),
            }
            try:
                d = paired_difference(scores[oracle], scores[other], n_resamples=resamples, seed=seed)
            except PairedError as exc:
                gaps.append({**gap, "n_shared": 0, "gap": None, "gap_ci": None, "p_value": None, "reason": str(exc)})
                continue
            gaps.append(
                {
                    **gap,
                    "n_shared": d.n_shared,
                    "oracle_accuracy": d.accuracy_a,
                    "run_accuracy": d.accuracy_b,
                    "gap": d.difference,
                    "gap_ci": list(d.ci),
                    "p_value": d.p_value,
                    "test": d.test,
                }
            )
    return gaps


def budget_rows(systems: Sequence[Mapping[str, Any]], budgets: Sequence[int]) -> list[str]:
    """The fixed-budget table as text lines (system rows, one column per budget)."""
    header = "system".ljust(_width(systems)) + "".join(f"{f'≤{b} steps':>12}" for b in budgets)
    lines = ["", "accuracy (%) within a fixed step budget (items right in at most that many steps)", header]
    for s in systems:
        values = {int(p["budget"]): p["accuracy"] for p in s["accuracy_at_budgets"]}
        cells = "".join(f"{'—' if values.get(b) is None else f'{100 * values[b]:.1f}':>12}" for b in budgets)
        lines.append(str(s["name"]).ljust(_width(systems)) + cells)
    return lines


def _width(systems: Sequence[Mapping[str, Any]]) -> int:
    return max([len(str(s["name"])) for s in systems] + [len("system")]) + 2


def gap_rows(gaps: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Oracle Gap lines (none when no run is an oracle run)."""
    if not gaps:
        return []
    lines = ["", "oracle gap: oracle accuracy − run accuracy (points; 95% paired bootstrap CI; p: McNemar exact)"]
    for g in gaps:
        same = "same agent and model" if g["same_system"] else "another system"
        if g["gap"] is None:
            lines.append(f"  {g['oracle']} − {g['run']}: — ({g.get('reason')})")
            continue
        low, high = g["gap_ci"]
        p = "p<0.001" if g["p_value"] < 0.001 else f"p={g['p_value']:.3f}"
        lines.append(
            f"  {g['oracle']} − {g['run']}: {100 * g['gap']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] {p} "
            f"({g['n_shared']} shared items; {same})"
        )
    return lines
