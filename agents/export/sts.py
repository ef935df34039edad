"""A results line as one session of the Hub's Session Trace Simple Format (STS-Format), for the Hub's trace viewer.

The format (huggingface/hub-docs ``docs/hub/session-traces-format.md``; the schema kept beside this module,
``sts_schema.json``, names the commit) is a JSONL file: a ``session`` header line (``harness``, ``id``), then one
``message`` line per message (``role``, ``content``, optional ``toolCalls`` with JSON-string ``arguments``,
``toolCallId`` on a tool result, ``timestamp`` in epoch milliseconds, ``model``). :func:`session_records` is pure:
one results line (of any agent, a person's run, an imported inspect log) in, the session's records out.

How a line becomes messages:

* a ``system`` message states the agent, the dataset and split, and the run's settings (the agents' prompts are not
  in the line; they are the prompt YAML of the agent at the harness version in the header);
* a ``user`` message holds the question;
* searches the harness ran before the model (``rag``, ``mdoc``: a ``search_history`` and no search among the model's
  tool calls) are an ``assistant`` message calling ``retrieve`` (no ``model``: the harness made the call) and one
  ``tool`` result per search listing its pages;
* each ``trajectory`` step (one model call) is an ``assistant`` message (its output, its tool calls; a code agent's
  code is a ``python_interpreter`` call with ``{"code": …}``) and one ``tool`` message per call: the step's
  observation goes to its first call (smolagents joins the observations of one step's calls), a search whose
  observation the line does not keep (file search) gets its results from ``search_history``, and a step's error is
  appended to its first result (a step with an error and no call gets a ``system`` message);
* a person's run (``system_type: "human"``) has no trajectory: its searches, refused searches and page views, in
  time order, are the person's ``search`` and ``view_page`` calls;
* an ``assistant`` message ends the session with the line's answer and citations (or its error).

Timestamps: a person's run records wall-clock times (``started_at``, each search and page view, ``ended_at``); they
are used as recorded (header ``madqa.timestamps: "recorded"``). An agent's line records only durations (``elapsed_s``
and each step's ``duration_s``); given ``start_ms`` (``madqa export traces`` passes the results file's modification
time less the line's ``elapsed_s``), each model call is placed at the end of the steps before it and its results at
its end, the answer at ``start + elapsed_s`` (``"derived"``); without ``start_ms`` messages have no timestamp
(``"none"``). The score against the gold, when given, is the header's ``madqa.score``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from madqa.agents.export.redact import Redactor

#: The ``harness`` id of every session MADQA writes.
HARNESS = "madqa"
#: The schema of the format, beside this module.
SCHEMA_FILE = "sts_schema.json"
#: Longest session name (the question, cut).
MAX_NAME_CHARS = 120
#: Fields of a line kept in the header's ``madqa`` metadata (the rest is in the messages or agent-specific).
HEADER_FIELDS = (
    "agent",
    "model",
    "dataset",
    "usage",
    "elapsed_s",
    "steps",
    "attempts",
    "final_state",
    "error",
    "error_kind",
    "answer",
    "citations",
    "system_type",
    "annotator",
    "mode",
    "batch",
)


def session_id(line: Mapping[str, Any]) -> str:
    """A session id unique to the question and the run's settings: ``madqa-<question id>-<12 hex digits>``."""
    key = [line.get(k) for k in ("id", "agent", "model", "config", "dataset", "annotator")]
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:12]
    return f"madqa-{line.get('id')}-{digest}"


def session_records(
    line: Mapping[str, Any],
    *,
    version: str,
    score: Mapping[str, Any] | None = None,
    start_ms: int | None = None,
    redactor: Redactor | None = None,
) -> list[dict[str, Any]]:
    """The STS records (header first, then messages) of one results line.

    Args:
        line: a results line (``madqa run``, ``madqa human``, ``madqa import-inspect``).
        version: the harness version written in the header.
        score: the line's item score (``score``, ``correct``, ``anls``, ``page_f1``, ``doc_f1``, …), or ``None``.
        start_ms: when the question started, epoch milliseconds, for an agent's line (see the module docstring).
        redactor: what removes secrets and local paths (default: one for this process's environment).

    Raises:
        ValueError: the line has no ``id`` or ``question``.
    """
    if line.get("id") is None or not isinstance(line.get("question"), str):
        raise ValueError("not a results line: it needs 'id' and 'question'")
    line = (redactor or Redactor()).value(dict(line))
    human = line.get("system_type") == "human" or line.get("agent") == "human"
    timeline = _Timeline.of(line, start_ms, human)
    header: dict[str, Any] = {
        "type": "session",
        "harness": HARNESS,
        "id": session_id(line),
        "name": _cut(line["question"], MAX_NAME_CHARS),
        "harnessVersion": version,
        "madqa": {
            "question_id": str(line["id"]),
            "split": (line.get("config") or {}).get("split") or line.get("split"),
            **{k: line[k] for k in HEADER_FIELDS if k in line},
            "config": line.get("config") or {},
            "score": dict(score) if score is not None else None,
            "timestamps": timeline.kind,
        },
    }
    messages = _Messages(timeline, None if human else str(line.get("model") or "") or None)
    messages.add("system", _system_text(line), at=timeline.start)
    messages.add("user", line["question"], at=timeline.start)
    if human:
        _human_actions(line, messages)
    else:
        _agent_steps(line, messages)
    messages.add("assistant", _answer_text(line), at=timeline.end, model=str(line.get("model") or "") or None)
    return [header, *({"type": "message", "message": m} for m in messages.out)]


