"""The Leaderboard tab's live board in Gradio: filters, column chooser, the table, its notes and the row detail.

Thin glue over :mod:`.board_view` (what is shown) and :mod:`.board_detail` (one row in full). The table is a
``gr.Dataframe`` re-rendered on every change (the Hugging Face ``gradio_leaderboard`` component does not run on
gradio 6). Gradio's ``pinned_columns`` does not pin in 6.31 (the prop reaches the table's state, no cell is made
sticky), so :data:`CSS` pins Rank and System with ``position: sticky``; the tooltips come from :func:`.board_view.
help_map_js`. The screen width is read once on page load: a phone gets the compact columns.

The API keeps ``/refresh`` and ``/search`` (a query in, the whole board's data out: every column under its data
name, as :func:`.leaderboard.board_frame` makes it); the UI's own events are not API endpoints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from .board_detail import EMPTY, detail_markdown, submission_of
from .board_js import help_map_js, sort_on_click_js
from .board_view import (
    COLUMNS,
    COMPACT_BELOW_PX,
    COMPACT_WIDTHS,
    DEFAULT_COLUMNS,
    FIXED_COLUMNS,
    ORIGIN_CHOICES,
    TYPES,
    WIDTHS,
    chosen_columns,
    column_datatypes,
    column_widths,
    first_sort_directions,
    footnote,
    header_help,
    initial_columns,
    legend,
    styled_view,
    view_frame,
)
from .leaderboard import board_frame, filter_board
from .storage import SubmissionStore

#: Rank and System stay in view when the table scrolls sideways (System starts at Rank's fixed width). On a phone,
#: the table comes first in the tab and the filters, definitions and plots after it.
CSS = f"""
#leaderboard th:nth-child(1), #leaderboard .virtual-row > .body-cell:nth-child(1),
#leaderboard th:nth-child(2), #leaderboard .virtual-row > .body-cell:nth-child(2) {{
  position: sticky; z-index: 3; background: var(--table-even-background-fill, var(--background-fill-primary));
}}
#leaderboard .virtual-row.row-odd > .body-cell:nth-child(-n+2) {{ background: var(--table-odd-background-fill); }}
#leaderboard th:nth-child(1), #leaderboard .virtual-row > .body-cell:nth-child(1) {{ left: 0; }}
#leaderboard th:nth-child(2), #leaderboard .virtual-row > .body-cell:nth-child(2) {{
  left: {WIDTHS["Rank"]}px; box-shadow: 2px 0 0 var(--border-color-primary);
}}
#leaderboard th:nth-child(-n+2) {{ z-index: 5; }}
#leaderboard th .header {{ white-space: normal; word-break: normal; overflow-wrap: normal; }}
#leaderboard th, #leaderboard th .header, #leaderboard .virtual-row, #leaderboard .virtual-row span {{
  font-family: var(--font); font-variant-numeric: tabular-nums;
}}
@media (max-width: {COMPACT_BELOW_PX}px) {{
  #leaderboard th:nth-child(2), #leaderboard .virtual-row > .body-cell:nth-child(2) {{
    left: {COMPACT_WIDTHS["Rank"]}px;
  }}
  #board-controls, #board-columns-box {{ order: 1; }}
  #official-more-box, #board-legend-box, #board-plots, #board-frontier {{ order: 2; }}
}}
"""


#: After a row is selected: its detail (under the table) is scrolled into view (issue 44, item 7).
SHOW_DETAIL_JS = (
    "() => { const detail = document.querySelector('#board-detail');"
    " if (detail) { detail.scrollIntoView({behavior: 'instant', block: 'nearest'}); } }"
)


@dataclass
class BoardParts:
    """The components other tabs update (the submit tab re-renders the table after an accepted file)."""

    table: gr.Dataframe
    note: gr.Markdown
    #: The inputs of :func:`render`, in order: query, columns, types, origins, screen width.
    inputs: list[Any]
    #: The Refresh button's event (the app chains the plot picker and the official table to it).
    refreshed: Any
    #: The handler re-rendering ``table`` and ``note`` from ``inputs`` (chained after an accepted submission).
    render: Any


def _narrow(width: Any) -> bool:
    try:
        return 0 < float(width) < COMPACT_BELOW_PX
    except (TypeError, ValueError):
        return False


def render(
    store: SubmissionStore,
    query: str | None,
    chosen: Sequence[str] | None,
    types: Sequence[str] | None,
    origins: Sequence[str] | None,
    width: Any = None,
) -> tuple[Any, str]:
    """The table update and the note under it, for the current filters and columns."""
    board = filter_board(board_frame(store.submissions()), query or "")
    view = view_frame(board, chosen, types, origins)
    widths = column_widths(list(view.columns), compact=_narrow(width))
    shown = gr.update(value=styled_view(view), column_widths=widths, datatype=column_datatypes(list(view.columns)))
    return shown, footnote(view)


def board_data(store: SubmissionStore, query: str = "") -> dict[str, Any]:
    """The whole board's data for API clients: ``{"headers": [...], "data": [[...], ...]}`` (missing: ``None``)."""
    df = filter_board(board_frame(store.submissions()), query or "")

    def clean(value: Any) -> Any:
        return None if isinstance(value, float) and math.isnan(value) else value

    data = [[clean(v) for v in row] for row in df.astype(object).itertuples(index=False, name=None)]
    return {"headers": list(df.columns), "data": data}


