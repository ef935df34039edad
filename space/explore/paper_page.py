"""The figure set as files: PNG (300 dpi), PDF and SVG per drawn figure, ``figures.json``, one self-contained page.

``index.html`` has no external address at all: figures are PNG ``data:`` URIs, styles inline, no script (the
links to each figure's PDF, SVG and PNG are relative); every text from a results file is escaped. Titles and
figure numbers are the page's (the images have none). A skipped figure shows its reason in place of the image, a
run left out of a drawn figure is named under it with why, every drawn figure states its denominator, and a run
that misses questions is warned about at the top (:mod:`.paper_notes`).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from .paper_data import Figure, PaperRuns, plain
from .paper_figures import draw, table_cells
from .paper_notes import coverage, denominator, warnings
from .paper_style import FORMATS, PNG_DPI, Runs

STYLE = (
    "body{font-family:sans-serif;margin:16px;max-width:1200px} table{border-collapse:collapse}"
    "td,th{border-bottom:1px solid #ddd;padding:2px 8px;font-size:13px;text-align:right}"
    "th:first-child,td:first-child{text-align:left} .skipped{color:#b3261e} img{max-width:100%}"
    "section{margin:18px 0;border-top:1px solid #ccc} .coverage{color:#8a4b00} .denominator{color:#444}"
    ".scroll{overflow-x:auto} li,p{overflow-wrap:anywhere} img{height:auto} @media (max-width:600px){body{margin:8px}}"
)


def figures_json(
    figures: Sequence[Figure],
    meta: Mapping[str, Any],
    files: Mapping[str, Sequence[str]] | None = None,
    notes: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The JSON document: the run set (``meta``: runs, their colours and coverage, …) and each figure's status,
    reason, files (PNG first), denominator and numbers."""
    files, notes = files or {}, notes or {}
    return {
        **plain(dict(meta)),
        "figures": {
            f.id: {**plain(f), "files": list(files.get(f.id, [])), "denominator": notes.get(f.id)} for f in figures
        },
    }


def _table_html(fig: Figure, runs: PaperRuns) -> str:
    head, rows = table_cells(fig.data, runs)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        "<table id='table3'><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + f"</tr>{body}</table>"
        f"<p><small>{escape(fig.data['note'])}</small></p>"
    )


def _extras(fig: Figure) -> str:
    """What a figure's image cannot list: ids of anomalous and human-only items, costs."""
    out = []
    if fig.id == "difficulty" and fig.status == "ok":
        anomalous = fig.data.get("anomalous") or {}
        ids = [it["id"] for it in anomalous.get("items") or []]
        out.append(
            f"<p>Anomalous items (easy for the weak half, hard for the strong half): "
            f"<span class='anomalous'>{escape(', '.join(ids)) or 'none'}</span></p>"
        )
        for name, value in (fig.data.get("human_only_failures") or {}).items():
            out.append(
                f"<p>{escape(name)} (human) failed on {len(value['ids'])} item(s) that at least "
                f"{100 * value['min_p']:.0f}% of the models solve: {escape(', '.join(value['ids'])) or 'none'}"
                "</p>"
            )
    if fig.id == "accuracy_vs_cost" and fig.data.get("cost"):
        rows = "".join(
            f"<tr><td>{escape(n)}</td><td>{_usd(c['total_usd'])}</td><td>{_usd(c['per_question_usd'])}"
            f"</td><td>{c['input_tokens']}</td><td>{c['output_tokens']}</td><td>{c['n_priced']}/"
            f"{c['n_lines']}</td></tr>"
            for n, c in fig.data["cost"].items()
        )
        out.append(
            "<div class='scroll'><table class='cost'><tr><th>run</th><th>USD total</th><th>USD / question</th>"
            "<th>input tokens"
            f"</th><th>output tokens</th><th>lines priced</th></tr>{rows}</table></div>"
        )
    return "".join(out)


def _usd(value: Any) -> str:
    return "–" if value is None else f"${value:.4f}"


