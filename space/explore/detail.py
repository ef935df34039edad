"""One question in one run as plain data: the steps in order, the final answer and citations against the gold.

Steps come from the line's ``trajectory`` (one entry per model call, as :mod:`madqa.agents.harness.record` writes it):
a ``search_documents`` (or ``search``) call is paired with the next ``search_history`` entry (its query and result
pages), a code call (the REPL agent's ``python_interpreter``; the shell agent's ``bash``, its command line) shows its
code and output, and each step carries its model tokens.
A line without a trajectory (other harnesses) gets one step per ``search_history`` entry. Pages are flagged
``gold`` when they are gold evidence pages and ``gold_doc`` when only their document is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from madqa.metric.schema import Reference

from .runs import RunData, Workspace
from .table import outcome

#: Longest model output / observation / code kept per step in a view (the line keeps them whole).
MAX_TEXT_CHARS = 3000
SEARCH_TOOLS = ("search_documents", "search")
CODE_TOOLS = ("python_interpreter", "bash")


def _cut(value: Any, limit: int = MAX_TEXT_CHARS) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[:limit] + f" […] ({len(text)} characters)"


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def page_flags(ref: Reference, document: Any, page: Any) -> dict[str, Any]:
    """A page reference with its gold flags (``page`` may be ``None`` for a whole-document citation)."""
    doc = str(document) if document is not None else ""
    number = _int(page)
    gold_pages = {(c.document, c.page) for c in ref.evidence}
    gold_docs = {c.document for c in ref.evidence}
    return {"document": doc, "page": number, "gold": (doc, number) in gold_pages, "gold_doc": doc in gold_docs}


def _search(ref: Reference, entry: Any) -> dict[str, Any]:
    entry = entry if isinstance(entry, Mapping) else {"query": entry}
    results = entry.get("results") if isinstance(entry.get("results"), list) else []
    pages = [
        page_flags(ref, r.get("document") or r.get("file"), r.get("page")) for r in results if isinstance(r, Mapping)
    ]
    return {
        "query": _cut(entry.get("query"), 1000),
        "results": pages,
        "count": entry.get("count"),
        "error": entry.get("error"),
    }


def _code_of(arguments: Any) -> str:
    if isinstance(arguments, Mapping):
        arguments = arguments.get("code", arguments.get("command", arguments))
    return _cut(arguments if isinstance(arguments, str) else str(arguments))


def steps_of(ref: Reference, record: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The steps of one line (see the module docstring); each has ``kind`` ``model``/``search``."""
    if not record:
        return []
    history = record.get("search_history") if isinstance(record.get("search_history"), list) else []
    searches = [_search(ref, h) for h in history]
    trajectory = record.get("trajectory") if isinstance(record.get("trajectory"), list) else []
    if not trajectory:
        return [{"kind": "search", "step": i + 1, **s} for i, s in enumerate(searches)]
    steps, used = [], 0
    for n, entry in enumerate(trajectory, 1):
        if not isinstance(entry, Mapping):
            continue
        step: dict[str, Any] = {
            "kind": "model",
            "step": entry.get("step", n),
            "thought": _cut(entry.get("model_output")),
            "input_tokens": entry.get("input_tokens"),
            "output_tokens": entry.get("output_tokens"),
            "duration_s": entry.get("duration_s"),
            "error": entry.get("error"),
            "final": bool(entry.get("final")),
            "searches": [],
            "code": [],
            "calls": [],
            "observation": _cut(entry.get("observation")),
        }
        for call in entry.get("tool_calls") or []:
            if not isinstance(call, Mapping):
                continue
            name = str(call.get("name"))
            if name in SEARCH_TOOLS and used < len(searches):
                step["searches"].append(searches[used])
                used += 1
            elif name in CODE_TOOLS:
                step["code"].append(_code_of(call.get("arguments")))
            else:
                step["calls"].append({"name": name, "arguments": _cut(call.get("arguments"), 1000)})
        steps.append(step)
    for i, extra in enumerate(searches[used:], used + 1):  # searches the trajectory does not show
        steps.append({"kind": "search", "step": f"s{i}", **extra})
    return steps


def question_view(ws: Workspace, qid: str, run: RunData) -> dict[str, Any]:
    """Everything the trajectory panel shows for ``qid`` in ``run`` (gold included: labelled splits only)."""
    ref = ws.refs[qid]
    item = run.items[qid]
    record = run.records.get(qid)
    answer = record.get("answer") if record else None
    answer = [answer] if isinstance(answer, str) else [str(a) for a in answer or []]
    citations = [
        page_flags(ref, c.get("document") or c.get("file"), c.get("page"))
        for c in (record or {}).get("citations") or []
        if isinstance(c, Mapping)
    ]
    usage = (record or {}).get("usage")
    return {
        "run": run.name,
        "id": qid,
        "question": ref.question,
        "hop": ref.hop_type,
        "domain": ref.domain,
        "category": ref.document_category,
        "gold_answers": [list(v) for v in ref.answer_variants],
        "evidence": [page_flags(ref, c.document, c.page) for c in ref.evidence],
        "answer": answer,
        "citations": citations,
        "outcome": outcome(item),
        "score": item.score,
        "anls": item.anls,
        "page_f1": item.page_f1,
        "doc_f1": item.doc_f1,
        "steps_count": item.steps,
        "error_class": item.error,
        "run_error": (record or {}).get("error"),
        "final_state": (record or {}).get("final_state"),
        "usage": usage if isinstance(usage, Mapping) else None,
        "elapsed_s": (record or {}).get("elapsed_s"),
        "steps": steps_of(ref, record),
    }