class _Timeline:
    """Where messages go in time: ``kind`` is ``recorded``, ``derived`` or ``none`` (all times ``None``)."""

    def __init__(self, kind: str, start: int | None, end: int | None) -> None:
        self.kind, self.start, self.end, self.cursor = kind, start, end, start

    @classmethod
    def of(cls, line: Mapping[str, Any], start_ms: int | None, human: bool) -> _Timeline:
        started, ended = _epoch_ms(line.get("started_at")), _epoch_ms(line.get("ended_at"))
        if human and started is not None:
            return cls("recorded", started, ended if ended is not None else started)
        if start_ms is None:
            return cls("none", None, None)
        elapsed = line.get("elapsed_s")
        end = start_ms + round(1000 * float(elapsed)) if isinstance(elapsed, (int, float)) else start_ms
        return cls("derived", start_ms, end)

    def advance(self, seconds: Any) -> None:
        if self.cursor is not None and isinstance(seconds, (int, float)) and seconds > 0:
            self.cursor += round(1000 * seconds)


class _Messages:
    """The message list being built, with the ids of the tool calls made so far (a result answers one of them)."""

    def __init__(self, timeline: _Timeline, model: str | None) -> None:
        self.timeline, self.model = timeline, model
        self.out: list[dict[str, Any]] = []
        self.call_ids: set[str] = set()

    def add(self, role: str, content: str, *, at: int | None = None, **fields: Any) -> None:
        message: dict[str, Any] = {"role": role, "content": content}
        for key, value in fields.items():
            if value is not None:
                message[key] = value
        if at is not None:  # never before the message it follows (a step may have outrun elapsed_s's rounding)
            previous = next((m["timestamp"] for m in reversed(self.out) if "timestamp" in m), at)
            message["timestamp"] = max(int(at), int(previous))
        self.out.append(message)

    def call(self, content: str, calls: Sequence[tuple[str, str, Any]], *, at: int | None, model: str | None) -> None:
        """An assistant message making ``calls`` (``(id, name, arguments)``)."""
        tool_calls = [{"id": i, "function": {"name": n, "arguments": arguments_json(n, a)}} for i, n, a in calls]
        self.call_ids.update(i for i, _, _ in calls)
        self.add("assistant", content, at=at, toolCalls=tool_calls or None, model=model)

    def result(self, call_id: str, content: str, *, at: int | None) -> None:
        if call_id not in self.call_ids:  # a guard on this module: the viewer stitches a result to its call
            raise ValueError(f"tool result for unknown call {call_id!r}")
        self.add("tool", content, at=at, toolCallId=call_id)


def arguments_json(name: str, arguments: Any) -> str:
    """A tool call's arguments as the JSON string the format wants (an object; a code agent's code is ``code``).

    >>> arguments_json("python_interpreter", "print(1)")
    '{"code": "print(1)"}'
    >>> arguments_json("search_documents", {"query": "water"})
    '{"query": "water"}'
    """
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        arguments = (
            parsed if isinstance(parsed, dict) else {"code" if name == "python_interpreter" else "input": arguments}
        )
    elif not isinstance(arguments, Mapping):
        arguments = {"input": arguments}
    return json.dumps(arguments, ensure_ascii=False, default=str)


