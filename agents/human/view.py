"""Texts of the human interface (Markdown), kept apart from the Gradio wiring so tests can read them plainly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from madqa.agents.search import SYNTAX_HELP

CSS = """
#question { background: #e8f1fb; border: 2px solid #2f6db5; border-radius: 8px; padding: 10px 14px; }
#question p { font-size: 1.15em; margin: 0.2em 0; }
#viewer-title p { font-weight: bold; }
"""

INSTRUCTIONS = f"""**How to answer.** Search the document collection (syntax: {SYNTAX_HELP}; e.g. `mountain car`,
`mountain OR car`, `"annual report"`, `car*`). Open a result to browse its whole document (first / previous / next /
last / jump to a page). Mark the pages that support your answer with **Add as citation**. Type the answer, one item
per line for a list, and submit. **I can't find it** submits an empty answer. Your work is saved after every
question: closing the tab or reloading resumes where you stopped."""

ORACLE_INSTRUCTIONS = """**Oracle mode.** The pages below are the question's evidence pages; there is no search.
Open them, mark the pages that support your answer, type the answer (one item per line) and submit."""


def question_markdown(position: int, total: int, item: Mapping[str, Any] | None, batch: str) -> str:
    """The blue box: question n of N, or the end-of-batch message."""
    if item is None:
        return f"**Batch {batch} is complete ({total} of {total} answered). Thank you!**"
    return f"**Question {position} of {total}** (batch {batch})\n\n{item['question']}"


def progress_markdown(position: int, total: int, annotator: str, batch: str) -> str:
    """Sidebar progress line."""
    answered = min(position - 1, total)
    return f"**Progress:** {answered} of {total} answered, batch {batch}, annotator `{annotator}`"


def citations_markdown(citations: Sequence[Mapping[str, Any]]) -> str:
    """Sidebar list of the selected citations."""
    if not citations:
        return "**Citations:** none yet"
    return "**Citations:**\n" + "\n".join(f"- {c['document']}, page {c['page']}" for c in citations)


def history_markdown(searches: Sequence[Mapping[str, Any]]) -> str:
    """Sidebar search history, newest last."""
    if not searches:
        return "**Searches:** none yet"
    lines = [f"{n}. `{s['query']}` → {s['count']} page(s)" for n, s in enumerate(searches, 1)]
    return "**Searches:**\n" + "\n".join(lines)


def viewer_title(document: str | None, page: int, pages: int, cited: bool) -> str:
    """Heading over the page being viewed."""
    if not document:
        return "Open a result to view its document here."
    mark = " (cited)" if cited else ""
    return f"{document}, page {page} of {pages}{mark}"


def caption(document: str, page: int) -> str:
    """Label of a result image: document and page."""
    return f"{document} p. {page}"
