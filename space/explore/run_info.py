"""What a run recorded about itself, read from its results lines: settings, dataset, and a person's page views.

A results line of ``madqa run`` carries ``agent``, ``model``, ``dataset`` (``{name, revision}``) and ``config``
(the run's settings: ``max_steps`` = T, ``top_k``, ``oracle``, ``observe``, ``model_options``, …; see
:mod:`madqa.agents.harness.record`). A line of ``madqa human`` (:mod:`madqa.space.human.session`) carries instead
``annotator``, ``mode`` (``search`` or ``oracle``), ``batch``, a study ``config`` (seed, batch size, k) and
``page_views``: every page the person opened, with its time and how it was reached. Lines of other harnesses may
have none of these; what is absent is left out, never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from madqa.metric.schema import Reference

from .runs import RunData, Workspace

#: Settings shown first and under a readable name; every other recorded setting follows under its own name.
LABELS = {
    "agent": "agent",
    "model": "model",
    "dataset": "dataset",
    "oracle": "oracle",
    "top_k": "top-k",
    "max_steps": "max steps T",
    "observe": "observe",
    "search_backend": "search backend",
    "retriever": "retriever",
    "split": "split",
    "annotator": "annotator",
    "mode": "mode",
    "batch": "batch",
    "k": "k",
    "seed": "seed",
}
#: Line fields that describe the run (the same in every line of a run), beside ``config``.
LINE_FIELDS = ("agent", "model", "annotator", "mode", "batch", "split", "system_type")


def _records(run: RunData) -> list[Mapping[str, Any]]:
    return [r for r in run.records.values() if isinstance(r, Mapping)]


def dataset_label(value: Any) -> str | None:
    """A line's ``dataset`` as text: ``name@revision``, ``name``, or ``None`` when it names nothing.

    >>> dataset_label({"name": "sample", "revision": None}), dataset_label("x"), dataset_label({"name": None})
    ('sample', 'x', None)
    """
    if isinstance(value, Mapping):
        name, revision = value.get("name"), value.get("revision")
        if not name:
            return None
        return f"{name}@{revision}" if revision else str(name)
    return str(value) if isinstance(value, str) and value else None


def dataset_names(ws: Workspace) -> list[str]:
    """The datasets the runs' lines name (first seen first); the workspace's spec when no line names one."""
    seen: list[str] = []
    for run in ws.runs:
        for record in _records(run):
            label = dataset_label(record.get("dataset"))
            if label and label not in seen:
                seen.append(label)
    if not seen and ws.dataset:
        seen.append(str(ws.dataset))
    return seen


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, Mapping):  # model options: name=value pairs, readable where a dict's repr is not
        return ", ".join(f"{k}={_text(v)}" for k, v in sorted(value.items())) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value) or "none"
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, (str, int)) else str(value)


def run_settings(run: RunData) -> list[tuple[str, str]]:
    """``(label, value)`` pairs of the run's settings, from its first matched line.

    A setting whose value differs between lines (a resumed run with other settings) is shown as ``varies (…)``
    with its distinct values. ``None`` values (defaults picked by model) are shown as ``auto``.
    """
    records = _records(run)
    if not records:
        return []
    values: dict[str, list[str]] = {}

    def add(key: str, value: Any) -> None:
        text = "auto" if value is None else _text(value)
        seen = values.setdefault(key, [])
        if text not in seen:
            seen.append(text)

    for record in records:
        for key in LINE_FIELDS:
            if key in record and key != "system_type":
                add(key, record[key])
        label = dataset_label(record.get("dataset"))
        if label:
            add("dataset", label)
        config = record.get("config")
        for key, value in config.items() if isinstance(config, Mapping) else ():
            if key in ("agent", "model", "dataset") and key in values:
                continue  # already shown from the line itself
            add(str(key), value)
    order = [k for k in LABELS if k in values] + [k for k in values if k not in LABELS]
    out = []
    for key in order:
        shown = values[key]
        out.append((LABELS.get(key, key), shown[0] if len(shown) == 1 else f"varies ({', '.join(shown)})"))
    return out


def is_human(record: Mapping[str, Any] | None) -> bool:
    """Whether a line is a person's (``madqa human``, the Space's practice tab)."""
    return isinstance(record, Mapping) and (record.get("system_type") == "human" or record.get("agent") == "human")


def _seconds(start: Any, moment: Any) -> float | None:
    try:
        a = datetime.fromisoformat(str(start).replace("Z", "+00:00"))
        b = datetime.fromisoformat(str(moment).replace("Z", "+00:00"))
    except ValueError:
        return None
    return round((b - a).total_seconds(), 1)


def page_views(ref: Reference, record: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    """A person's page views in order: document, page, how reached, seconds since the question was shown, gold.

    ``None`` when the line records no ``page_views`` field (an agent's line, another harness).
    """
    if not isinstance(record, Mapping) or not isinstance(record.get("page_views"), Sequence):
        return None
    gold = {(e.document, e.page) for e in ref.evidence}
    gold_docs = {e.document for e in ref.evidence}
    out = []
    for view in record["page_views"]:
        if not isinstance(view, Mapping):
            continue
        document, page = str(view.get("document", "")), view.get("page")
        out.append(
            {
                "document": document,
                "page": page,
                "via": view.get("via"),
                "at_s": _seconds(record.get("started_at"), view.get("timestamp")),
                "gold": (document, page) in gold,
                "gold_doc": document in gold_docs,
            }
        )
    return out
