"""The explorer's Gradio components, shared by ``madqa view`` (:func:`build_view_app`) and the Space's tab.

The workspace lives on the server in a :class:`Registry`; a session holds only its key (a ``gr.State``), so a
large run is never copied per session. Handlers:

* ``explore_filter``: filters → count line, question table, question picker (and the comparison panel for the
  chosen runs A and B);
* ``explore_question``: a question id and the runs to show → the trajectories side by side;
* a table row click picks that question (unnamed handler).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any

import gradio as gr
import pandas as pd

from .html import compare_html, question_html, summary_html
from .runs import Workspace
from .table import Filters, facets, filter_ids, question_choices, table_rows
from .thumbs import Thumbnails

ANY = "(any)"
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


def filters_of(run: Any, other: Any, outcome: Any, hop: Any, domain: Any, category: Any, error: Any, agree: Any,
               min_steps: Any, max_steps: Any, text: Any) -> Filters:  # fmt: skip
    """:class:`Filters` from the widgets' values (``(any)``, blanks and ``None`` mean any)."""
    return Filters(run=_opt(run) or None, other=_opt(other) or None, outcome=_opt(outcome), hop=_opt(hop),
                   domain=_opt(domain), category=_opt(category), error=_opt(error), agreement=_opt(agree),
                   min_steps=_num(min_steps), max_steps=_num(max_steps), text=str(text or "")[:200])  # fmt: skip


def filtered(ws: Workspace | None, filters: Filters) -> tuple[str, Any, list[tuple[str, str]], str]:
    """Count line, table, picker choices and comparison HTML for ``filters``."""
    if ws is None:
        return "No run loaded.", pd.DataFrame(), [], compare_html_empty()
    ids = filter_ids(ws, filters)
    headers, rows = table_rows(ws, ids)
    count = f"**{len(ids)}** of {len(ws.references)} questions"
    return count, pd.DataFrame(rows, columns=headers), question_choices(ws, ids), compare_html(
        ws, filters.run, filters.other)


def compare_html_empty() -> str:
    """The comparison panel before a run is loaded."""
    return "<div id='explore-compare'><p>No run loaded.</p></div>"


def _choices(values: list[str]) -> list[str]:
    return [ANY, *values]


