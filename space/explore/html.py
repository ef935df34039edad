"""HTML fragments of the explorer: run summary, comparison and one question's trajectories side by side.

One renderer serves the Gradio app (``gr.HTML``) and the static export, so both show the same numbers. Styles are
inline (a ``gr.HTML`` fragment cannot rely on page CSS), every text from a results file is escaped, and each
summary number carries its exact value in ``data-key``/``data-value`` attributes (what tests compare with
``madqa evaluate --json``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..display import NONE, interval, missing, number, share
from .detail import question_view
from .run_info import is_human, page_views, run_settings
from .runs import RunData, Workspace
from .table import AGREEMENT_LABELS, AGREEMENTS, agreement, kappas
from .thumbs import Thumbnails

GOLD, GOLD_DOC, WRONG, OK = "#1b7f3b", "#c58a00", "#b3261e", "#1b7f3b"
BOX = "border:1px solid #ccc;border-radius:6px;padding:6px;margin:4px 0;"
#: Width of a page thumbnail in the detail (the image keeps the page's proportions).
THUMB_WIDTH = 150
#: A summary figure fills its container's width (it was drawn 468 px wide and shown at that size: 40% of a laptop's
#: page); its height follows.
FIGURE_STYLE = "display:block;width:100%;height:auto;margin:8px 0"
MONO = "font-family:monospace;white-space:pre-wrap;font-size:12px;background:#f6f6f6;padding:4px;"
#: Summary rows: (report key, label, kind); ``pct`` values are shares shown as percentages.
SUMMARY_ROWS = (
    ("accuracy", "Accuracy", "pct"),
    ("accuracy_ci", "Accuracy 95% CI", "pct_ci"),
    ("anls", "ANLS*", "pct"),
    ("page_f1", "Page F1", "pct"),
    ("doc_f1", "Doc F1", "pct"),
    ("kuiper", "Kuiper K", "num"),
    ("kuiper_ci", "Kuiper 95% CI", "num_ci"),
    ("mean_steps", "Mean steps", "num"),
    ("wasted_effort_ratio", "Wasted-effort ratio", "num"),
    ("n", "Gold items", "int"),
    ("n_predicted", "Predicted", "int"),
    ("missing", "Missing", "int"),
    ("unscored", "Unscored", "int"),
)


def fmt(value: Any, kind: str) -> str:
    """A summary value as shown (:data:`..display.NONE` for none; three decimals for plain numbers).

    >>> fmt(0.4567, "pct"), fmt([0.1, 0.25], "pct_ci"), fmt(1.23456, "num"), fmt(None, "num")
    ('45.7%', '[10.0%, 25.0%]', '1.235', '—')
    """
    if kind in ("pct_ci", "num_ci"):
        return interval(value, shares=kind == "pct_ci", digits=1 if kind == "pct_ci" else 3) or NONE
    if kind == "pct":
        return share(value)
    if kind == "int":
        return NONE if missing(value) else str(int(value))
    return number(value, 3)


def _shown(report: Mapping[str, Any], key: str, kind: str) -> str:
    """A summary cell: the Kuiper value and CI say "n/a (fixed effort)" where the run's steps do not vary."""
    from madqa.metric.kuiper import NOT_APPLICABLE, not_applicable

    if key in ("kuiper", "kuiper_ci") and not_applicable(report):
        return NOT_APPLICABLE
    return fmt(report.get(key), kind)


