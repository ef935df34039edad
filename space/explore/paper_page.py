"""The figure set as files: one PNG per drawn figure, ``figures.json`` with every number, one self-contained page.

``index.html`` has no external reference at all: figures are PNG ``data:`` URIs, styles inline, no script; every
text from a results file is escaped. A skipped figure shows its reason in place of the image, and a run left out
of a drawn figure is named under it with why.
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
from .paper_figures import png_uri, table_cells

STYLE = (
    "body{font-family:sans-serif;margin:16px;max-width:1200px} table{border-collapse:collapse}"
    "td,th{border-bottom:1px solid #ddd;padding:2px 8px;font-size:13px;text-align:right}"
    "th:first-child,td:first-child{text-align:left} .skipped{color:#b3261e} img{max-width:100%}"
    "section{margin:18px 0;border-top:1px solid #ccc}"
)


def figures_json(figures: Sequence[Figure], meta: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON document: the run set (``meta``) and each figure's status, reason, file and numbers."""
    return {**plain(dict(meta)), "figures": {f.id: plain(f) for f in figures}}


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
            "<table class='cost'><tr><th>run</th><th>USD total</th><th>USD / question</th><th>input tokens"
            f"</th><th>output tokens</th><th>lines priced</th></tr>{rows}</table>"
        )
    return "".join(out)


def _usd(value: Any) -> str:
    return "–" if value is None else f"${value:.4f}"


def section(fig: Figure, runs: PaperRuns, uri: str | None) -> str:
    """One figure's section: title, image (or the reason it is skipped), left-out runs, extras."""
    parts = [
        f"<section id='fig-{escape(fig.id)}' data-status='{fig.status}'><h2>{escape(fig.paper)}: "
        f"{escape(fig.title)}</h2>"
    ]
    if fig.id == "table3":
        parts.append(_table_html(fig, runs))
    if fig.status == "skipped":
        parts.append(f"<p class='skipped'>Not drawn: {escape(fig.reason or '')}</p>")
    elif uri is not None:
        parts.append(f"<img alt='{escape(fig.title)}' src='{uri}'>")
    if fig.skipped_systems:
        items = "".join(f"<li>{escape(runs.label(n))}: {escape(why)}</li>" for n, why in fig.skipped_systems.items())
        parts.append(f"<p>Runs not in this figure:</p><ul class='left-out'>{items}</ul>")
    parts.append(_extras(fig) + "</section>")
    return "".join(parts)


def page_html(figures: Sequence[Figure], runs: PaperRuns, uris: Mapping[str, str], meta: Mapping[str, Any]) -> str:
    """The whole page (see the module docstring)."""
    listed = "".join(
        f"<li><b>{escape(runs.label(r['name']))}</b>: {escape(str(r['path']))}</li>" for r in meta["runs"]
    )
    drawn = sum(f.status == "ok" for f in figures)
    keys = ("kuiper_order", "prices", "embedder", "pages")
    info = " · ".join(escape(f"{k.replace('_', ' ')} {meta[k]}") for k in keys if meta.get(k))
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>MADQA figures</title>",
        f"<style>{STYLE}</style></head><body><h1>MADQA: the paper's tables and figures</h1>",
        f"<p>{escape(str(meta.get('split') or 'gold file'))} split · {meta['n_gold']} questions · {drawn} of "
        f"{len(figures)} figures drawn · written {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        f"<p><small>{info}</small></p><ul>{listed}</ul>",
    ]
    parts += [section(f, runs, uris.get(f.id)) for f in figures]
    parts.append("<p><small>Every number is in figures.json next to this page.</small></p></body></html>")
    return "".join(parts)


def write_figures(out: Path, figures: Sequence[Figure], runs: PaperRuns, meta: Mapping[str, Any]) -> dict[str, Any]:
    """Draw every figure that is not skipped, write its PNG, ``figures.json`` and ``index.html`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    uris: dict[str, str] = {}
    for fig in figures:
        if fig.status != "ok":
            continue
        uris[fig.id] = png_uri(fig, runs)
        fig.file = f"{fig.id}.png"
        (out / fig.file).write_bytes(base64.b64decode(uris[fig.id].split(",", 1)[1]))
    doc = figures_json(figures, meta)
    text = json.dumps(doc, ensure_ascii=False, allow_nan=False, indent=1)
    (out / "figures.json").write_text(text + "\n", encoding="utf-8")
    (out / "index.html").write_text(page_html(figures, runs, uris, meta), encoding="utf-8")
    return doc
