"""Stored submissions → the leaderboard table (columns from ``madqa.metric.schema.METRICS``) and the plots.

An empty store renders an empty table with the right columns, never an error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from madqa.metric.board_cost import cost_note
from madqa.metric.kuiper import not_applicable
from madqa.metric.schema import METRICS, MetricSpec

from .disclosure import BOARD_BUDGETS, public_report
from .display import interval
from .storage import ORIGINS, StoredSubmission, SubmissionStore

#: Board columns from the metric declaration (raw accuracy and ANLS* are kept for the detail view only).
#: The wasted-effort ratio is not shown for test submissions (see ``disclosure.py``: it can spell out items).
BOARD_METRICS: tuple[MetricSpec, ...] = tuple(
    m for m in METRICS if m.key not in ("accuracy_raw", "kuiper_normalized", "wasted_effort_ratio")
)
#: "Origin": maintainer baseline / verified / self-reported (``storage.ORIGINS``; effort is as reported by the origin).
#: "Type": human (a ``madqa human`` run, every line ``system_type: "human"``) or agent; searchable like the names.
ID_COLUMNS = ("Rank", "System", "Submitter", "Origin", "Type", "Agent", "Model", "Date")
HOP_COLUMNS = (("cross_page", "X-Page"), ("cross_doc", "X-Doc"))
#: One standard error of the accuracy in percentage points: the paper's "±" (its Table 3), beside the 95% CI.
SE_COLUMN = "Accuracy ±"
#: Rank interval ("1–3") and tie group of a row (:func:`rank_columns`), and whether its Kuiper value is n/a.
RANK_INTERVAL, TIE_GROUP, KUIPER_NA = "Rank interval", "Tie group", "Kuiper n/a"
#: USD per question of the submitted file (NaN when not available) and why not (``""`` when there is a number), and
#: the date of the prices it was priced with (:mod:`madqa.metric.board_cost`; from the file alone, no gold).
COST_COLUMN, COST_NOTE, PRICES_AS_OF = "USD per question", "Cost note", "Prices as of"
#: Accuracy within 1, 3 and 10 steps (public part; ``disclosure.BOARD_BUDGETS``): the column of each budget.
BUDGET_COLUMNS: tuple[tuple[int, str], ...] = tuple((b, f"Acc@{b}") for b in BOARD_BUDGETS)
#: Where the submitter's traces are (a checked Hub dataset or bucket URL, :mod:`.traces_link`), ``""`` if not given.
TRACES_COLUMN = "Traces"


def _pct(value: Any) -> float | None:
    return None if value is None else round(100.0 * float(value), 1)


def board_columns() -> list[str]:
    """Column names of the board, in order."""
    cols = list(ID_COLUMNS)
    for m in BOARD_METRICS:
        cols.append(m.label)
        if m.key == "accuracy":
            cols.extend((SE_COLUMN, "Accuracy CI"))
            cols.extend(label for _, label in HOP_COLUMNS)
        if m.key == "kuiper":
            cols.append("Kuiper CI")
    cols += ["Mean steps", *(label for _, label in BUDGET_COLUMNS), COST_COLUMN, COST_NOTE, PRICES_AS_OF]
    return cols + ["Coverage", "Mode", RANK_INTERVAL, TIE_GROUP, KUIPER_NA, TRACES_COLUMN, "#"]


def system_type(sub: StoredSubmission) -> str:
    """``"human"`` for a human run, else ``"agent"`` (the stored column; older rows are backfilled at open)."""
    return sub.system_type


def row_of(sub: StoredSubmission) -> dict[str, Any]:
    """One board row (numbers as numbers so that sorting works)."""
    r = public_report(sub.report)  # also for rows stored before reports were reduced to aggregates
    row: dict[str, Any] = {
        "System": sub.form["system"],
        "Submitter": sub.form["submitter"],
        "Origin": ORIGINS.get(sub.origin, sub.origin),
        "Type": system_type(sub),
        "Agent": sub.form["agent"],
        "Model": sub.form["model"],
        "Date": sub.created[:10],
    }
    for m in BOARD_METRICS:
        value = r.get(m.key)
        row[m.label] = _pct(value) if m.percent else (None if value is None else round(float(value), 1))
        if m.key == "accuracy":
            row[SE_COLUMN] = _pct(r.get("accuracy_se"))
            row["Accuracy CI"] = interval(r.get("accuracy_ci"))  # in %, as the row detail writes it
            for hop, label in HOP_COLUMNS:
                row[label] = _pct((r.get("by_hop") or {}).get(hop, {}).get("accuracy"))
        if m.key == "kuiper":
            row["Kuiper CI"] = interval(r.get("kuiper_ci"), shares=False)
            row[KUIPER_NA] = not_applicable(r)
            if row[KUIPER_NA]:  # fixed effort: no value (older rows stored one), never a "best" 0
                row[m.label], row["Kuiper CI"] = None, ""
    steps = r.get("mean_steps")
    row["Mean steps"] = None if steps is None else round(float(steps), 1)  # one rounding, to the shown precision
    budgets = r.get("accuracy_at_budgets") or {}  # rows stored before the budget columns: none
    for budget, label in BUDGET_COLUMNS:
        row[label] = _pct(budgets.get(str(budget)))
    row.update(cost_cells(sub.cost))
    row["Coverage"] = _pct(r["n_predicted"] / r["n"]) if r.get("n") else None
    row["Mode"] = sub.mode
    row[TRACES_COLUMN] = sub.form.get("traces", "")
    row["#"] = sub.id
    return row


def cost_cells(cost: dict[str, Any] | None) -> dict[str, Any]:
    """A row's cost cells: USD per question (``None`` unless every line of the file is priced), the note shown
    instead (``n/a (model not priced)``, ``n/a (human run)``, ``n/a (no tokens)``; ``n/a (not recorded)`` for
    rows stored before costs were), and the prices' date.

    >>> cost_cells({"status": "priced", "usd_per_question": 0.0123, "prices_as_of": "2025-09-29"})
    {'USD per question': 0.0123, 'Cost note': '', 'Prices as of': '2025-09-29'}
    >>> cost_cells(None)["Cost note"]
    'n/a (not recorded)'
    """
    note = cost_note(cost)
    usd = None if note or cost is None else float(cost["usd_per_question"])
    return {COST_COLUMN: usd, COST_NOTE: note, PRICES_AS_OF: (cost or {}).get("prices_as_of") or ""}


def board_frame(subs: Sequence[StoredSubmission]) -> pd.DataFrame:
    """The board, sorted by accuracy (best first), with a competition rank."""
    columns = board_columns()
    if not subs:
        return pd.DataFrame(columns=columns)
    df = pd.DataFrame([row_of(s) for s in subs])
    df = df.sort_values(["Accuracy", "#"], ascending=[False, True], na_position="last").reset_index(drop=True)
    df["Rank"] = df["Accuracy"].rank(method="min", ascending=False, na_option="bottom").astype(int)
    df[RANK_INTERVAL], df[TIE_GROUP] = rank_columns(df)
    return df[columns]


def rank_columns(df: pd.DataFrame) -> tuple[list[str | None], list[int | None]]:
    """Each row's rank interval (``"1–3"``) and tie group (``None``: tied with no other row), from the board's shown
    numbers only.

    The board holds aggregates, not per-item scores (``disclosure.py``), so the pairs are compared unpaired: a
    two-sided z-test of the difference of the shown accuracies (percent, one decimal) with the shown standard
    errors (``Accuracy ±``), Holm-corrected at 5% across all pairs of rows with an accuracy
    (:func:`madqa.metric.paired.rank_intervals`). A function of shown columns, it discloses nothing more. A row
    without an accuracy has none; a row without a standard error is significantly different from no row.
    """
    from madqa.metric.paired import rank_intervals, unpaired_p

    acc = pd.to_numeric(df["Accuracy"], errors="coerce")
    se = pd.to_numeric(df[SE_COLUMN], errors="coerce")
    keys = [str(i) for i in df.index if pd.notna(acc[i])]
    p_values = {}
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            sa, sb = se[int(a)], se[int(b)]
            if pd.notna(sa) and pd.notna(sb):
                p_values[(a, b)] = unpaired_p((acc[int(a)] - acc[int(b)]) / 100, sa / 100, sb / 100)
    ranks = rank_intervals({k: float(acc[int(k)]) for k in keys}, p_values)
    sizes = Counter(r.group for r in ranks.values())
    texts = [ranks[str(i)].text() if str(i) in ranks else None for i in df.index]
    groups = [ranks[str(i)].group if str(i) in ranks and sizes[ranks[str(i)].group] > 1 else None for i in df.index]
    return texts, groups


def best_values(df: pd.DataFrame) -> dict[str, Any]:
    """The best value of each metric column (direction from ``METRICS``).

    The lowest Kuiper value is looked for among rows with an accuracy strictly between 0 and 100 only: a run that
    answers nothing (or everything) right has a flat cumulative-difference curve (Kuiper 0), which says nothing about
    calibration.
    """
    out: dict[str, Any] = {}
    directions = {m.label: m.higher_is_better for m in BOARD_METRICS}
    directions.update({label: True for _, label in HOP_COLUMNS})
    accuracy = pd.to_numeric(df["Accuracy"], errors="coerce") if "Accuracy" in df else pd.Series(dtype=float)
    for col, higher in directions.items():
        rows = df[(accuracy > 0) & (accuracy < 100)] if col == "Kuiper" and "Accuracy" in df else df
        series = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows else pd.Series(dtype=float)
        if not series.empty:
            out[col] = series.max() if higher else series.min()
    return out


def styled_board(df: pd.DataFrame) -> Any:
    """The whole board as shown (every column, :mod:`.board_view`'s formats and highlights), a pandas ``Styler``."""
    from .board_view import COLUMNS, styled_view, view_frame

    return styled_view(view_frame(df, [c.name for c in COLUMNS]))


def filter_board(df: pd.DataFrame, query: str) -> pd.DataFrame:
    """Rows whose system, submitter, type (``human``), agent or model contains ``query`` (case-insensitive)."""
    q = (query or "").strip().lower()
    if not q:
        return df
    mask = pd.Series(False, index=df.index)
    for col in ("System", "Submitter", "Type", "Agent", "Model"):
        mask |= df[col].astype(str).str.lower().str.contains(q, regex=False)
    return df[mask]


def system_choices(store: SubmissionStore) -> list[tuple[str, int]]:
    """(label, submission id) pairs for the plot selector: the system's name first, its number to tell apart."""
    from .board_view import system_label

    return [(system_label(s.id, s.form["system"]), s.id) for s in store.submissions()]


#: Columns of the official ranking (a Ladder snapshot of the private part; see ``ladder.py``).
OFFICIAL_COLUMNS = (
    "Rank",
    "System",
    "Submitter",
    "Origin",
    "Type",
    "Model",
    "Private accuracy",
    "Files",
    "Snapshot",
    "#",
)


def official_frame(store: SubmissionStore, snapshot: Any) -> pd.DataFrame:
    """The official ranking from a snapshot (``Snapshots.latest()``: taken, taken_at, margin, entries).

    One row per identity: the Ladder value of its private part (a multiple of the margin, in percent), the
    submission that set it, and how many of its files the snapshot saw. Files whose private part could not be
    scored (its CPU budget, which depends on the private gold answers' lengths) are counted with the others, never
    apart: a separate count would say which files crossed it.
    """
    if snapshot is None:
        return pd.DataFrame(columns=list(OFFICIAL_COLUMNS))
    taken, _, _, entries = snapshot
    subs = {s.id: s for s in store.submissions()}
    rows = []
    for entry in entries:
        sub = subs.get(entry.submission_id)
        if sub is None:
            continue
        rows.append(
            {
                "System": sub.form["system"],
                "Submitter": sub.form["submitter"],
                "Origin": ORIGINS.get(sub.origin, sub.origin),
                "Type": system_type(sub),
                "Model": sub.form["model"],
                "Private accuracy": _pct(entry.value),
                "Files": entry.scored + entry.unscored,
                "Snapshot": taken[:10],
                "#": sub.id,
            }
        )
    if not rows:
        return pd.DataFrame(columns=list(OFFICIAL_COLUMNS))
    df = pd.DataFrame(rows)
    df["Rank"] = df["Private accuracy"].rank(method="min", ascending=False).astype(int)
    return df.sort_values(["Rank", "#"]).reset_index(drop=True)[list(OFFICIAL_COLUMNS)]


def official_caption(snapshot: Any, n_public: int, n_private: int, every_days: float) -> str:
    """What the two tables are and how the official one is made (Markdown)."""
    if not n_private:
        return (
            "**Live board** on all test items (this Space has no private part of the labels, so there is no "
            "separate official ranking)."
        )
    when = f"snapshot of {snapshot[0]} UTC" if snapshot else "no snapshot yet"
    margin = snapshot[2] if snapshot else None
    every = f"every {every_days:g} days" if every_days > 0 else "when the maintainers take one"
    ladder_text = f" with the Ladder's margin of {100 * margin:g} points" if margin else ""
    return (
        f"**Official ranking** ({when}; new snapshots {every}): accuracy on the **private part** of the test labels "
        f"({n_private} items), one row per account, released through the Ladder{ladder_text}: an account's value "
        "changes only when one of its files beats it by more than the margin, and is rounded to it. Nothing you "
        "see at submission time depends on the private part.\n\n"
        f"**Live board** below: every accepted file, scored at once on the **public part** ({n_public} items). "
        "A file can be tuned to the public part; the official ranking is the private one."
    )


def official_heading(snapshot: Any, n_public: int, n_private: int) -> str:
    """One line above the two tables (the long explanation, :func:`official_caption`, is folded)."""
    if not n_private:
        return f"**Live board**: every accepted file, scored on all {n_public} test items."
    when = f"snapshot of {snapshot[0]} UTC" if snapshot else "no snapshot yet"
    return (
        f"**Official ranking**: the private part ({n_private} items), {when}. **Live board** below: every "
        f"accepted file at once, on the public part ({n_public} items)."
    )
