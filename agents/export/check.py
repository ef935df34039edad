"""The checks a session file passes before it is published: the format's required fields and what is left of secrets.

:func:`session_problems` reads one STS-Format file and names, by line, what the Hub's trace viewer could not use (a
first line that is not a ``session`` header with ``harness`` and ``id``; a message without ``role`` or ``content``;
``toolCalls`` whose ``arguments`` are not a JSON string; a tool result whose ``toolCallId`` answers no earlier call)
and any string that :class:`~madqa.agents.export.redact.Redactor` would still change (a key or local path written
by hand, or by an export without redaction). No JSON Schema library is needed; the tests check the same files
against ``sts_schema.json`` too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from madqa.agents.export.redact import Redactor

ROLES = ("user", "assistant", "system", "tool")


def session_problems(path: Path, redactor: Redactor | None = None) -> list[str]:
    """What is wrong with the session file ``path``, one ``FILE line N: …`` each (empty: fit to publish)."""
    redactor = redactor or Redactor()
    try:
        rows = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{path}: cannot read it as UTF-8 text ({exc})"]
    problems: list[str] = []
    calls: set[str] = set()
    for number, raw in enumerate(rows, 1):
        where = f"{path} line {number}"
        try:
            record = json.loads(raw)
        except ValueError as exc:
            problems.append(f"{where}: invalid JSON ({exc})")
            continue
        found = _header_problems(record) if number == 1 else _message_problems(record, calls)
        problems += [f"{where}: {p}" for p in found]
        leaked = next(_changed_strings(record, redactor), None)
        if leaked is not None:
            problems.append(f"{where}: holds what looks like a secret or a local path ({leaked}); export it again")
    if not rows:
        problems.append(f"{path}: empty")
    return problems


def _header_problems(record: Any) -> list[str]:
    if not isinstance(record, dict) or record.get("type") != "session":
        return ["the first line must be the session header ({'type': 'session', ...})"]
    return [f"session header without {k!r}" for k in ("harness", "id") if not isinstance(record.get(k), str)]


def _message_problems(record: Any, calls: set[str]) -> list[str]:
    if not isinstance(record, dict) or record.get("type") != "message" or not isinstance(record.get("message"), dict):
        return ["not a message line ({'type': 'message', 'message': {...}})"]
    message = record["message"]
    problems = []
    if message.get("role") not in ROLES:
        problems.append(f"role {message.get('role')!r} is not one of {', '.join(ROLES)}")
    if not isinstance(message.get("content"), str):
        problems.append("message without a 'content' string")
    for call in message.get("toolCalls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(call.get("id"), str) or "name" not in function:
            problems.append("a tool call without 'id' or 'function.name'")
            continue
        calls.add(call["id"])
        try:
            json.loads(function.get("arguments"))
        except (TypeError, ValueError):
            problems.append(f"tool call {call['id']}: 'arguments' is not a JSON string")
    answered = message.get("toolCallId")
    if message.get("role") == "tool" and answered not in calls:
        problems.append(f"tool result for {answered!r}, which no earlier tool call made")
    stamp = message.get("timestamp")
    if stamp is not None and (not isinstance(stamp, int) or stamp < 0):
        problems.append("'timestamp' must be epoch milliseconds (a non-negative integer)")
    return problems


def _changed_strings(value: Any, redactor: Redactor) -> Iterator[str]:
    """The strings of ``value`` (cut to 60 characters) that redaction would change."""
    if isinstance(value, str):
        if redactor.text(value) != value:
            yield redactor.text(value)[:60]
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _changed_strings(key, redactor)
            yield from _changed_strings(item, redactor)
    elif isinstance(value, list):
        for item in value:
            yield from _changed_strings(item, redactor)