def _attr(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(repr(float(v)) for v in value)
    return "" if value is None else repr(float(value)) if isinstance(value, float) else str(value)


def summary_table(ws: Workspace) -> str:
    """The summary numbers of every run, one column per run."""
    head = "".join(f"<th style='padding:2px 8px'>{escape(r.name)}</th>" for r in ws.runs)
    body = []
    for key, label, kind in SUMMARY_ROWS:
        cells = "".join(
            f"<td style='padding:2px 8px;text-align:right' data-run='{escape(r.name)}' data-key='{key}' "
            f"data-value='{_attr(r.report.get(key))}'>{_shown(r.report, key, kind)}</td>"
            for r in ws.runs
        )
        body.append(f"<tr><th style='text-align:left;padding:2px 8px'>{label}</th>{cells}</tr>")
    return f"<table class='summary' style='border-collapse:collapse'><tr><th></th>{head}</tr>{''.join(body)}</table>"


def cost_html(ws: Workspace) -> str:
    """Each run's inference cost at the shipped prices (:mod:`madqa.metric.cost`), or why it has none."""
    from madqa.agents.harness.prices import load_prices
    from madqa.metric.cost import run_cost, unpriced_reason

    table = load_prices()
    parts = []
    for r in ws.runs:
        cost = run_cost(list(r.records.values()), table)
        why = unpriced_reason(cost)
        priced = f"${cost.per_question_usd:.4f} per question (${cost.total_usd:.4f})" if why is None else ""
        text = priced or f"– ({why})"
        parts.append(f"<span class='cost' data-cost-run='{escape(r.name)}'>{escape(r.name)}: {escape(text)}</span>")
    return f"<p>Inference cost (prices: {escape(table.source)}): {' · '.join(parts)}</p>"


def summary_html(ws: Workspace, *, with_figures: bool = True) -> str:
    """Numbers, then the figures (Kuiper curve, budget curve, error cascade, effort histograms)."""
    parts = [
        f"<div id='explore-summary'><h3>Summary ({escape(ws.split)} split, {len(ws.references)} questions)</h3>",
        summary_table(ws),
        cost_html(ws),
    ]
    if with_figures:
        from . import figures  # matplotlib: imported by the first summary drawn, not by the Space's start-up

        uris = [figures.kuiper_figure(ws.runs), figures.budget_figure(ws.runs), figures.cascade_figure(ws.runs)]
        uris += [figures.effort_figure(r) for r in ws.runs]
        alts = ["Kuiper effort calibration", "accuracy vs step budget", "error cascade and failures by class"]
        alts += [f"effort histogram of {r.name}" for r in ws.runs]
        parts.append(
            "<div>"
            + "".join(
                f"<img alt='{escape(alt)}' class='summary-figure' style='{FIGURE_STYLE}' src='{u}'>"
                for alt, u in zip(alts, uris, strict=True)
            )
            + "</div>"
        )
    parts.append("</div>")
    return "".join(parts)


def compare_html(ws: Workspace, a: str | None = None, b: str | None = None) -> str:
    """Cohen's κ between all runs and the agreement counts of runs A and B."""
    if len(ws.runs) < 2:
        return "<div id='explore-compare'><p>Give two or more results files to compare runs.</p></div>"
    run_a = ws.run(a)
    run_b = ws.run(b) if b and b != run_a.name else next(r for r in ws.runs if r is not run_a)
    agree = agreement(run_a, run_b)
    rows = "".join(
        f"<tr><th style='text-align:left;padding:2px 8px'>{AGREEMENT_LABELS[k]}</th>"
        f"<td id='agree-{k}' data-key='{k}' style='text-align:right;padding:2px 8px'>{agree['counts'][k]}"
        "</td></tr>"
        for k in AGREEMENTS
    )
    matrix = kappas(ws)
    head = "".join(f"<th style='padding:2px 8px'>{escape(n)}</th>" for n in ws.names)
    krows = "".join(
        f"<tr><th style='text-align:left;padding:2px 8px'>{escape(x)}</th>"
        + "".join(f"<td style='text-align:right;padding:2px 8px'>{fmt(matrix[x][y], 'num')}</td>" for y in ws.names)
        + "</tr>"
        for x in ws.names
    )
    return (
        f"<div id='explore-compare'><h3>A = {escape(run_a.name)} vs B = {escape(run_b.name)}</h3>"
        f"<p>Cohen's κ: <b id='agree-kappa' data-value='{_attr(agree['kappa'])}'>{fmt(agree['kappa'], 'num')}"
        f"</b> over {agree['n']} questions</p><table style='border-collapse:collapse'>{rows}</table>"
        f"<h4>Cohen's κ between all runs</h4><table style='border-collapse:collapse'><tr><th></th>{head}</tr>"
        f"{krows}</table></div>"
    )


def _page(p: Mapping[str, Any], thumbs: Thumbnails | None) -> str:
    color = GOLD if p["gold"] else GOLD_DOC if p["gold_doc"] else "#999"
    mark = " ★ gold" if p["gold"] else " (gold doc)" if p["gold_doc"] else ""
    label = f"{escape(p['document'])} p. {p['page'] if p['page'] is not None else '–'}{mark}"
    uri = thumbs.uri(p["document"], p["page"]) if thumbs is not None else None
    # The whole page, never cropped; a click opens it large (the app's and the export's zoom scripts find the page
    # by these data attributes).
    img = (
        (
            f"<img class='thumb' src='{uri}' alt='{label}' title='click to enlarge' data-doc='{escape(p['document'])}'"
            f" data-page='{p['page']}' style='width:100%;height:auto;display:block;cursor:zoom-in'>"
        )
        if uri
        else ""
    )
    cls = "page gold" if p["gold"] else "page"
    return (
        f"<span class='{cls}' style='display:inline-block;vertical-align:top;margin:2px;padding:2px;"
        f"border:{3 if p['gold'] else 1}px solid {color};font-size:11px;width:{THUMB_WIDTH}px;"
        f"overflow-wrap:anywhere'>{img}{label}</span>"
    )


def settings_html(run: RunData) -> str:
    """The run's recorded settings (agent, model, dataset, oracle, top-k, T, …) as one line."""
    pairs = run_settings(run)
    if not pairs:
        return "<div class='run-config'><i>no settings recorded</i></div>"
    items = " · ".join(f"{escape(k)} <b data-setting='{escape(k)}'>{escape(v)}</b>" for k, v in pairs)
    return f"<div class='run-config' style='font-size:12px;color:#333;margin:2px 0 4px'>{items}</div>"


def views_html(ws: Workspace, qid: str, run: RunData) -> str:
    """A person's trail of page views (``madqa human`` lines), or what the line records instead."""
    record = run.records.get(qid)
    if not is_human(record):
        return ""
    views = page_views(ws.refs[qid], record)
    if views is None:
        return "<div class='page-views'><i>this line records no page views</i></div>"
    items = []
    for v in views:
        color = GOLD if v["gold"] else GOLD_DOC if v["gold_doc"] else "#333"
        at = f" +{v['at_s']} s" if v["at_s"] is not None else ""
        via = f" via {escape(str(v['via']))}" if v["via"] else ""
        star = " ★" if v["gold"] else ""
        items.append(
            f"<li style='color:{color}'>{escape(v['document'])} p. {escape(str(v['page']))}{star}"
            f"<span style='color:#666'>{via}{at}</span></li>"
        )
    body = f"<ol style='margin:2px 0;padding-left:20px'>{''.join(items)}</ol>" if items else " <i>none</i>"
    return f"<div class='page-views' style='{BOX}'><b>Page views ({len(views)})</b>{body}</div>"


def _search(s: Mapping[str, Any], thumbs: Thumbnails | None, max_pages: int) -> str:
    err = f" <i style='color:{WRONG}'>{escape(str(s['error']))}</i>" if s.get("error") else ""
    pages = "".join(_page(p, thumbs) for p in s["results"][:max_pages])
    more = f" … {len(s['results']) - max_pages} more" if len(s["results"]) > max_pages else ""
    return (
        f"<div class='search'>search <code class='query'>{escape(s['query'])}</code> → {len(s['results'])} page(s)"
        f"{err}<div>{pages}{more}</div></div>"
    )


def _step(step: Mapping[str, Any], thumbs: Thumbnails | None, max_pages: int) -> str:
    if step["kind"] == "search":
        return f"<div style='{BOX}'><b>search {step['step']}</b>{_search(step, thumbs, max_pages)}</div>"
    tokens = ""
    if step.get("input_tokens") is not None or step.get("output_tokens") is not None:
        tokens = f" · tokens in {step.get('input_tokens')} / out {step.get('output_tokens')}"
    secs = f" · {step['duration_s']} s" if step.get("duration_s") is not None else ""
    parts = [
        f"<b>step {escape(str(step['step']))}</b>{'  (final)' if step['final'] else ''}"
        f"<span style='color:#666;font-size:12px'>{tokens}{secs}</span>"
    ]
    if step.get("thought"):
        parts.append(
            f"<details><summary>model output</summary><div style='{MONO}'>{escape(step['thought'])}</div></details>"
        )
    parts += [_search(s, thumbs, max_pages) for s in step["searches"]]
    parts += [f"<div class='code' style='{MONO}'>{escape(c)}</div>" for c in step["code"]]
    parts += [f"<div>{escape(c['name'])}(<code>{escape(c['arguments'])}</code>)</div>" for c in step["calls"]]
    if step["code"] and step.get("observation"):
        parts.append(f"<div class='output' style='{MONO}'>{escape(step['observation'])}</div>")
    if step.get("error"):
        parts.append(f"<div style='color:{WRONG}'>{escape(str(step['error']))}</div>")
    return f"<div style='{BOX}'>{''.join(parts)}</div>"


def _answer(view: Mapping[str, Any], thumbs: Thumbnails | None, show_gold: bool) -> str:
    color = OK if view["outcome"] == "correct" else WRONG
    answer = escape("; ".join(view["answer"])) or "<i>(no answer)</i>"
    cites = "".join(_page(c, thumbs) for c in view["citations"]) or "<i>none</i>"
    scores = (
        f"score {view['score']} · ANLS* {view['anls']:.2f} · Page F1 {view['page_f1']:.2f} · "
        f"Doc F1 {view['doc_f1']:.2f} · steps {view['steps_count'] if view['steps_count'] is not None else '?'}"
    )
    err = f" · error class <b class='error-class'>{escape(view['error_class'])}</b>" if view["error_class"] else ""
    usage = view.get("usage") or {}
    tok = f" · tokens {usage.get('input_tokens')}/{usage.get('output_tokens')}" if usage else ""
    out = [
        f"<div style='{BOX}border-color:{color}'><b>Final answer:</b> <span class='answer'>{answer}</span>"
        f" <b style='color:{color}' class='outcome'>{view['outcome']}</b><div>{scores}{err}{tok}</div>"
        f"<div>Cited: {cites}</div>"
    ]
    if view.get("run_error"):
        out.append(f"<div style='color:{WRONG}'>run error: {escape(str(view['run_error']))}</div>")
    if show_gold:
        gold = " | ".join(escape("; ".join(v)) for v in view["gold_answers"])
        out.append(
            f"<div class='gold'><b>Gold answer(s):</b> {gold}</div><div>Gold evidence: "
            + "".join(_page(p, thumbs) for p in view["evidence"])
            + "</div>"
        )
    out.append("</div>")
    return "".join(out)


def run_column(
    ws: Workspace, qid: str, run_name: str, thumbs: Thumbnails | None, *, max_pages: int = 5, show_gold: bool = True
) -> str:
    """One run's trajectory of one question."""
    run = ws.run(run_name)
    view = question_view(ws, qid, run)
    steps = "".join(_step(s, thumbs, max_pages) for s in view["steps"]) or "<p><i>no steps recorded</i></p>"
    return (
        f"<div class='run-column' data-run='{escape(view['run'])}' style='flex:1;min-width:300px'>"
        f"<h4 style='margin:4px 0'>{escape(view['run'])}</h4>{settings_html(run)}{steps}"
        f"{views_html(ws, qid, run)}{_answer(view, thumbs, show_gold)}</div>"
    )


def question_html(
    ws: Workspace, qid: str | None, runs: Sequence[str], thumbs: Thumbnails | None, *, max_pages: int = 5
) -> str:
    """The question header and one column per chosen run (side by side)."""
    if not qid or qid not in ws.refs:
        return "<div id='explore-question'><p>Pick a question.</p></div>"
    ref = ws.refs[qid]
    names = [n for n in runs if n in ws.names] or ws.names[:1]
    cols = "".join(run_column(ws, qid, n, thumbs, max_pages=max_pages) for n in names)
    return (
        f"<div id='explore-question'><h3>{escape(qid)}: {escape(ref.question)}</h3>"
        f"<p style='color:#555'>{escape(ref.hop_type)} · {escape(ref.domain)} · "
        f"{escape(ref.document_category)}</p><div style='display:flex;gap:8px;flex-wrap:wrap'>{cols}</div></div>"
    )
