"""The structured final answer both agents end with: ``final_answer(answer=[…], citations=[{document, page}])``.

:func:`normalise_answer` validates and normalises it (strictly inside an agent's run, so that the model sees what to
fix; leniently when an answer is salvaged after the last step); :class:`FinalAnswerTool` is the smolagents tool of
the search agent (the code agent's worker defines a function of the same shape).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import smolagents.agent_types
import smolagents.agents
import smolagents.tools
from smolagents import Tool

from madqa.metric.schema import MAX_ANSWER_LINE_CHARS, MAX_ID_CHARS

#: Longest answer string and most answer strings / citations kept by the final-answer normalisation; within the
#: metric's MAX_ANSWER_STRING_CHARS, MAX_ANSWER_ITEMS and MAX_CITATIONS
#: (tests/agents/harness/test_runner_metric_contract.py).
MAX_ANSWER_ITEM_CHARS = 1000
MAX_LIST_ITEMS = 50
#: Most characters over all kept answer strings: the metric's per-line cap (it refuses a file over it).
MAX_ANSWER_TOTAL_CHARS = MAX_ANSWER_LINE_CHARS
#: Longest document name kept in a citation (the metric refuses a file with a longer one).
MAX_DOCUMENT_CHARS = MAX_ID_CHARS
#: A page with more significant digits is read from its first 20, as the metric reads it (int() of a long digit
#: string costs quadratic time, and refuses past 4,300 digits); it stays above any page: a wrong citation.
PAGE_DIGITS = 20


#: JSON values smolagents' output typing returns unchanged: only it looks for a torch tensor first.
_PLAIN_OUTPUTS = (dict, list, tuple, int, float, bool, type(None))
_smolagents_output_types = smolagents.agent_types.handle_agent_output_types


def plain_output_types(output: Any, output_type: str | None = None) -> Any:
    """smolagents' ``handle_agent_output_types`` without its torch import for a value it returns unchanged.

    Why: smolagents wraps a tool's output (and every run's final answer, untyped) by type; for any value that is not
    a string or an image it imports torch to ask whether it is a tensor. Our final answer is a dict, so each
    process's first answer cost 1-2 s and ~200 MiB of torch (issue 47). A dict, list or number is never a tensor
    and its type has no wrapper: it is returned as smolagents would return it, without the import.
    """
    if output_type not in smolagents.agent_types._AGENT_TYPE_MAPPING and isinstance(output, _PLAIN_OUTPUTS):
        return output
    return _smolagents_output_types(output, output_type)


def use_plain_output_types() -> None:
    """Make smolagents type outputs with :func:`plain_output_types`; idempotent.

    Called when an agent's final-answer tool is built (not at import: importing this module changes nothing), at
    the two places smolagents calls its typing from (a tool's output, the final answer step).
    """
    smolagents.tools.handle_agent_output_types = plain_output_types
    smolagents.agents.handle_agent_output_types = plain_output_types


class AnswerFormatError(ValueError):
    """A final answer that cannot be used; the message tells the model how to fix it."""


def normalise_answer(answer: Any, citations: Any, *, strict: bool = True) -> dict[str, Any]:
    """Validate and normalise a final answer to ``{"answer": [str], "citations": [{"document", "page"}]}``.

    Answer strings are stripped, empty ones dropped; a lone string or number becomes a one-element list.
    Citations take ``document`` (or ``file`` when ``document`` is absent or blank) and a 1-based ``page`` (an
    integer, or digits in a string); repeated citations are merged. With ``strict=False`` unusable parts are
    dropped instead of raising.

    The result is always within the metric's input caps (``madqa.metric.schema``), so that every line the runner
    writes is scored, never refused; the model's own arguments stay in the line's ``trajectory``. What is cut,
    silently and in both modes (the model cannot tell a cap from a format error, and the cut part is never
    scored):

    * at most :data:`MAX_LIST_ITEMS` answer strings and citations; each string cut to :data:`MAX_ANSWER_ITEM_CHARS`;
      strings after :data:`MAX_ANSWER_TOTAL_CHARS` characters in all are cut or dropped;
    * a document name cut to :data:`MAX_DOCUMENT_CHARS` (it names no document then: a wrong citation);
    * a page is kept however high (a document the dataset lacks, a page no document has: the metric scores a wrong
      citation); a digit string is read from its first :data:`PAGE_DIGITS` significant digits.

    Raises:
        AnswerFormatError: (strict only) a part of the answer has the wrong shape.

    >>> normalise_answer(" 42 ", [{"file": "a.pdf", "page": "3"}, {"document": "a.pdf", "page": 3}])
    {'answer': ['42'], 'citations': [{'document': 'a.pdf', 'page': 3}]}
    >>> normalise_answer(["x"], [{"document": "a.pdf", "page": 0}], strict=False)
    {'answer': ['x'], 'citations': []}
    """
    problems: list[str] = []
    if answer is None:
        items: list[Any] = []
    elif isinstance(answer, (str, int, float)) and not isinstance(answer, bool):
        items = [answer]
    elif isinstance(answer, (list, tuple)):
        items = list(answer)
    else:
        problems.append(f"'answer' must be a list of short strings, got {type(answer).__name__}")
        items = []
    out_answer: list[str] = []
    room = MAX_ANSWER_TOTAL_CHARS
    for item in items[:MAX_LIST_ITEMS]:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            problems.append(f"answer item {_show(item)} is not a string")
            continue
        text = _text(item)[: min(MAX_ANSWER_ITEM_CHARS, room)]
        if text:
            out_answer.append(text)
            room -= len(text)
    out_cites: list[dict[str, Any]] = []
    cites = [] if citations is None else list(citations) if isinstance(citations, (list, tuple)) else [citations]
    for cite in cites[:MAX_LIST_ITEMS]:
        parsed = _citation(cite)
        if isinstance(parsed, str):
            problems.append(parsed)
        elif parsed not in out_cites:
            out_cites.append(parsed)
    if problems and strict:
        raise AnswerFormatError(
            "final_answer was not accepted: " + "; ".join(problems[:3]) + ". Call final_answer with answer=[short "
            'strings] and citations=[{"document": "<file name>.pdf", "page": <page number from 1>}].'
        )
    return {"answer": out_answer, "citations": out_cites}


def _show(value: Any) -> str:
    """``repr`` cut short: a fix-it message quotes the model's value, which may be huge."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _text(item: str | int | float) -> str:
    """An answer item as stripped text; a huge int is shown by its size (str() refuses past 4,300 digits)."""
    try:
        return str(item).strip()
    except ValueError:
        return f"<an integer of about {int(item).bit_length() * 30103 // 100000} digits>"


def _citation(cite: Any) -> dict[str, Any] | str:
    if not isinstance(cite, Mapping):
        return f"citation {_show(cite)} is not an object with 'document' and 'page'"
    document = cite.get("document")
    if not isinstance(document, str) or not document.strip():  # as the metric reads it: blank falls back to file
        document = cite.get("file", document)
    if not isinstance(document, str) or not document.strip():
        return f"citation {_show(dict(cite))} has no 'document' file name"
    document = document.strip()[:MAX_DOCUMENT_CHARS]
    page = cite.get("page")
    if isinstance(page, str) and page.strip().isascii() and page.strip().isdigit():  # "²".isdigit() is True
        page = int((page.strip().lstrip("0") or "0")[:PAGE_DIGITS])
    if isinstance(page, float) and page.is_integer():
        page = int(page)
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        return f"citation of {document[:200]} has page {_show(page)}; pages are whole numbers counted from 1"
    return {"document": document, "page": page}


class FinalAnswerTool(Tool):
    """``final_answer(answer, citations)``: end the task with a list of answer strings and the pages cited."""

    name = "final_answer"
    description = (
        "Give the final answer and stop. answer: a list of short answer values copied from the documents (one "
        "element for a single value, one element per item for several); no sentences. citations: the pages that "
        "support the answer, each with the exact PDF file name and the page number."
    )
    inputs = {
        "answer": {"type": "array", "items": {"type": "string"}, "description": "short answer values"},
        "citations": {
            "type": "array",
            "description": 'evidence pages: [{"document": "<file name>.pdf", "page": <number>}]',
            "items": {
                "type": "object",
                "properties": {"document": {"type": "string"}, "page": {"type": "integer"}},
                "required": ["document", "page"],
            },
        },
    }
    output_type = "object"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        use_plain_output_types()  # an agent that ends with this tool never imports torch to type its answer
        super().__init__(*args, **kwargs)

    def forward(self, answer: list[str], citations: list[dict[str, Any]]) -> dict[str, Any]:
        """Return the normalised answer (raises :class:`AnswerFormatError` with a fix-it message)."""
        return normalise_answer(answer, citations, strict=True)


def salvage_answer(text: str) -> dict[str, Any] | None:
    """The complete answer strings and citations of a JSON answer cut short, or ``None`` if it holds none.

    >>> salvage_answer('{"answer": ["12", "3.4.5.6')
    {'answer': ['12'], 'citations': []}
    """

    def unquote(value: str) -> str:
        try:
            return str(json.loads(f'"{value}"'))
        except ValueError:
            return value

    found = re.search(r'"answer"\s*:\s*\[(.*?)(?:\]|$)', text, flags=re.DOTALL)
    answers = [unquote(v) for v in re.findall(r'"((?:[^"\\]|\\.)*)"', found.group(1))] if found else []
    cites = [
        {"document": unquote(d), "page": int(p)}
        for d, p in re.findall(r'"document"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"page"\s*:\s*(\d+)', text)
    ]
    return {"answer": answers, "citations": cites} if answers or cites else None