class ExplorerUI:
    """The components of one explorer, created in the current Blocks context (see :meth:`build`)."""

    def __init__(self, registry: Registry, thumbs: Thumbnails | None, key: gr.State) -> None:
        self.registry, self.thumbs, self.key = registry, thumbs, key

    def build(self, ws: Workspace | None = None) -> None:
        """Create the components; ``ws`` gives the initial values (``None``: empty until a run is loaded)."""
        f = facets(ws) if ws is not None else {k: [] for k in ("outcome", "hop", "domain", "category", "error",
                                                               "agreement")}  # fmt: skip
        names = ws.names if ws is not None else []
        with gr.Tab("Questions", elem_id="explore-tab-questions"):
            with gr.Row():
                # custom values allowed: handlers validate names and ids themselves (API callers send anything)
                self.run_a = gr.Dropdown(names, value=names[0] if names else None, label="Run A (filtered)",
                                         allow_custom_value=True, elem_id="explore-run-a")  # fmt: skip
                self.run_b = gr.Dropdown(names, value=names[1] if len(names) > 1 else None, label="Run B",
                                         allow_custom_value=True,
                                         elem_id="explore-run-b")  # fmt: skip
                self.outcome = gr.Dropdown(_choices(f["outcome"]), value=ANY, label="Outcome (A)",
                                           elem_id="explore-outcome")  # fmt: skip
                self.error = gr.Dropdown(_choices(f["error"]), value=ANY, label="Error class (A)",
                                         elem_id="explore-error")  # fmt: skip
                self.agree = gr.Dropdown(_choices(f["agreement"]), value=ANY, label="Agreement A/B",
                                         elem_id="explore-agree")  # fmt: skip
            with gr.Row():
                self.hop = gr.Dropdown(_choices(f["hop"]), value=ANY, label="Hop type", elem_id="explore-hop")
                self.domain = gr.Dropdown(_choices(f["domain"]), value=ANY, label="Domain", elem_id="explore-domain")
                self.category = gr.Dropdown(_choices(f["category"]), value=ANY, label="Category",
                                            elem_id="explore-category")  # fmt: skip
                # Textboxes, not gr.Number: an empty Number reaches the handler as 0, which would filter
                self.min_steps = gr.Textbox(label="Min steps (A)", placeholder="any", elem_id="explore-min")
                self.max_steps = gr.Textbox(label="Max steps (A)", placeholder="any", elem_id="explore-max")
                self.text = gr.Textbox(label="Search question text or id", elem_id="explore-text")
            apply = gr.Button("Apply filters", elem_id="explore-apply")
            start = filtered(ws, Filters()) if ws is not None else None
            self.count = gr.Markdown(start[0] if start else "No run loaded.", elem_id="explore-count")
            self.table = gr.Dataframe(value=start[1] if start else None, interactive=False, wrap=True,
                                      max_height=260, elem_id="explore-table")  # fmt: skip
            with gr.Row():
                first = start[2][0][1] if start and start[2] else None
                self.pick = gr.Dropdown(start[2] if start else [], value=first, label="Question",
                                        allow_custom_value=True,
                                        elem_id="explore-pick", scale=3)  # fmt: skip
                self.shown = gr.CheckboxGroup(names, value=names[:DEFAULT_SHOWN], label="Runs side by side",
                                              elem_id="explore-shown", scale=2)  # fmt: skip
            self.detail = gr.HTML(question_html(ws, first, names[:DEFAULT_SHOWN], self.thumbs) if ws else "",
                                  elem_id="explore-detail")  # fmt: skip
        # The summary's figures take about half a second per run: drawn when the tab is first opened (then cached),
        # so they do not delay the first page.
        with gr.Tab("Summary", elem_id="explore-tab-summary") as summary_tab:
            self.summary = gr.HTML("<div id='explore-summary-wait'><p>Drawing the summary…</p></div>",
                                   elem_id="explore-summary-panel")
        with gr.Tab("Compare runs", elem_id="explore-tab-compare"):
            self.compare = gr.HTML(start[3] if start else compare_html_empty(), elem_id="explore-compare-panel")
        inputs = [self.run_a, self.run_b, self.outcome, self.hop, self.domain, self.category, self.error, self.agree,
                  self.min_steps, self.max_steps, self.text, self.key]  # fmt: skip
        outputs = [self.count, self.table, self.pick, self.compare]
        events = [apply.click, self.text.submit, self.min_steps.submit, self.max_steps.submit, self.run_a.input,
                  self.run_b.input, self.outcome.input, self.error.input, self.agree.input, self.hop.input,
                  self.domain.input, self.category.input]
        gr.on(events, self.on_filter, inputs, outputs, api_name="explore_filter")
        self.pick.change(self.on_question, [self.pick, self.shown, self.key], self.detail, api_name="explore_question")
        self.shown.change(self.on_question, [self.pick, self.shown, self.key], self.detail, api_name=False)
        self.table.select(self.on_select, [self.key], self.pick, api_name=False)
        summary_tab.select(self.registry.summary, [self.key], self.summary, api_name=False)

    def on_filter(self, *values: Any) -> tuple[Any, ...]:
        """``explore_filter``: apply the filters of the widgets."""
        *widgets, key = values
        ws = self.registry.get(key)
        count, frame, choices, compare = filtered(ws, filters_of(*widgets))
        value = choices[0][1] if choices else None
        return count, frame, gr.update(choices=choices, value=value), compare

    def on_question(self, qid: Any, shown: Any, key: Any) -> str:
        """``explore_question``: the trajectories of ``qid`` in the shown runs."""
        ws = self.registry.get(key)
        if ws is None:
            return "<div id='explore-question'><p>No run loaded.</p></div>"
        names = [str(n) for n in shown or []] or ws.names[:1]
        return question_html(ws, str(qid) if qid else None, names, self.thumbs)

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
        count, frame, choices, compare = filtered(ws, Filters())
        first = choices[0][1] if choices else None
        return [
            gr.update(choices=names, value=names[0]), gr.update(choices=names, value=names[1] if len(names) > 1
                                                                else None),
            gr.update(choices=_choices(f["outcome"]), value=ANY), gr.update(choices=_choices(f["error"]), value=ANY),
            gr.update(choices=_choices(f["agreement"]), value=ANY), gr.update(choices=_choices(f["hop"]), value=ANY),
            gr.update(choices=_choices(f["domain"]), value=ANY), gr.update(choices=_choices(f["category"]), value=ANY),
            count, frame, gr.update(choices=choices, value=first),
            gr.update(choices=names, value=names[:DEFAULT_SHOWN]),
            question_html(ws, first, names[:DEFAULT_SHOWN], self.thumbs), self.registry.summary(key), compare,
        ]  # fmt: skip

    def refresh_outputs(self) -> list[Any]:
        """The components :meth:`updates_for` updates, in its order."""
        return [self.run_a, self.run_b, self.outcome, self.error, self.agree, self.hop, self.domain, self.category,
                self.count, self.table, self.pick, self.shown, self.detail, self.summary, self.compare]  # fmt: skip


def build_view_app(ws: Workspace, thumbs: Thumbnails | None = None, *, title: str = "MADQA run explorer") -> gr.Blocks:
    """The app of ``madqa view``: one workspace, known at start."""
    registry = Registry(limit=1)
    key = registry.put(ws, "local")
    runs = ", ".join(f"**{r.name}**" for r in ws.runs)
    with gr.Blocks(title=title) as demo:
        gr.Markdown(f"# {title}\n{runs} on the **{ws.split}** split ({len(ws.references)} questions). Filter the "
                    "questions, pick one to see each run's steps, pages (gold evidence framed green) and answer.")
        state = gr.State(key)
        ExplorerUI(registry, thumbs, state).build(ws)
    return demo