def build_board(demo: gr.Blocks, store: SubmissionStore) -> BoardParts:
    """The live board's components and events, inside the current Blocks context."""
    # one row of filters, each choice group on one line at 1440 px (the rows of the table are on the first screen)
    with gr.Row(equal_height=True, elem_id="board-controls"):
        query = gr.Textbox(
            label="Search systems",
            placeholder="system, submitter, agent or model",
            scale=2,
            min_width=220,
            elem_id="board-query",
        )
        types = gr.CheckboxGroup(
            list(TYPES), value=list(TYPES), label="Type", scale=1, min_width=230, elem_id="board-types"
        )
        origins = gr.CheckboxGroup(
            list(ORIGIN_CHOICES),
            value=list(ORIGIN_CHOICES),
            label="Origin",
            scale=2,
            min_width=470,
            elem_id="board-origins",
        )
        refresh = gr.Button("Refresh", scale=0, min_width=90, elem_id="refresh")
    with gr.Accordion("Columns", open=False, elem_id="board-columns-box"):
        choosable = [c.name for c in COLUMNS if c.name not in FIXED_COLUMNS]
        shown = [c for c in DEFAULT_COLUMNS if c not in FIXED_COLUMNS]
        columns = gr.CheckboxGroup(
            choosable, value=shown, label="Shown columns (Rank, System and # always)", elem_id="board-columns"
        )
    width = gr.Number(value=0, visible=False, elem_id="board-width")
    table = gr.Dataframe(
        interactive=False,
        show_search="none",  # one search box: the "Search systems" above, which also reads hidden columns
        wrap=True,
        buttons=["copy", "fullscreen"],
        elem_id="leaderboard",
        max_height=560,
        column_widths=column_widths(chosen_columns(DEFAULT_COLUMNS)),
    )
    note = gr.Markdown(elem_id="board-note")
    detail = gr.Markdown(EMPTY, elem_id="board-detail")
    with gr.Accordion("Column definitions", open=False, elem_id="board-legend-box"):
        gr.Markdown(legend(), elem_id="board-legend")
    inputs = [query, columns, types, origins, width]

    def show(
        q: str | None, chosen: Sequence[str] | None, kinds: Sequence[str] | None, where: Sequence[str] | None, w: Any
    ) -> tuple[Any, str]:
        return render(store, q, chosen, kinds, where, w)

    def first(w: Any) -> tuple[Any, Any, Any, str]:
        chosen = [c for c in initial_columns(w) if c not in FIXED_COLUMNS]
        shown, text = render(store, "", chosen, None, None, w)
        return w, gr.update(value=chosen), shown, text

    def select(evt: gr.SelectData) -> str:
        # "#" is the last shown column whatever is chosen (``FIXED_COLUMNS``, last in ``COLUMNS``)
        row = getattr(evt, "row_value", None) if evt is not None else None
        subs = store.submissions()
        sub = submission_of(subs, list(row)[-1:], ["#"]) if row else None
        board = board_frame(subs)
        ranks = dict(zip(board["#"], board["Rank"], strict=True))
        return detail_markdown(sub, int(ranks[sub.id]) if sub is not None and sub.id in ranks else None)

    demo.load(first, width, [width, columns, table, note], js="() => [window.innerWidth]", api_name=False)
    demo.load(None, None, None, js=help_map_js(header_help()), api_name=False)
    demo.load(None, None, None, js=sort_on_click_js(first_sort_directions()), api_name=False)
    for event in (query.change, columns.change, types.change, origins.change):  # the search box filters as one types
        event(show, inputs, [table, note], api_name=False)
    refreshed = refresh.click(show, inputs, [table, note], api_name=False)
    # the detail is under the table, below the fold at 1440×900 once the board is long: brought into view
    table.select(select, None, detail, api_name=False).then(None, None, None, js=SHOW_DETAIL_JS, api_name=False)

    def api_board(query: str = "") -> dict[str, Any]:
        """The whole board's data (every column under its data name), rows matching ``query``."""
        return board_data(store, query)

    gr.api(api_board, api_name="refresh")
    gr.api(api_board, api_name="search")
    return BoardParts(table, note, inputs, refreshed, show)
