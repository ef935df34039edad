"""The results-line JSON Schema shipped in the package (``metric/results.schema.json``) says what the parser does.

The parser (``metric/inputs.py``) is the authority; the schema publishes it for submitters' own tools. Here: the
schema is valid, ships with the package, uses the parser's limits, accepts the documented example lines, and every
line it refuses is refused by the parser too, with a message naming the line and the field. (The lines
`madqa run` writes are validated against it in ``tests/project/test_docs_blocks.py``.)
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from helpers.paths import ROOT

from madqa.metric import schema as limits
from madqa.metric.inputs import parse_results_text
from madqa.metric.jsonl import InputError

SCHEMA_FILE = ROOT / "metric" / "results.schema.json"
SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
GOOD = {"id": "q1", "answer": ["$1.2M"], "citations": [{"document": "report.pdf", "page": 5}], "steps": 3}


def valid(line: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(line)


def test_the_schema_is_valid_and_shipped_with_the_metric() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'"madqa\.metric" = \[[^\]]*"\*\.json"', pyproject), "package-data must ship *.json of metric/"


def test_the_schema_uses_the_parsers_limits() -> None:
    props = SCHEMA["properties"]
    answer_list, answer_string = props["answer"]["oneOf"]
    assert props["id"]["maxLength"] == limits.MAX_ID_CHARS
    assert props["question"]["maxLength"] == limits.MAX_QUESTION_CHARS
    assert answer_list["maxItems"] == limits.MAX_ANSWER_ITEMS
    assert answer_list["items"]["maxLength"] == answer_string["maxLength"] == limits.MAX_ANSWER_STRING_CHARS
    assert props["citations"]["maxItems"] == limits.MAX_CITATIONS
    assert props["citations"]["items"]["properties"]["document"]["maxLength"] == limits.MAX_ID_CHARS
    for effort in ("steps", "iterations"):
        assert props[effort]["maximum"] == limits.MAX_EFFORT
    assert props["search_history"]["maxItems"] == limits.MAX_EFFORT


def documented_lines() -> list[dict[str, Any]]:
    """The example results lines of the README and the concepts page (```json blocks)."""
    lines = []
    for page in (ROOT / "README.md", ROOT / "docs" / "concepts.md"):
        for block in re.findall(r"^```json\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M):
            lines += [json.loads(x) for x in block.splitlines() if x.strip()]
    return lines


def test_the_documented_example_lines_are_valid_for_both() -> None:
    examples = documented_lines()
    assert len(examples) >= 2
    for line in [*examples, GOOD, {"question": "Who signed?", "answer": "Ann Lee", "iterations": 0}]:
        assert valid(line), line
        assert len(parse_results_text(json.dumps(line) + "\n", "r.jsonl")) == 1


BAD = [
    ("answer", {**GOOD, "answer": {"value": "x"}}),
    ("answer", {**GOOD, "answer": ["x" * (limits.MAX_ANSWER_STRING_CHARS + 1)]}),
    ("answer", {**GOOD, "answer": ["x"] * (limits.MAX_ANSWER_ITEMS + 1)}),
    ("citations", {**GOOD, "citations": {"document": "report.pdf", "page": 5}}),
    ("page", {**GOOD, "citations": [{"document": "report.pdf", "page": 0}]}),
    ("page", {**GOOD, "citations": [{"document": "report.pdf", "page": True}]}),
    ("document", {**GOOD, "citations": [{"page": 5}]}),
    ("document", {**GOOD, "citations": [{"document": "", "page": 5}]}),
    ("steps", {**GOOD, "steps": -1}),
    ("steps", {**GOOD, "steps": 2.5}),
    ("steps", {**GOOD, "steps": "3"}),
    ("steps", {**GOOD, "steps": limits.MAX_EFFORT + 1}),
    ("search_history", {**{k: v for k, v in GOOD.items() if k != "steps"}, "search_history": "q1 q2"}),
    ("id", {**GOOD, "id": ""}),
    ("id", {k: v for k, v in GOOD.items() if k != "id"}),
]


@pytest.mark.parametrize(("field", "line"), BAD, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD)])
def test_what_the_schema_refuses_the_parser_refuses_naming_line_and_field(field: str, line: dict[str, Any]) -> None:
    assert not valid(line)
    with pytest.raises(InputError) as refused:
        parse_results_text(json.dumps(GOOD) + "\n" + json.dumps(line) + "\n", "r.jsonl")
    message = str(refused.value)
    assert "line 2" in message, message
    assert field in message or (field == "id" and "neither 'id' nor 'question'" in message), message
