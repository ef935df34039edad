"""Static export: one self-contained HTML file (no external JS, CSS, fonts or images; figures are ``data:`` URIs).

Its header names the dataset as the results lines record it, the split, the counts and each run's settings. It
holds the runs' summary with the figures, the comparison (κ, agreement counts), the question table, and each
question's trajectories in a collapsed ``<details>`` (without page thumbnails unless asked, to keep the file small
enough to attach to an issue). Opened in a browser without network access it shows everything; its one inline
script filters the question table (a text box) and sorts it (a click on a column header).
"""

from __future__ import annotations

import datetime as dt
from html import escape
from pathlib import Path

from .html import compare_html, run_column, summary_html
from .run_info import dataset_names, run_settings
from .runs import Workspace
from .table import outcome, table_rows
from .thumbs import Thumbnails

STYLE = (
    "body{font-family:sans-serif;margin:16px;max-width:1400px} table.questions td,table.questions th"
    "{border-bottom:1px solid #ddd;padding:2px 6px;font-size:13px;text-align:left} details{margin:2px 0}"
    " table.questions th{cursor:pointer;user-select:none;background:#f3f3f3;position:sticky;top:0}"
    " table.questions th[data-sorted]::after{content:attr(data-sorted)} #q-filter{width:min(420px,90vw);"
    "padding:4px;font-size:14px} header p{margin:2px 0}"
)
#: The export's only script, inline (the file must work offline, without a CDN): the text box keeps the question
#: rows (and their trajectories) that contain its words; a click on a column header sorts by it, again reverses.
SCRIPT = """
(() => {
  const table = document.querySelector('table.questions'), box = document.getElementById('q-filter');
  const count = document.getElementById('q-count'), rows = () => Array.from(table.tBodies[0].rows);
  const apply = () => {
    const words = box.value.toLowerCase().split(/\\s+/).filter(Boolean);
    let shown = 0;
    for (const row of rows()) {
      const text = row.textContent.toLowerCase(), keep = words.every(w => text.includes(w));
      row.style.display = keep ? '' : 'none'; shown += keep ? 1 : 0;
      const more = document.getElementById('q-' + row.dataset.id);
      if (more) more.style.display = keep ? '' : 'none';
    }
    count.textContent = shown + ' of ' + rows().length + ' questions shown';
  };
  box.addEventListener('input', apply);
  table.tHead.addEventListener('click', (e) => {
    const th = e.target.closest('th'); if (!th) return;
    const col = th.cellIndex, down = th.dataset.sorted === ' ▲';
    for (const h of table.tHead.rows[0].cells) delete h.dataset.sorted;
    th.dataset.sorted = down ? ' ▼' : ' ▲';
    const key = (r) => r.cells[col].textContent;
    const sorted = rows().sort((a, b) => key(a).localeCompare(key(b), undefined, {numeric: true}));
    if (down) sorted.reverse();
    for (const r of sorted) table.tBodies[0].appendChild(r);
  });
  apply();
})();
"""


def header_html(ws: Workspace) -> str:
    """The report's header: dataset(s) as the lines name them, split, counts, date, and each run's settings."""
    datasets = dataset_names(ws)
    dataset = ", ".join(datasets) if datasets else "not recorded in the lines"
    runs = []
    for r in ws.runs:
        solved = sum(1 for it in r.items.values() if outcome(it) == "correct")
        settings = " · ".join(f"{k} {v}" for k, v in run_settings(r) if k != "dataset")
        runs.append(
            f"<li><b>{escape(r.name)}</b> ({escape(r.source)}): {solved} of {len(ws.references)} correct"
            f"{' · ' + escape(settings) if settings else ''}</li>"
        )
    written = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"<header><h1>MADQA run report</h1><p id='report-meta'>Dataset <b id='report-dataset'>"
        f"{escape(dataset)}</b> · {escape(ws.split)} split · {len(ws.references)} questions · {len(ws.runs)} "
        f"run(s) · written {written}</p><ul id='report-runs'>{''.join(runs)}</ul></header>"
    )


def export_html(ws: Workspace, *, thumbs: Thumbnails | None = None, details: bool = True) -> str:
    """The whole report as one HTML document (see the module docstring)."""
    headers, rows = table_rows(ws, [r.id for r in ws.references])
    head = "".join(f"<th title='click to sort'>{escape(h)}</th>" for h in headers)
    body = "".join(
        f"<tr data-id='{escape(str(row[0]))}'>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>"
        for row in rows
    )
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>MADQA run report</title>",
        f"<style>{STYLE}</style></head><body>{header_html(ws)}",
        summary_html(ws),
        compare_html(ws) if len(ws.runs) > 1 else "",
        "<h3>Questions</h3><p><input id='q-filter' type='search' placeholder='filter: words of the question, id, "
        "✓/✗, error class…' aria-label='filter the questions'> <span id='q-count'></span></p>"
        f"<table class='questions' style='border-collapse:collapse'><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>",
    ]
    if details:
        parts.append("<h3>Trajectories</h3>")
        for ref in ws.references:
            marks = " ".join(f"{r.name}: {outcome(r.items[ref.id])}" for r in ws.runs)
            cols = "".join(run_column(ws, ref.id, r.name, thumbs) for r in ws.runs)
            parts.append(
                f"<details id='q-{escape(ref.id)}'><summary>{escape(ref.id)}: {escape(ref.question)} "
                f"<small>({escape(marks)})</small></summary><div style='display:flex;gap:8px;"
                f"flex-wrap:wrap'>{cols}</div></details>"
            )
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "".join(parts)


def write_export(ws: Workspace, path: str | Path, *, thumbs: Thumbnails | None = None) -> Path:
    """Write :func:`export_html` to ``path`` (parents created) and return it."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(export_html(ws, thumbs=thumbs), encoding="utf-8")
    return out
