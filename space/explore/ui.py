"""The explorer's Gradio components, shared by ``madqa view`` (:func:`build_view_app`) and the Space's tab.

The workspace lives on the server in a :class:`Registry`; a session holds only its key (a ``gr.State``), so a
large run is never copied per session. Handlers:

* ``explore_filter``: filters (live, as they change) → count line, question table, question picker;
* the Compare tab's own pickers of runs A and B → the comparison panel, live (unnamed handler);
* ``explore_question``: a question id and the runs to show → the trajectories side by side;
* a table row click picks that question (unnamed handler);
* on load, ``?q=ID&runs=a,b`` in the page address picks that question and those runs (a deep link), and the
  "Link to this view" box always holds the address of the current selection (also put in the address bar);
* a click on a page thumbnail opens the page large (rendered on demand through the detail's server function).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode

import gradio as gr
import pandas as pd

from .html import compare_html, question_html, summary_html
from .runs import Workspace
from .scripts import LINK_JS, ZOOM_JS
from .table import Filters, column_widths, facets, filter_ids, question_choices, table_rows
from .thumbs import Thumbnails

ANY = "(any)"
#: The count line (where the table will be) before a run is loaded: the Space's tab, before an upload.
NO_RUN = "Upload a results file above and press **Explore** to see its questions here."
#: Runs shown side by side by default.
DEFAULT_SHOWN = 2


class Registry:
    """Workspaces by key, the most recent ``limit`` kept (a Space visitor's upload is dropped when others come)."""

    def __init__(self, limit: int = 8) -> None:
        self.limit = limit
        self._items: OrderedDict[str, Workspace] = OrderedDict()
        self._summaries: dict[str, str] = {}
        self._lock = threading.Lock()

    def put(self, ws: Workspace, key: str | None = None) -> str:
        """Store ``ws`` and return its key."""
        key = key or uuid.uuid4().hex
        with self._lock:
            self._items[key] = ws
            self._items.move_to_end(key)
            while len(self._items) > self.limit:
                old, _ = self._items.popitem(last=False)
                self._summaries.pop(old, None)
        return key

    def get(self, key: Any) -> Workspace | None:
        """The workspace of ``key`` (``None`` for an unknown or missing key)."""
        with self._lock:
            return self._items.get(key) if isinstance(key, str) else None

    def summary(self, key: Any) -> str:
        """The summary HTML of a workspace (drawn once, then cached)."""
        ws = self.get(key)
        if ws is None:
            return "<div id='explore-summary'><p>No run loaded.</p></div>"
        if key not in self._summaries:
            self._summaries[key] = summary_html(ws)
        return self._summaries[key]


def _opt(value: Any) -> str:
    return "" if value in (None, ANY) else str(value)


def _num(value: Any) -> float | None:
    try:
        return None if value in (None, "") else float(value)
    except (TypeError, ValueError):
        return None


def filters_of(
    run: Any,
    other: Any,
    outcome: Any,
    hop: Any,
    domain: Any,
    category: Any,
    error: Any,
    agree: Any,
    min_steps: Any,
    max_steps: Any,
    text: Any,
) -> Filters:
    """:class:`Filters` from the widgets' values (``(any)``, blanks and ``None`` mean any)."""
    return Filters(
        run=_opt(run) or None,
        other=_opt(other) or None,
        outcome=_opt(outcome),
        hop=_opt(hop),
        domain=_opt(domain),
        category=_opt(category),
        error=_opt(error),
        agreement=_opt(agree),
        min_steps=_num(min_steps),
        max_steps=_num(max_steps),
        text=str(text or "")[:200],
    )


def filtered(ws: Workspace | None, filters: Filters) -> tuple[str, Any, list[tuple[str, str]]]:
    """Count line, table and picker choices for ``filters``."""
    if ws is None:
        return "No run loaded.", pd.DataFrame(), []
    ids = filter_ids(ws, filters)
    headers, rows = table_rows(ws, ids)
    count = f"**{len(ids)}** of {len(ws.references)} questions"
    return count, pd.DataFrame(rows, columns=headers), question_choices(ws, ids)


def table_widths(ws: Workspace, frame: Any) -> list[str]:
    """The question table's column widths for all of ``ws``'s questions (``frame``: the unfiltered table)."""
    return column_widths(list(frame.columns), frame.values.tolist(), runs=len(ws.runs))


def compare_for(ws: Workspace | None, a: Any, b: Any) -> str:
    """The comparison panel of runs ``a`` and ``b`` (names that are not runs here fall back to the first two)."""
    if ws is None:
        return compare_html_empty()
    known = [str(n) if n in ws.names else None for n in (a, b)]
    if known[0] is not None and known[0] == known[1]:  # said, not silently replaced by another run
        return f"<div id='explore-compare'><p>A and B are both {escape(known[0])}: pick two different runs.</p></div>"
    return compare_html(ws, *known)


#: The question list's height (px): with the filters above it, the list fills a 1440×900 screen beside the detail.
TABLE_HEIGHT = 560


def compare_html_empty() -> str:
    """The comparison panel before a run is loaded."""
    return "<div id='explore-compare'><p>No run loaded.</p></div>"


def _choices(values: list[str]) -> list[str]:
    return [ANY, *values]


def deep_link(qid: Any, runs: Sequence[Any] | None) -> str:
    """The query string that selects ``qid`` and ``runs`` on load.

    >>> deep_link("q0001", ["agent-a", "agent b"])
    '?q=q0001&runs=agent-a,agent+b'
    """
    params = {"q": str(qid)} if qid else {}
    if runs:
        params["runs"] = ",".join(str(r) for r in runs)
    return "?" + urlencode(params, safe=",") if params else ""


def from_query(ws: Workspace, params: Mapping[str, Any]) -> tuple[str | None, list[str] | None, list[str]]:
    """The question and runs a deep link asks for, and a note per part that names nothing here (ignored)."""
    notes = []
    qid = str(params.get("q") or "").strip() or None
    if qid is not None and qid not in ws.refs:
        notes.append(f"the link's question {qid!r} is not in this split")
        qid = None
    runs = None
    if params.get("runs"):
        asked = [r.strip() for r in str(params["runs"]).split(",") if r.strip()]
        runs = [r for r in asked if r in ws.names] or None
        unknown = [r for r in asked if r not in ws.names]
        if unknown:
            notes.append(f"no run named {', '.join(unknown)} (runs: {', '.join(ws.names)})")
    return qid, runs, notes


class ExplorerUI:
    """The components of one explorer, created in the current Blocks context (see :meth:`build`)."""

    def __init__(self, registry: Registry, thumbs: Thumbnails | None, key: gr.State) -> None:
        self.registry, self.thumbs, self.key = registry, thumbs, key

    def build(self, ws: Workspace | None = None) -> None:
        """Create the components; ``ws`` gives the initial values (``None``: empty until a run is loaded)."""
        f = (
            facets(ws)
            if ws is not None
            else {k: [] for k in ("outcome", "hop", "domain", "category", "error", "agreement")}
        )
        names = ws.names if ws is not None else []
        with gr.Tab("Questions", elem_id="explore-tab-questions"):
            with gr.Row():
                # custom values allowed: handlers validate names and ids themselves (API callers send anything)
                self.run_a = gr.Dropdown(
                    names,
                    value=names[0] if names else None,
                    label="Run A (filtered)",
                    allow_custom_value=True,
                    elem_id="explore-run-a",
                )
                self.run_b = gr.Dropdown(
                    names,
                    value=names[1] if len(names) > 1 else None,
                    label="Run B",
                    allow_custom_value=True,
                    elem_id="explore-run-b",
                )
                self.outcome = gr.Dropdown(
                    _choices(f["outcome"]), value=ANY, label="Outcome (A)", elem_id="explore-outcome"
                )
                self.error = gr.Dropdown(
                    _choices(f["error"]), value=ANY, label="Error class (A)", elem_id="explore-error"
                )
                self.agree = gr.Dropdown(
                    _choices(f["agreement"]), value=ANY, label="Agreement A/B", elem_id="explore-agree"
                )
            with gr.Row():
                self.hop = gr.Dropdown(_choices(f["hop"]), value=ANY, label="Hop type", elem_id="explore-hop")
                self.domain = gr.Dropdown(_choices(f["domain"]), value=ANY, label="Domain", elem_id="explore-domain")
                self.category = gr.Dropdown(
                    _choices(f["category"]), value=ANY, label="Category", elem_id="explore-category"
                )
                # Textboxes, not gr.Number: an empty Number reaches the handler as 0, which would filter
                self.min_steps = gr.Textbox(label="Min steps (A)", placeholder="any", elem_id="explore-min")
                self.max_steps = gr.Textbox(label="Max steps (A)", placeholder="any", elem_id="explore-max")
                self.text = gr.Textbox(label="Search question text or id", elem_id="explore-text")
            start = filtered(ws, Filters()) if ws is not None else None
            first = start[2][0][1] if start and start[2] else None
            # As `inspect view` does: the list on the left, the transcript on the right, both on one screen at
            # desktop widths; on a phone (under the columns' min width) they stack, the list first.
            with gr.Row(equal_height=False, elem_id="explore-split"):
                with gr.Column(scale=2, min_width=360, elem_id="explore-list-col"):
                    self.count = gr.Markdown(start[0] if start else NO_RUN, elem_id="explore-count")
                    # the id and the first runs' outcome cells get fixed narrow widths, so two runs' ✓/✗ fit a phone
                    # hidden until a run is loaded: an empty Dataframe shows a placeholder "1 2 3" header row
                    self.table = gr.Dataframe(
                        value=start[1] if start else None,
                        visible=start is not None,
                        interactive=False,
                        wrap=True,
                        max_height=TABLE_HEIGHT,
                        elem_id="explore-table",
                        column_widths=table_widths(ws, start[1]) if ws is not None else None,
                    )
                with gr.Column(scale=3, min_width=360, elem_id="explore-detail-col"):
                    with gr.Row():
                        self.pick = gr.Dropdown(
                            start[2] if start else [],
                            value=first,
                            label="Question",
                            allow_custom_value=True,
                            elem_id="explore-pick",
                            scale=3,
                        )
                        self.shown = gr.CheckboxGroup(
                            names,
                            value=names[:DEFAULT_SHOWN],
                            label="Runs side by side",
                            elem_id="explore-shown",
                            scale=2,
                        )
                    self.detail = gr.HTML(
                        question_html(ws, first, names[:DEFAULT_SHOWN], self.thumbs) if ws else "",
                        js_on_load=ZOOM_JS,
                        server_functions=[self._server_page_image()],
                        elem_id="explore-detail",
                    )
                    self.link = gr.Textbox(
                        deep_link(first, names[:DEFAULT_SHOWN]),
                        label="Link to this view",
                        interactive=False,
                        buttons=["copy"],
                        elem_id="explore-link",
                    )
        # The summary's figures take about half a second per run: drawn when the tab is first opened (then cached),
        # so they do not delay the first page.
        with gr.Tab("Summary", elem_id="explore-tab-summary") as summary_tab:
            self.summary = gr.HTML(
                "<div id='explore-summary-wait'><p>Drawing the summary…</p></div>", elem_id="explore-summary-panel"
            )
        with gr.Tab("Compare runs", elem_id="explore-tab-compare"):
            with gr.Row():
                self.compare_a = gr.Dropdown(
                    names, value=names[0] if names else None, label="Run A", elem_id="explore-compare-a"
                )
                self.compare_b = gr.Dropdown(
                    names, value=names[1] if len(names) > 1 else None, label="Run B", elem_id="explore-compare-b"
                )
            self.compare = gr.HTML(
                compare_for(ws, names[0], names[1]) if len(names) > 1 else compare_for(ws, None, None),
                elem_id="explore-compare-panel",
            )
        inputs = [
            self.run_a,
            self.run_b,
            self.outcome,
            self.hop,
            self.domain,
            self.category,
            self.error,
            self.agree,
            self.min_steps,
            self.max_steps,
            self.text,
            self.key,
        ]
        outputs = [self.count, self.table, self.pick]
        # Live: every change filters at once (no Apply button); typing sends only its last state (always_last).
        events = [
            self.text.change,
            self.min_steps.change,
            self.max_steps.change,
            self.run_a.input,
            self.run_b.input,
            self.outcome.input,
            self.error.input,
            self.agree.input,
            self.hop.input,
            self.domain.input,
            self.category.input,
        ]
        gr.on(events, self.on_filter, inputs, outputs, api_name="explore_filter", trigger_mode="always_last")
        self.pick.change(self.on_question, [self.pick, self.shown, self.key], self.detail, api_name="explore_question")
        self.shown.change(self.on_question, [self.pick, self.shown, self.key], self.detail, api_name=False)
        self.table.select(self.on_select, [self.key], self.pick, api_name=False)
        for event in (self.pick.change, self.shown.change):
            event(deep_link, [self.pick, self.shown], self.link, api_name=False).then(
                None, [self.link], [self.link], js=LINK_JS, api_name=False
            )
        gr.on(None, self.on_load, None, [self.pick, self.shown, self.link], api_name=False).then(
            None, [self.link], [self.link], js=LINK_JS, api_name=False
        )
        summary_tab.select(self.registry.summary, [self.key], self.summary, api_name=False)
        # The comparison follows its own pickers, live (the Questions tab's Run A/B filter the list instead).
        gr.on(
            [self.compare_a.input, self.compare_b.input],
            self.on_compare,
            [self.compare_a, self.compare_b, self.key],
            self.compare,
            api_name=False,
        )

    def on_compare(self, a: Any, b: Any, key: Any) -> str:
        """The comparison panel of the Compare tab's runs A and B."""
        return compare_for(self.registry.get(key), a, b)

    def on_filter(self, *values: Any) -> tuple[Any, ...]:
        """``explore_filter``: apply the filters of the widgets."""
        *widgets, key = values
        ws = self.registry.get(key)
        count, frame, choices = filtered(ws, filters_of(*widgets))
        value = choices[0][1] if choices else None
        return count, frame, gr.update(choices=choices, value=value)

    def on_question(self, qid: Any, shown: Any, key: Any) -> str:
        """``explore_question``: the trajectories of ``qid`` in the shown runs."""
        ws = self.registry.get(key)
        if ws is None:
            return "<div id='explore-question'><p>No run loaded.</p></div>"
        names = [str(n) for n in shown or []] or ws.names[:1]
        return question_html(ws, str(qid) if qid else None, names, self.thumbs)

    def page_image(self, *data: Any) -> str | None:
        """The detail's server function: ``(document, page)`` → the page large as a ``data:`` URI, or ``None``."""
        args = data[0] if len(data) == 1 and isinstance(data[0], (list, tuple)) else data
        if self.thumbs is None or len(args) != 2:
            return None
        return self.thumbs.large_uri(str(args[0])[:500], args[1])

    def _server_page_image(self) -> Any:
        # gr.HTML marks a server function with an attribute, which a bound method cannot take; its name is the one
        # ZOOM_JS calls.
        def page_image(data: Any) -> str | None:
            return self.page_image(data)

        return page_image

    def on_load(self, request: gr.Request) -> tuple[Any, Any, Any]:
        """A deep link (``?q=ID&runs=a,b``): pick that question and show those runs (see :func:`from_query`); the
        link box gets the address of what is shown (the Space's tab has no run at load: nothing changes)."""
        ws = self.registry.get(self.key.value)
        if ws is None:
            return gr.update(), gr.update(), gr.update()
        qid, runs, notes = from_query(ws, dict(getattr(request, "query_params", None) or {}))
        for note in notes:
            gr.Warning(f"Link ignored in part: {note}")
        # what the page shows when the link does not say: build()'s first question and runs
        shown_q = qid or (ws.references[0].id if ws.references else None)
        link = deep_link(shown_q, runs or ws.names[:DEFAULT_SHOWN])
        return (gr.update(value=qid) if qid else gr.update()), (gr.update(value=runs) if runs else gr.update()), link

    def on_select(self, key: Any, evt: gr.SelectData) -> Any:
        """A click on a table row picks its question (the row's first cell is the id)."""
        ws = self.registry.get(key)
        row = getattr(evt, "row_value", None) or []
        qid = str(row[0]) if row else None
        return gr.update(value=qid) if ws is not None and qid in ws.refs else gr.update()

    def updates_for(self, key: Any) -> list[Any]:
        """Updates of every component after a workspace was loaded under ``key`` (the Space's upload)."""
        ws = self.registry.get(key)
        if ws is None:
            return [gr.update()] * len(self.refresh_outputs())
        f, names = facets(ws), ws.names
        count, frame, choices = filtered(ws, Filters())
        first = choices[0][1] if choices else None
        second = names[1] if len(names) > 1 else None
        return [
            gr.update(choices=names, value=names[0]),
            gr.update(choices=names, value=names[1] if len(names) > 1 else None),
            gr.update(choices=_choices(f["outcome"]), value=ANY),
            gr.update(choices=_choices(f["error"]), value=ANY),
            gr.update(choices=_choices(f["agreement"]), value=ANY),
            gr.update(choices=_choices(f["hop"]), value=ANY),
            gr.update(choices=_choices(f["domain"]), value=ANY),
            gr.update(choices=_choices(f["category"]), value=ANY),
            count,
            gr.update(value=frame, column_widths=table_widths(ws, frame)),
            gr.update(choices=choices, value=first),
            gr.update(choices=names, value=names[:DEFAULT_SHOWN]),
            question_html(ws, first, names[:DEFAULT_SHOWN], self.thumbs),
            self.registry.summary(key),
            gr.update(choices=names, value=names[0]),
            gr.update(choices=names, value=second),
            compare_for(ws, names[0], second),
        ]

    def refresh_outputs(self) -> list[Any]:
        """The components :meth:`updates_for` updates, in its order."""
        return [
            self.run_a,
            self.run_b,
            self.outcome,
            self.error,
            self.agree,
            self.hop,
            self.domain,
            self.category,
            self.count,
            self.table,
            self.pick,
            self.shown,
            self.detail,
            self.summary,
            self.compare_a,
            self.compare_b,
            self.compare,
        ]


def build_view_app(ws: Workspace, thumbs: Thumbnails | None = None, *, title: str = "MADQA run explorer") -> gr.Blocks:
    """The app of ``madqa view``: one workspace, known at start."""
    registry = Registry(limit=1)
    key = registry.put(ws, "local")
    runs = ", ".join(f"**{r.name}**" for r in ws.runs)
    with gr.Blocks(title=title) as demo:
        gr.Markdown(
            f"# {title}\n{runs} on the **{ws.split}** split ({len(ws.references)} questions). Filter the "
            "questions, pick one to see each run's steps, pages (gold evidence framed green) and answer."
        )
        state = gr.State(key)
        ExplorerUI(registry, thumbs, state).build(ws)
    return demo
