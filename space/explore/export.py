"""Static export: one self-contained HTML file (no external JS, CSS, fonts or images; figures are ``data:`` URIs).

It holds the runs' summary with the figures, the comparison (κ, agreement counts), the question table, and each
question's trajectories in a collapsed ``<details>`` (without page thumbnails unless asked, to keep the file small
enough to attach to an issue). Opened in a browser without network access it shows everything.
"""

from __future__ import annotations

import datetime as dt
from html import escape
from pathlib import Path

from .html import compare_html, run_column, summary_html
from .runs import Workspace
from .table import outcome, table_rows
from .thumbs import Thumbnails

STYLE = ("body{font-family:sans-serif;margin:16px;max-width:1400px} table.questions td,table.questions th"
         "{border-bottom:1px solid #ddd;padding:2px 6px;font-size:13px;text-align:left} details{margin:2px 0}")


def export_html(ws: Workspace, *, thumbs: Thumbnails | None = None, details: bool = True) -> str:
    """The whole report as one HTML document (see the module docstring)."""
    headers, rows = table_rows(ws, [r.id for r in ws.references])
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    runs = "".join(f"<li><b>{escape(r.name)}</b>: {escape(r.source)}"
                   + "".join(f" · {k} {escape(str(v))}" for k, v in r.meta.items()) + "</li>"
                   for r in ws.runs)  # fmt: skip
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>MADQA run report</title>",
        f"<style>{STYLE}</style></head><body><h1>MADQA run report</h1>",
        f"<p>{escape(ws.split)} split · {len(ws.references)} questions · dataset {escape(ws.dataset or 'default')}"
        f" · written {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}</p><ul>{runs}</ul>",
        summary_html(ws),
        compare_html(ws) if len(ws.runs) > 1 else "",
        f"<h3>Questions</h3><table class='questions' style='border-collapse:collapse'><tr>{head}</tr>{body}</table>",
    ]
    if details:
        parts.append("<h3>Trajectories</h3>")
        for ref in ws.references:
            marks = " ".join(f"{r.name}: {outcome(r.items[ref.id])}" for r in ws.runs)
            cols = "".join(run_column(ws, ref.id, r.name, thumbs) for r in ws.runs)
            parts.append(f"<details id='q-{escape(ref.id)}'><summary>{escape(ref.id)}: {escape(ref.question)} "
                         f"<small>({escape(marks)})</small></summary><div style='display:flex;gap:8px;"
                         f"flex-wrap:wrap'>{cols}</div></details>")  # fmt: skip
    parts.append("</body></html>")
    return "".join(parts)


def write_export(ws: Workspace, path: str | Path, *, thumbs: Thumbnails | None = None) -> Path:
    """Write :func:`export_html` to ``path`` (parents created) and return it."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(export_html(ws, thumbs=thumbs), encoding="utf-8")
    return out
