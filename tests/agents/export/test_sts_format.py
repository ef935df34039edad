"""The trace converter and its redaction on hand-made lines: each rule of :mod:`madqa.agents.export.redact`, the
shapes of :mod:`madqa.agents.export.sts` no agent run of the CLI tests has (a step of several tool calls with an
error and images, a line without trajectory or times), and :mod:`madqa.agents.export.check`'s findings."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from helpers.paths import ROOT

from madqa.agents.export.check import session_problems
from madqa.agents.export.redact import Redactor
from madqa.agents.export.sts import arguments_json, session_records

VALIDATOR = jsonschema.Draft202012Validator(
    json.loads((ROOT / "agents" / "export" / "sts_schema.json").read_text(encoding="utf-8"))
)
ENV = {
    "OPENAI_API_KEY": "plain-looking-value",
    "HF_TOKEN": "short",
    "MADQA_HOME": "/srv/data/madqa",
    "PATH": "/usr/bin",
}


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(ENV, home="/home/alice")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("said plain-looking-value twice", "said [REDACTED:OPENAI_API_KEY] twice"),
        ("key sk-proj-abcDEF1234567890xyz!", "key [REDACTED:key]!"),
        ("hf_abcdefghijklmnopqrstu and AKIAABCDEFGHIJKLMNOP", "[REDACTED:key] and [REDACTED:key]"),
        ("Authorization: Bearer abc.def-ghi_jkl123", "Authorization: Bearer [REDACTED:key]"),
        ('{"api_key": "hunter22"}', '{"api_key": "[REDACTED:key]"}'),
        ("id Zx81kLmN0pQrStUvWx12YzAbCdEfGh34", "id [REDACTED:key]"),
        ("/srv/data/madqa/sample/pdfs/a.pdf", "$MADQA_HOME/sample/pdfs/a.pdf"),
        ("cat /home/alice/notes/todo.txt", "cat ~/notes/todo.txt"),
        ("open('/tmp/pytest-of-bob/x1/f.jsonl')", "open('<local>/f.jsonl')"),
        ("owner /Users/bob", "owner <local>"),
    ],
)
def test_each_redaction_rule(redactor: Redactor, text: str, expected: str) -> None:
    assert redactor.text(text) == expected


def test_what_redaction_keeps(redactor: Redactor) -> None:
    kept = [
        "revision 242f4a1eeb867daf4ac3f44026a5df4a68908a3d",  # a commit id: lower-case hex
        "northgate_invoice_nds_1041.pdf, page 1",
        "short",  # HF_TOKEN's value is too short to replace without blanking ordinary words
        "ls /usr/bin | head",
        "MADQA_HOME_IS_NOT_A_SECRET_NAME_BUT_LONG_123",  # upper case and digits, no lower case
    ]
    assert [redactor.text(t) for t in kept] == kept
    assert redactor.value({"/home/alice/k": ["sk-proj-abcDEF1234567890xyz", 3, None]}) == {
        "~/k": ["[REDACTED:key]", 3, None]
    }


def test_arguments_are_a_json_object_string() -> None:
    assert json.loads(arguments_json("python_interpreter", "x = 1")) == {"code": "x = 1"}
    assert json.loads(arguments_json("bash", '{"command": "ls"}')) == {"command": "ls"}
    assert json.loads(arguments_json("t", "not json")) == {"input": "not json"}
    assert json.loads(arguments_json("t", [1, 2])) == {"input": [1, 2]}


def _line(**fields):
    return {"id": "q1", "question": "What?", "agent": "toy", "model": "m", "answer": [], "citations": [], **fields}


def test_a_step_with_two_calls_an_error_and_images(redactor: Redactor) -> None:
    step = {
        "step": 1,
        "model_output": "two at once",
        "tool_calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {"y": 2}}],
        "observation": "both outputs",
        "images": 2,
        "error": "ToolError: b failed",
        "duration_s": 1.5,
    }
    records = session_records(_line(trajectory=[step], elapsed_s=2.0), version="9", start_ms=1000, redactor=redactor)
    for record in records:
        VALIDATOR.validate(record)
    messages = [r["message"] for r in records[1:]]
    first, second = messages[3], messages[4]
    assert messages[2]["timestamp"] == 1000 and first["timestamp"] == second["timestamp"] == 2500
    assert first["toolCallId"] == "call-1-1" and second["toolCallId"] == "call-1-2"
    assert (
        first["content"].startswith("both outputs\nError: ToolError: b failed")
        and "2 page image(s)" in first["content"]
    )
    assert second["content"] == "(this call's output is in the result of call-1-1)"
    assert messages[-1]["timestamp"] == 3000 and records[0]["madqa"]["timestamps"] == "derived"


def test_a_failed_line_without_trajectory_or_times(redactor: Redactor) -> None:
    line = _line(error="provider exploded: sk-proj-abcDEF1234567890xyz", error_kind="provider", trajectory=[])
    records = session_records(line, version="9", redactor=redactor)
    for record in records:
        VALIDATOR.validate(record)
    assert [r["message"]["role"] for r in records[1:]] == ["system", "user", "assistant"]
    assert all("timestamp" not in r["message"] for r in records[1:]) and records[0]["madqa"]["timestamps"] == "none"
    assert (
        records[-1]["message"]["content"]
        == "No answer.\nCitations: none\nError (provider): provider exploded: [REDACTED:key]"
    )
    with pytest.raises(ValueError, match="needs 'id' and 'question'"):
        session_records({"id": "q1"}, version="9")


def test_the_checks_before_publishing(redactor: Redactor, tmp_path: Path) -> None:
    good = session_records(_line(trajectory=[]), version="9", redactor=redactor)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in good), encoding="utf-8")
    assert session_problems(path, redactor) == []
    bad = [
        {"type": "message", "message": {"role": "user", "content": "x"}},
        {"type": "message", "message": {"role": "robot", "content": "/home/alice/x"}},
        {"type": "message", "message": {"role": "tool", "content": "", "toolCallId": "c9"}},
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": "",
                "toolCalls": [{"id": "c1", "function": {"name": "f", "arguments": {}}}],
            },
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in bad), encoding="utf-8")
    assert [p.split(": ", 1)[1] for p in session_problems(path, redactor)] == [
        "the first line must be the session header ({'type': 'session', ...})",
        "role 'robot' is not one of user, assistant, system, tool",
        "holds what looks like a secret or a local path (~/x); export it again",
        "tool result for 'c9', which no earlier tool call made",
        "tool call c1: 'arguments' is not a JSON string",
    ]
