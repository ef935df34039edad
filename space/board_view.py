"""The live board as a reader sees it: chosen columns, type/origin filters, headers with units and tooltips.

Pure functions over :func:`.leaderboard.board_frame` (the data layer, one row per stored submission): the view
renames and orders columns, keeps numbers as numbers (so that the table's own sorting stays numeric) and formats
them only for display (a pandas ``Styler``: one decimal, ``%`` where the value is a percentage, ``—`` where a value
is withheld or missing). The best value of each metric is highlighted among the shown rows that can have one: a
row that answers nothing right is never "best", and the Kuiper statistic of a run with accuracy 0 or 100 (a flat
curve, Kuiper 0) says nothing about calibration; a run whose steps do not vary has no Kuiper value at all
("n/a (fixed effort)"). The rank is the row's rank interval (:func:`.leaderboard.rank_columns`), ``≈`` when tied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from madqa.metric.kuiper import MIN_VARYING_ONE_IN, NOT_APPLICABLE

from .disclosure import BOARD_BUDGETS, MIN_GROUP
from .display import NONE, missing, number, percent, spread, usd
from .storage import ORIGINS
from .traces_link import traces_anchor

#: :func:`.leaderboard.board_frame`'s column saying a row's Kuiper value is n/a (fixed effort).
KUIPER_NA = "Kuiper n/a"
#: :func:`.leaderboard.board_frame`'s columns saying why a row has no cost, and the prices' date.
COST_NOTE, PRICES_AS_OF = "Cost note", "Prices as of"
#: The view's attribute holding each row's Rank sort key: the lower bound of its rank interval, a number, so that the
#: table sorts "10–12" after "2" (the cell shows the interval, :func:`styled_view`).
RANK_KEY = "Rank key"


@dataclass(frozen=True)
class ViewColumn:
    """One column of the shown board.

    Attributes:
        name: the header (and the column chooser's label).
        source: the :func:`.leaderboard.board_frame` column it shows (``""``: built by the view).
        kind: ``text``, ``int``, ``pct`` (a percentage, shown with ``%``), ``num`` (one decimal), ``pp``
            (percentage points, shown as ``±x.x``), ``usd`` (dollars, ``$0.0123``; a row without one shows why) or
            ``link`` (a traces URL, shown as an HTML link; nothing when
            there is none).
        help: the header's tooltip: what it is and which direction is better.
        better: ``"high"`` or ``"low"`` for a metric whose best value is highlighted, else ``""``.
    """

    name: str
    source: str
    kind: str
    help: str
    better: str = ""


BADGE = "Type"
ID = "#"
#: After a rank interval: the row is tied with at least one other (its tie group has other members).
TIED = "≈"
WITHHELD = NONE
#: Every column the board can show, in display order.
COLUMNS: tuple[ViewColumn, ...] = (
    ViewColumn(
        "Rank",
        "Rank interval",
        "text",
        "The ranks the row could hold on the live board given which accuracy differences are significant (a "
        "z-test of the shown accuracies and standard errors, unpaired, Holm-corrected at 5% across all pairs). "
        f"{TIED}: statistically tied with another row.",
    ),
    ViewColumn("System", "System", "text", "The system's name as submitted. Select a row for its details."),
    ViewColumn(
        BADGE,
        "",
        "text",
        "agent or human (a `madqa human` run), and where the row comes from: maintainer "
        "baseline, verified by the maintainers, or self-reported (effort figures as reported).",
    ),
    ViewColumn(
        "Accuracy",
        "Accuracy",
        "pct",
        "Share of test items answered correctly (ANLS* ≥ 0.5 per item in anls "
        "mode; judge accuracy in judge mode, bias-corrected for the paper's judge or a calibrated one). ↑ higher is "
        "better.",
        "high",
    ),
    ViewColumn("95% CI", "Accuracy CI", "text", "95% confidence interval of the accuracy, in %."),
    ViewColumn(
        "± SE", "Accuracy ±", "pp", "One standard error of the accuracy, in percentage points (the paper's ±)."
    ),
    ViewColumn(
        "X-Page",
        "X-Page",
        "pct",
        "Accuracy on cross-page questions (evidence on several pages of one "
        f"document). ↑ higher is better. {WITHHELD}: withheld, fewer than {MIN_GROUP} such items.",
        "high",
    ),
    ViewColumn(
        "X-Doc",
        "X-Doc",
        "pct",
        "Accuracy on cross-document questions (evidence in several documents). ↑ "
        f"higher is better. {WITHHELD}: withheld, fewer than {MIN_GROUP} such items.",
        "high",
    ),
    ViewColumn(
        "ANLS*",
        "ANLS*",
        "pct",
        "Mean ANLS* of the answers (best over the answer variants). ↑ higher is better.",
        "high",
    ),
    ViewColumn(
        "Page F1",
        "Page F1",
        "pct",
        "F1 of the cited pages against the gold evidence pages. ↑ higher is better.",
        "high",
    ),
    ViewColumn(
        "Doc F1",
        "Doc F1",
        "pct",
        "F1 of the cited documents against the gold evidence documents. ↑ higher is better.",
        "high",
    ),
    ViewColumn(
        "Kuiper ↓",
        "Kuiper",
        "num",
        "Effort calibration: the range of the cumulative differences between "
        "accuracy and effort (steps), paper scale. ↓ lower is better; not compared for runs with accuracy "
        f"0 or 100 (a flat curve). {NOT_APPLICABLE}: the run's steps do not vary (at least 1 item in "
        f"{MIN_VARYING_ONE_IN} off the most common step count is needed), so there is nothing to calibrate.",
        "low",
    ),
    ViewColumn("Kuiper CI", "Kuiper CI", "text", "95% bootstrap confidence interval of the Kuiper statistic."),
    ViewColumn(
        "Mean steps",
        "Mean steps",
        "num",
        "Mean steps (tool calls) per item, as reported in the file. Fewer steps for the same accuracy is cheaper.",
    ),
    ViewColumn(
        "Cost ($/q)",
        "USD per question",
        "usd",
        "Inference cost in US dollars per question: the token counts of every line of the file (its 'usage') "
        "priced by the model each line names, at the list prices of the shipped price table (their date is in "
        "the note under the table). From the file alone, as reported by the submitter. n/a (model not priced): "
        "a line's model is not in the table (never counted as free); n/a (no tokens): a line reports no token counts; "
        "n/a (human run): no model tokens. Less is cheaper.",
    ),
    *(
        ViewColumn(
            f"Acc@{budget}",
            f"Acc@{budget}",
            "pct",
            f"Accuracy within {budget} step{'s' if budget > 1 else ''}: the share of test items answered correctly "
            f"with at most {budget} step{'s' if budget > 1 else ''} (tool calls) as reported; unknown steps are "
            "never within a budget. One point of the paper's budget curve (raw correctness, also in judge mode). "
            "↑ higher is better.",
            "high",
        )
        for budget in BOARD_BUDGETS
    ),
    ViewColumn(
        "Coverage",
        "Coverage",
        "pct",
        "Share of the test items the file answers (missing items count as wrong). ↑ higher is better.",
    ),
    ViewColumn("Submitter", "Submitter", "text", "Who submitted it (the Hugging Face user on the hosted Space)."),
    ViewColumn("Agent", "Agent", "text", "The agent (framework, tools) as submitted."),
    ViewColumn("Model", "Model", "text", "The model as submitted."),
    ViewColumn("Origin", "Origin", "text", "maintainer baseline, verified, or self-reported."),
    ViewColumn("Date", "Date", "text", "When it was submitted (UTC)."),
    ViewColumn("Mode", "Mode", "text", "Scoring mode: anls (ANLS* ≥ 0.5) or judge (an LLM judge, bias-corrected)."),
    ViewColumn(
        "Traces",
        "Traces",
        "link",
        "The run's traces (one trajectory per question, in the Hub's trace viewer), where the submitter gave them: a "
        "Hub dataset or storage bucket, opened in a new tab. Not checked by the maintainers.",
    ),
    ViewColumn(ID, "#", "int", "The submission's number (its detail view and plots use it)."),
)
BY_NAME: dict[str, ViewColumn] = {c.name: c for c in COLUMNS}
#: Shown by default: the board fits a 1440-pixel screen without scrolling sideways.
DEFAULT_COLUMNS: tuple[str, ...] = (
    "Rank",
    "System",
    BADGE,
    "Accuracy",
    "95% CI",
    "Page F1",
    "Doc F1",
    "Kuiper ↓",
    "Mean steps",
    "Cost ($/q)",
)
#: Shown by default on a narrow (phone) screen.
COMPACT_COLUMNS: tuple[str, ...] = ("Rank", "System", "Accuracy")
#: Always shown, whatever is chosen: the row's identity (the detail view reads the submission number).
FIXED_COLUMNS: tuple[str, ...] = ("Rank", "System", ID)
#: Screens narrower than this (CSS pixels) get :data:`COMPACT_COLUMNS`.
COMPACT_BELOW_PX = 700
#: Column widths in pixels (the two pinned columns' widths are fixed: the CSS pins System at Rank's width), in the
#: board's proportional font: each row of the default columns on one or two lines at 1440 px (issue 44, item 5).
WIDTHS: dict[str, int] = {
    "Rank": 64,
    "System": 236,
    BADGE: 156,
    "95% CI": 124,
    "Kuiper ↓": 124,
    "Kuiper CI": 120,
    "Cost ($/q)": 96,
    "Submitter": 150,
    "Agent": 180,
    "Model": 180,
    "Origin": 150,
    "Date": 100,
    "Traces": 70,
    ID: 48,
}
DEFAULT_WIDTH = 92
#: On a phone (390 px: a 326-px table) the four compact columns fit whole, "#" included, and "Accuracy" on one line.
COMPACT_WIDTHS: dict[str, int] = {"Rank": 58, "System": 132, "Accuracy": 86, ID: 40}
#: The short origin on the type badge.
BADGE_ORIGIN = {"maintainer baseline": "baseline", "verified": "verified", "self-reported": "self-reported"}
BADGE_COLORS = {"baseline": "#eef0f3", "verified": "#dff3e4", "human": "#efe6fb"}
HIGHLIGHT = "font-weight: bold; background-color: #d9f2d9"
TYPES: tuple[str, ...] = ("agent", "human")
ORIGIN_CHOICES: tuple[str, ...] = tuple(ORIGINS.values())


def initial_columns(width: Any) -> list[str]:
    """The columns shown first for a screen ``width`` pixels wide (unknown width: the full default)."""
    try:
        narrow = 0 < float(width) < COMPACT_BELOW_PX
    except (TypeError, ValueError):
        narrow = False
    return list(COMPACT_COLUMNS if narrow else DEFAULT_COLUMNS)


def chosen_columns(chosen: Sequence[str] | None) -> list[str]:
    """The chosen column names in display order, with the fixed ones; unknown names are ignored."""
    wanted = set(chosen or DEFAULT_COLUMNS) | set(FIXED_COLUMNS)
    return [c.name for c in COLUMNS if c.name in wanted]


def system_label(sid: int, system: str) -> str:
    """A submission as named in the plot picker and the plots' legends: its system name, then its number."""
    return f"{system} (#{sid})"


def badge(kind: Any, origin: Any) -> str:
    """The type/origin badge of a row, e.g. ``agent · baseline``."""
    return f"{kind} · {BADGE_ORIGIN.get(str(origin), str(origin))}"


def view_frame(
    board: pd.DataFrame,
    chosen: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    origins: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The shown board: rows of the chosen types and origins (``None``: all), the chosen columns in order.

    The rank stays the one on the whole board. Numbers stay numbers (``NaN`` where withheld or missing).
    """
    rows = board
    if types is not None:
        rows = rows[rows["Type"].isin(list(types))]
    if origins is not None:
        rows = rows[rows["Origin"].isin(list(origins))]
    out = pd.DataFrame(index=rows.index)
    for name in chosen_columns(chosen):
        col = BY_NAME[name]
        if name == BADGE:
            out[name] = [badge(t, o) for t, o in zip(rows["Type"], rows["Origin"], strict=True)]
        elif name == "Rank":
            out[name] = [_rank_text(r, g) for r, g in zip(rows[col.source], rows["Tie group"], strict=True)]
        elif col.kind == "link":  # checked again when shown: a refused or missing URL is no link
            out[name] = [traces_anchor(url) for url in rows[col.source]]
        else:
            out[name] = rows[col.source]
    out = out.reset_index(drop=True)
    out.attrs[RANK_KEY] = [_rank_lower(r) for r in rows["Rank interval"]] if "Rank interval" in rows else []
    out.attrs[KUIPER_NA] = [bool(v) for v in rows.get(KUIPER_NA, pd.Series(False, index=rows.index))]
    out.attrs[COST_NOTE] = [str(v or "") for v in rows.get(COST_NOTE, pd.Series("", index=rows.index))]
    out.attrs[PRICES_AS_OF] = sorted({str(v) for v in rows.get(PRICES_AS_OF, pd.Series(dtype=str)) if v})
    return out


def _rank_text(interval: Any, group: Any) -> str | None:
    """``1–3 ≈`` (tied: it has a tie group, shared with another row of the whole board), ``2``, or ``None``."""
    if missing(interval):
        return None
    return str(interval) if missing(group) else f"{interval} {TIED}"


def _rank_lower(interval: Any) -> float:
    """The lower bound of a rank interval ``"3–7"`` (or of a single rank ``"2"``) as a number; NaN when missing."""
    if missing(interval):
        return float("nan")
    head = str(interval).split("–")[0].strip()
    return float(head) if head.isdigit() else float("nan")


def eligible(view: pd.DataFrame, name: str, accuracy: pd.Series | None = None) -> pd.Series:
    """Rows whose value of column ``name`` may be highlighted as best (see the module docstring)."""
    acc = accuracy if accuracy is not None else pd.Series(float("nan"), index=view.index)
    ok = ~(acc <= 0)  # nothing right: no value of the row is "best" (a missing accuracy does not exclude)
    if BY_NAME[name].source == "Kuiper":
        ok &= (acc > 0) & (acc < 100)
        # exactly 0 is a flat curve: a fixed-effort row stored before Kuiper became n/a there, never "best"
        ok &= pd.to_numeric(view[name], errors="coerce") != 0
    return ok


def best_mask(view: pd.DataFrame, accuracy: pd.Series | None = None) -> pd.DataFrame:
    """``True`` where a cell holds its column's best value among the eligible shown rows."""
    mask = pd.DataFrame(False, index=view.index, columns=view.columns)
    for name in view.columns:
        better = BY_NAME[name].better if name in BY_NAME else ""
        if not better:
            continue
        values = pd.to_numeric(view[name], errors="coerce")
        ok = eligible(view, name, accuracy) & values.notna()
        if not ok.any():
            continue
        best = values[ok].max() if better == "high" else values[ok].min()
        mask[name] = ok & (values == best)
    return mask


def unmarked_ties(view: pd.DataFrame, accuracy: pd.Series | None = None) -> list[str]:
    """The columns where a row holds the highlighted best value without being highlighted (it is not eligible,
    :func:`eligible`): the note under the table says why (issue 44, item 11)."""
    if accuracy is None and "Accuracy" in view:
        accuracy = pd.to_numeric(view["Accuracy"], errors="coerce")
    mask = best_mask(view, accuracy)
    out = []
    for name in view.columns:
        if not mask[name].any():
            continue
        values = pd.to_numeric(view[name], errors="coerce")
        best = values[mask[name]].iloc[0]
        if ((values == best) & ~mask[name]).any():
            out.append(name)
    return out


def _formatter(kind: str) -> Any:
    def fmt(value: Any) -> str:
        if kind == "link":
            return "" if missing(value) else str(value)
        if missing(value):
            return WITHHELD
        if kind == "int":
            return f"{int(value)}"
        if kind == "pct":
            return percent(value)
        if kind == "pp":
            return spread(value)
        if kind == "num":
            return number(value)
        if kind == "usd":
            return usd(value)
        return str(value)

    return fmt


def styled_view(view: pd.DataFrame, accuracy: pd.Series | None = None) -> Any:
    """The shown board as a ``Styler``: values formatted for display, best values and badges coloured.

    ``accuracy`` (the rows' accuracy, aligned with ``view``) decides which rows can be best; by default the view's
    own Accuracy column.
    """
    if accuracy is None and "Accuracy" in view:
        accuracy = pd.to_numeric(view["Accuracy"], errors="coerce")
    mask = best_mask(view, accuracy)
    styles = pd.DataFrame("", index=view.index, columns=view.columns)
    styles = styles.mask(mask, HIGHLIGHT)
    if BADGE in view:
        styles[BADGE] = [_badge_style(str(v)) for v in view[BADGE]]
    fmt = {name: _formatter(BY_NAME[name].kind if name in BY_NAME else "text") for name in view.columns}
    keys = view.attrs.get(RANK_KEY, [])
    data = view
    if "Rank" in view and len(keys) == len(view):
        # the cell's value is the number the table sorts by, its display the interval text
        data = view.assign(Rank=keys)
        fmt.pop("Rank")
    styler = data.style.apply(lambda _: styles, axis=None).format(fmt)
    if data is not view:
        for text, rows in view.groupby(view["Rank"].fillna(WITHHELD), sort=False).groups.items():
            styler = styler.format(lambda _, shown=text: shown, subset=pd.IndexSlice[list(rows), ["Rank"]])
    kuiper = [c.name for c in COLUMNS if c.source == "Kuiper" and c.name in view]
    na_rows = [i for i, na in zip(view.index, view.attrs.get(KUIPER_NA, []), strict=False) if na]
    if kuiper and na_rows:
        styler = styler.format(lambda _: NOT_APPLICABLE, subset=pd.IndexSlice[na_rows, kuiper])
    cost = [c.name for c in COLUMNS if c.kind == "usd" and c.name in view]
    for note, rows in _by_note(view).items():  # a row without a cost says why (never a 0, never a bare dash)
        styler = styler.format(lambda _, shown=note: shown, subset=pd.IndexSlice[rows, cost]) if cost else styler
    return styler


def _by_note(view: pd.DataFrame) -> dict[str, list[Any]]:
    """The rows of each cost note (``n/a (…)``): rows without a cost number, by the reason shown instead."""
    out: dict[str, list[Any]] = {}
    for i, note in zip(view.index, view.attrs.get(COST_NOTE, []), strict=False):
        if note:
            out.setdefault(note, []).append(i)
    return out


def _badge_style(text: str) -> str:
    kind, _, origin = text.partition(" · ")
    color = BADGE_COLORS.get("human" if kind == "human" else origin)
    return f"background-color: {color}" if color else ""


def column_datatypes(columns: Sequence[str]) -> list[str]:
    """The table's datatype of each shown column: ``html`` for a link column (:func:`.traces_link.traces_anchor`
    writes it escaped), ``str`` otherwise (gradio's default)."""
    return ["html" if name in BY_NAME and BY_NAME[name].kind == "link" else "str" for name in columns]


def column_widths(columns: Sequence[str], compact: bool = False) -> list[str]:
    """Pixel widths of the shown columns (the pinned Rank and System have fixed ones)."""
    widths = {**WIDTHS, **(COMPACT_WIDTHS if compact else {})}
    return [f"{widths.get(name, DEFAULT_WIDTH)}px" for name in columns]


def header_help(columns: Sequence[str] | None = None) -> dict[str, str]:
    """Header name → tooltip, for the shown columns (all by default)."""
    names = columns if columns is not None else [c.name for c in COLUMNS]
    return {name: BY_NAME[name].help for name in names if name in BY_NAME}


def footnote(view: pd.DataFrame) -> str:
    """The note under the table: what ``—`` means in the shown columns, and where the definitions are."""
    notes = []
    hops = [name for name in ("X-Page", "X-Doc") if name in view]
    if hops:
        notes.append(
            f"{WITHHELD} in {'/'.join(hops)}: withheld, a group under {MIN_GROUP} test items in the part "
            "shown (its accuracy would tell which items are right)"
        )
    costs = [c for c in view.columns if c in BY_NAME and BY_NAME[c].kind == "usd"]  # n/a rows say why themselves
    if any(view[c].isna().any() for c in view.columns if c not in hops and c not in costs):
        notes.append(f"{WITHHELD} elsewhere: not reported by that submission")
    unmarked = unmarked_ties(view)
    if unmarked:
        notes.append(
            f"a value equal to the highlighted best but not highlighted ({', '.join(unmarked)}): its row answers "
            "nothing right, so none of its values is compared (nor a Kuiper value of a run at 0% or 100%)"
        )
    if any(BY_NAME[c].kind == "usd" for c in view.columns if c in BY_NAME):
        dates = view.attrs.get(PRICES_AS_OF) or []
        notes.append(
            f"Cost: list prices as of {' / '.join(dates)} (agents/harness/prices.yaml)"
            if dates
            else "Cost: no row is priced"
        )
    notes.append("hover a header for its definition; select a row for its details; ↑/↓: higher/lower is better")
    return "<small>" + " · ".join(notes) + ".</small>"


def legend() -> str:
    """Every column's definition as a Markdown list (for screens without hover)."""
    return "\n".join(f"- **{c.name}**: {c.help}" for c in COLUMNS if c.name != ID)


def first_sort_directions() -> dict[str, str]:
    """Header name → the direction of a first click on it: best first for a metric (``desc`` when higher is
    better), ascending otherwise (Rank 1 first, names A to Z)."""
    return {c.name: "desc" if c.better == "high" else "asc" for c in COLUMNS}