def section(fig: Figure, runs: PaperRuns, uri: str | None, note: str | None = None) -> str:
    """One figure's section: title, image (or the reason it is skipped) and its files, denominator, left-out runs,
    extras."""
    parts = [
        f"<section id='fig-{escape(fig.id)}' data-status='{fig.status}'><h2>{escape(fig.paper)}: "
        f"{escape(fig.title)}</h2>"
    ]
    if fig.id == "table3":  # wider than a phone: it scrolls inside its box, the page does not
        parts.append(f"<div class='scroll'>{_table_html(fig, runs)}</div>")
    if fig.status == "skipped":
        parts.append(f"<p class='skipped'>Not drawn: {escape(fig.reason or '')}</p>")
    elif uri is not None:
        links = " · ".join(f"<a href='{escape(fig.id)}.{fmt}'>{fmt.upper()}</a>" for fmt in FORMATS)
        width = _shown_width(base64.b64decode(uri.split(",", 1)[1][:40]))
        parts.append(f"<img alt='{escape(fig.title)}' width='{width}' src='{uri}'><p><small>{links}</small></p>")
    if note:
        parts.append(f"<p class='denominator'><small>{escape(note)}</small></p>")
    if fig.skipped_systems:
        items = "".join(f"<li>{escape(runs.label(n))}: {escape(why)}</li>" for n, why in fig.skipped_systems.items())
        parts.append(f"<p>Runs not in this figure:</p><ul class='left-out'>{items}</ul>")
    parts.append(_extras(fig) + "</section>")
    return "".join(parts)


def _answered(cover: Mapping[str, Any] | None) -> str:
    return "" if not cover else f" · {cover['answered']} of {cover['n_gold']} questions answered"


def _shown_width(png: bytes) -> int:
    """CSS pixels that show a :data:`~.paper_style.PNG_DPI` PNG at about its print size (width at bytes 16–20)."""
    return round(int.from_bytes(png[16:20], "big") / PNG_DPI * 110)


def page_html(figures: Sequence[Figure], runs: PaperRuns, uris: Mapping[str, str], meta: Mapping[str, Any]) -> str:
    """The whole page (see the module docstring)."""
    cover = meta.get("coverage") or {}
    listed = "".join(
        f"<li><b>{escape(runs.label(r['name']))}</b>: {escape(str(r['path']))}{_answered(cover.get(r['name']))}</li>"
        for r in meta["runs"]
    )
    drawn = sum(f.status == "ok" for f in figures)
    keys = ("kuiper_order", "prices", "prices_as_of", "embedder", "pages")
    info = " · ".join(escape(f"{k.replace('_', ' ')} {meta[k]}") for k in keys if meta.get(k))
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>MADQA figures</title>",
        f"<style>{STYLE}</style></head><body><h1>MADQA: the paper's tables and figures</h1>",
        f"<p>{escape(str(meta.get('split') or 'gold file'))} split · {meta['n_gold']} questions · {drawn} of "
        f"{len(figures)} figures drawn · written {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        f"<p><small>{info}</small></p><ul>{listed}</ul>",
    ]
    parts += [f"<p class='coverage'>Coverage: {escape(w)}.</p>" for w in warnings(cover)]
    notes = {f.id: denominator(f, runs) for f in figures}
    parts += [section(f, runs, uris.get(f.id), notes[f.id]) for f in figures]
    parts.append("<p><small>Every number is in figures.json next to this page.</small></p></body></html>")
    return "".join(parts)


def write_figures(out: Path, figures: Sequence[Figure], runs: PaperRuns, meta: Mapping[str, Any]) -> dict[str, Any]:
    """Draw every figure that is not skipped, write its PNG, PDF and SVG, ``figures.json`` and ``index.html``
    under ``out``; ``meta`` gains each run's colour (the same in every figure) and coverage."""
    out.mkdir(parents=True, exist_ok=True)
    style = Runs(runs.names, runs.human)
    meta = {**meta, "colors": style.colors, "coverage": coverage(runs)}
    uris: dict[str, str] = {}
    files: dict[str, list[str]] = {}
    for fig in figures:
        if fig.status != "ok":
            continue
        drawn = draw(fig, style)
        for fmt in FORMATS:
            files.setdefault(fig.id, []).append(f"{fig.id}.{fmt}")
            (out / files[fig.id][-1]).write_bytes(drawn[fmt])
        fig.file = files[fig.id][0]
        uris[fig.id] = "data:image/png;base64," + base64.b64encode(drawn["png"]).decode("ascii")
    notes = {f.id: denominator(f, runs) for f in figures}
    doc = figures_json(figures, meta, files, notes)
    text = json.dumps(doc, ensure_ascii=False, allow_nan=False, indent=1)
    (out / "figures.json").write_text(text + "\n", encoding="utf-8")
    (out / "index.html").write_text(page_html(figures, runs, uris, meta), encoding="utf-8")
    return doc