def _agent_steps(line: Mapping[str, Any], messages: _Messages) -> None:
    timeline = messages.timeline
    steps = [s for s in line.get("trajectory") or [] if isinstance(s, Mapping)]
    searches = [h for h in line.get("search_history") or [] if isinstance(h, Mapping)]
    model_searches = any(_query_of(c) is not None for s in steps for c in s.get("tool_calls") or [])
    if searches and not model_searches:  # the harness retrieved before the model call (rag, mdoc)
        ids = [f"retrieve-{n}" for n in range(1, len(searches) + 1)]
        calls = [(i, "retrieve", _search_arguments(h)) for i, h in zip(ids, searches, strict=True)]
        messages.call("", calls, at=timeline.cursor, model=None)
        for call_id, entry in zip(ids, searches, strict=True):
            messages.result(call_id, search_text(entry), at=timeline.cursor)
        searches = []
    for number, step in enumerate(steps, 1):
        at = timeline.cursor
        timeline.advance(step.get("duration_s"))
        tag = step.get("step", number)
        calls = [
            (f"call-{tag}-{n}", str(c.get("name") or "tool"), c.get("arguments"))
            for n, c in enumerate(step.get("tool_calls") or [], 1)
            if isinstance(c, Mapping)
        ]
        messages.call(str(step.get("model_output") or ""), calls, at=at, model=messages.model)
        error = step.get("error")
        for n, (call_id, _, arguments) in enumerate(calls):
            query = _query_of({"arguments": arguments})
            if (
                step.get("observation") is None
                and query is not None
                and searches
                and searches[0].get("query") == query
            ):
                content = search_text(searches.pop(0))
            elif n == 0:
                content = str(step.get("observation") or "")
            else:
                content = f"(this call's output is in the result of {calls[0][0]})"
            if n == 0 and error:
                content = f"{content}\nError: {error}".strip()
            if n == 0 and step.get("images"):
                content += f"\n[{step['images']} page image(s) shown to the model; not kept in the trace]"
            messages.result(call_id, content, at=timeline.cursor)
        if error and not calls:
            messages.add("system", f"step {tag} failed: {error}", at=timeline.cursor)


def _human_actions(line: Mapping[str, Any], messages: _Messages) -> None:
    """A person's searches, refused searches and page views, in time order, as their tool calls."""
    events: list[tuple[int, int, str, Mapping[str, Any]]] = []
    for kind in ("search_history", "refused_searches", "page_views"):
        for entry in line.get(kind) or []:
            if isinstance(entry, Mapping):
                events.append((_epoch_ms(entry.get("timestamp")) or 0, len(events), kind, entry))
    model = str(line.get("model") or "") or None
    for number, (_, _, kind, entry) in enumerate(sorted(events), 1):
        at = _epoch_ms(entry.get("timestamp"))
        call_id = f"action-{number}"
        if kind == "page_views":
            arguments = {k: entry.get(k) for k in ("document", "page", "via")}
            messages.call("", [(call_id, "view_page", arguments)], at=at, model=model)
            messages.result(call_id, f"shown: {entry.get('document')}, page {entry.get('page')}", at=at)
        else:
            messages.call("", [(call_id, "search", _search_arguments(entry))], at=at, model=model)
            text = search_text(entry)
            messages.result(call_id, f"refused by the engine: {text}" if kind == "refused_searches" else text, at=at)


def search_text(entry: Mapping[str, Any]) -> str:
    """One search's result as the trace shows it: the count, the pages best first, the error.

    >>> search_text({"query": "water", "count": 1, "results": [{"document": "a.pdf", "page": 2}], "error": None})
    "1 page(s) for 'water':\\n1. a.pdf, page 2"
    """
    results = [r for r in entry.get("results") or [] if isinstance(r, Mapping)]
    count = entry.get("count", len(results))
    lines = [f"{count} page(s) for {entry.get('query')!r}:"]
    lines += [f"{n}. {r.get('document')}, page {r.get('page')}" for n, r in enumerate(results, 1)]
    if entry.get("error"):
        lines.append(f"Error: {entry['error']}")
    return "\n".join(lines)


def _search_arguments(entry: Mapping[str, Any]) -> dict[str, Any]:
    arguments = {"query": entry.get("query")}
    if entry.get("retriever"):
        arguments["retriever"] = entry["retriever"]
    return arguments


def _query_of(call: Mapping[str, Any]) -> str | None:
    arguments = call.get("arguments")
    query = arguments.get("query") if isinstance(arguments, Mapping) else None
    return query if isinstance(query, str) else None


def _system_text(line: Mapping[str, Any]) -> str:
    dataset = line.get("dataset") or {}
    config = line.get("config") or {}
    split = config.get("split") or line.get("split") or "?"
    who = "a person (human baseline)" if line.get("system_type") == "human" else f"the {line.get('agent')} agent"
    where = f"{dataset.get('name') or '?'} {dataset.get('revision') or ''}".strip()
    settings = json.dumps(config, ensure_ascii=False, sort_keys=True, default=str)
    return f"MADQA: {who} answers one question of the {where} dataset, split {split}. Settings: {settings}"


def _answer_text(line: Mapping[str, Any]) -> str:
    answer = [str(a) for a in line.get("answer") or []]
    cites = [
        f"{c.get('document')}, page {c.get('page')}" for c in line.get("citations") or [] if isinstance(c, Mapping)
    ]
    parts = [f"Answer: {'; '.join(answer)}" if answer else "No answer."]
    parts.append(f"Citations: {' | '.join(cites)}" if cites else "Citations: none")
    if line.get("error"):
        parts.append(f"Error ({line.get('error_kind') or 'unknown'}): {line['error']}")
    return "\n".join(parts)


def _epoch_ms(value: Any) -> int | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return round(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
