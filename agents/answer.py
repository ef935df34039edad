"""The structured final answer both agents end with: ``final_answer(answer=[…], citations=[{document, page}])``.

:func:`normalise_answer` validates and normalises it (strictly inside an agent's run, so that the model sees what to
fix; leniently when an answer is salvaged after the last step); :class:`FinalAnswerTool` is the smolagents tool of
the search agent (the code agent's worker defines a function of the same shape).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smolagents import Tool

#: Longest answer string and most answer strings / citations kept by the final-answer normalisation.
MAX_ANSWER_ITEM_CHARS = 1000
MAX_LIST_ITEMS = 50


class AnswerFormatError(ValueError):
    """A final answer that cannot be used; the message tells the model how to fix it."""


def normalise_answer(answer: Any, citations: Any, *, strict: bool = True) -> dict[str, Any]:
    """Validate and normalise a final answer to ``{"answer": [str], "citations": [{"document", "page"}]}``.

    Answer strings are stripped, empty ones dropped; a lone string or number becomes a one-element list.
    Citations take ``document`` (or ``file``) and a 1-based ``page`` (an integer, or digits in a string); repeated
    citations are merged. With ``strict=False`` unusable parts are dropped instead of raising.

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
    for item in items[:MAX_LIST_ITEMS]:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            problems.append(f"answer item {item!r} is not a string")
            continue
        text = str(item).strip()[:MAX_ANSWER_ITEM_CHARS]
        if text:
            out_answer.append(text)
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
            "strings] and citations=[{\"document\": \"<file name>.pdf\", \"page\": <page number from 1>}]."
        )
    return {"answer": out_answer, "citations": out_cites}


def _citation(cite: Any) -> dict[str, Any] | str:
    if not isinstance(cite, Mapping):
        return f"citation {cite!r} is not an object with 'document' and 'page'"
    document = cite.get("document", cite.get("file"))
    if not isinstance(document, str) or not document.strip():
        return f"citation {dict(cite)!r} has no 'document' file name"
    page = cite.get("page")
    if isinstance(page, str) and page.strip().isascii() and page.strip().isdigit():  # "²".isdigit() is True
        page = int(page.strip())
    if isinstance(page, float) and page.is_integer():
        page = int(page)
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        return f"citation of {document.strip()} has page {page!r}; pages are whole numbers counted from 1"
    return {"document": document.strip(), "page": page}


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
            "description": "evidence pages: [{\"document\": \"<file name>.pdf\", \"page\": <number>}]",
            "items": {
                "type": "object",
                "properties": {"document": {"type": "string"}, "page": {"type": "integer"}},
                "required": ["document", "page"],
            },
        },
    }
    output_type = "object"

    def forward(self, answer: list[str], citations: list[dict[str, Any]]) -> dict[str, Any]:
        """Return the normalised answer (raises :class:`AnswerFormatError` with a fix-it message)."""
        return normalise_answer(answer, citations, strict=True)
