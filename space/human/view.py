"""Texts of the human interface (Markdown), kept apart from the Gradio wiring so tests can read them plainly."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from madqa.agents.corpus.search import SYNTAX_HELP

#: The app's look, in both homes (``madqa human`` and the Space's tab): :data:`INSTALL_JS` adds it to the page, so
#: the two cannot differ. Side by side at desktop widths (page viewer left, question, answer and citations right);
#: on a phone one column, the page viewer between the results and the answer box (the page and the answer fit on
#: one screen); result thumbnails show the whole page (never cropped) with a caption that wraps.
CSS = """
#question { background: #e8f1fb; border: 2px solid #2f6db5; border-radius: 8px; padding: 10px 14px; }
#question p { font-size: 1.15em; margin: 0.2em 0; }
#viewer-title p { font-weight: bold; }
#viewer-msg p { color: #9a3412; font-weight: bold; }
#results .grid-wrap { height: auto !important; min-height: 0 !important; max-height: 380px !important;
  overflow-y: auto; }
@media (min-width: 768px) {  /* one row of thumbnails and a bit, scrolled: Submit stays on the first screen */
  #results .grid-wrap { max-height: 250px !important; }
}
#results .thumbnail-item { aspect-ratio: auto; height: auto; }
#results .thumbnail-item img { aspect-ratio: 17 / 22; height: auto !important; }
#progress p { font-size: 0.85em; color: #4b5563; margin: 0; }
#results img { object-fit: contain !important; background: #fff; }
#results .caption-label { white-space: normal; overflow: visible; text-overflow: clip; position: static;
  max-width: none; font-size: 0.78em; line-height: 1.25; background: #f3f4f6; color: #111; opacity: 1; }
#viewer img { object-fit: contain; cursor: zoom-in; }
#viewer.zoomed img { cursor: zoom-out; }
#keys-help p { font-size: 0.85em; color: #4b5563; }
@media (max-width: 767px) {
  /* room below the last control, so that a page just opened can be scrolled to the top of the screen */
  #main-box { flex-direction: column; padding-bottom: 40vh; }
  #viewer-col, #work-col { display: contents; }
  #main-box > * > * { order: 3; }
  #question, #progress, #instructions-box, #search-row, #search-msg, #results { order: 1; }
  #viewer-title, #nav-row, #viewer-msg, #viewer { order: 2; }
  #viewer-title { scroll-margin-top: 8px; }
  #citations { order: 4; }  /* the list goes below; the cite buttons stay between the page and the answer */
  #keys-help { order: 5; }
  #nav-row #jump { padding: 0 !important; border: 0 !important; }
  #viewer { height: auto !important; }
}
"""

#: Keyboard shortcuts, zoom and the CSS, installed once per page (on load, and again harmlessly on Start): Enter in
#: the answer box submits (Shift+Enter starts another line), ←/→ turn pages and ``c`` cites the page in view when
#: the focus is not in a text box; a click on the page image zooms it (twice the width, scrollable) and back.
INSTALL_JS = (
    """() => {
  if (!document.getElementById("madqa-human-css")) {
    const style = document.createElement("style");
    style.id = "madqa-human-css"; style.textContent = __CSS__; document.head.appendChild(style);
  }
  if (window.madqaHumanKeys) return [];
  window.madqaHumanKeys = true;
  const click = (id) => { const b = document.getElementById(id); if (b && !b.disabled) b.click(); };
  const inAnswer = (e) => e.target && e.target.closest && e.target.closest("#answer");
  const typing = (e) => { const t = e.target; return t && (t.isContentEditable ||
    ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName)); };
  for (const kind of ["keydown", "keypress"]) {
    window.addEventListener(kind, (e) => {
      if (e.key !== "Enter" || !inAnswer(e)) return;
      e.stopPropagation();  /* gradio's own handler would submit on Shift+Enter and swallow the new line */
      if (e.shiftKey) return;
      e.preventDefault();
      if (kind === "keydown" && !e.isComposing) click("submit-answer");
    }, true);
  }
  window.addEventListener("keydown", (e) => {
    if (typing(e) || e.ctrlKey || e.metaKey || e.altKey || !document.getElementById("main-box")) return;
    const target = {ArrowLeft: "nav-previous", ArrowRight: "nav-next", c: "cite", C: "cite"}[e.key];
    if (target && document.getElementById(target)?.offsetParent) { e.preventDefault(); click(target); }
  });
  document.addEventListener("click", (e) => {
    const img = e.target && e.target.closest && e.target.closest("#viewer img");
    if (!img) return;
    const viewer = document.getElementById("viewer"), zoomed = viewer.classList.toggle("zoomed");
    for (const [k, v] of [["width", "200%"], ["max-width", "none"], ["max-height", "none"], ["height", "auto"]]) {
      if (zoomed) img.style.setProperty(k, v, "important"); else img.style.removeProperty(k);
    }
    for (let el = img.parentElement; el && el !== viewer.parentElement; el = el.parentElement) {
      if (zoomed) el.style.setProperty("overflow", "auto", "important"); else el.style.removeProperty("overflow");
    }
  });
  return [];
}"""
).replace("__CSS__", json.dumps(CSS))
#: On a phone, a result just opened: its page at the top of the screen, the answer box under it.
SHOW_PAGE_JS = """() => { if (window.innerWidth < 768) document.getElementById("viewer-title")?.scrollIntoView(
  {block: "start"}); return []; }"""
#: After an answer: the next question, at the top of the screen (on a phone the answer box is far below it).
SCROLL_JS = """() => { document.getElementById("question")?.scrollIntoView({block: "start"}); return []; }"""

KEYS_HELP = (
    "Keys: **Enter** submits the answer (Shift+Enter: another line) · **←/→** previous/next page · "
    "**c** cites the page in view · click the page to zoom"
)

INSTRUCTIONS = f"""**How to answer.** Search the document collection (syntax: {SYNTAX_HELP}; e.g. `mountain car`,
`mountain OR car`, `"annual report"`, `car*`). Open a result to browse its whole document (first / previous / next /
last / jump to a page). Mark the pages that support your answer with **Add as citation**. Type the answer, one item
per line for a list, and submit. **I can't find it** submits an empty answer. Your work is saved after every
question: closing the tab or reloading resumes where you stopped."""

#: The start page: the annotator's protocol of the paper's appendix C.2, in this project's words, read before the
#: first question (the accordion "How to answer" beside the question repeats the short form).
START_INSTRUCTIONS = f"""### Before you start

You will answer a batch of questions about a collection of PDF documents, with the same search engine the
benchmark's agents use. Work only from the documents: no outside knowledge, no other tools.

1. **Read the question** in the blue box to the end before searching.
2. **Search** the collection. The engine matches the pages' OCR text:
   - several words find pages with all of them: `mountain car`;
   - `AND` / `OR` / `NOT` (upper case) combine terms: `mountain OR car`;
   - quotes find an exact phrase: `"annual report"`;
   - `*` stands for any letters: `car*` finds car, cars, carriage.

   The full syntax: {SYNTAX_HELP}.
3. **Browse the documents.** A result is one page; open it and move through its whole document (first, previous,
   next, last, or jump to a page number).
4. **Cite the evidence**: with a supporting page in view, press **Add as citation** (or `c`). Cite every page the
   answer needs, in every document it needs.
5. **Answer** in the answer box; when there are several answers, put each on its own line. Press **Submit answer**
   (or Enter). If you cannot find it, press **I can't find it**.

Every search, page view and citation is logged with its time, so the study can compare how people and agents
search. Your work is saved after each question: closing the tab or reloading resumes where you stopped."""

START_ORACLE_INSTRUCTIONS = """### Before you start (oracle mode)

You will answer a batch of questions about PDF documents. Each question comes with its evidence pages, so there is
no search. Work only from the pages shown: no outside knowledge.

1. **Read the question** in the blue box to the end.
2. **Read the evidence pages**; you may browse their whole documents (first, previous, next, last, jump).
3. **Cite** the pages that support your answer with **Add as citation** (or `c`).
4. **Answer**, one item per line when there are several, and press **Submit answer** (or Enter);
   **I can't find it** submits an empty answer.

Your work is saved after each question: closing the tab or reloading resumes where you stopped."""

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


def history_markdown(searches: Sequence[Mapping[str, Any]], refused: int = 0) -> str:
    """Sidebar search history, newest last, and how many queries were refused (they are not searches)."""
    note = f"\n\n{refused} refused quer{'y' if refused == 1 else 'ies'} not counted" if refused else ""
    if not searches:
        return "**Searches:** none yet" + note
    lines = [f"{n}. {code(s['query'])} → {s['count']} page(s)" for n, s in enumerate(searches, 1)]
    return "**Searches:**\n" + "\n".join(lines) + note


def viewer_title(document: str | None, page: int, pages: int, cited: bool) -> str:
    """Heading over the page being viewed."""
    if not document:
        return "Open a result to view its document here."
    mark = " (cited)" if cited else ""
    return f"{document}, page {page} of {pages}{mark}"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+|~!-])")


def plain(text: str) -> str:
    """``text`` shown as it is in Markdown (``*`` stays an asterisk, never italics).

    >>> plain("The query '*' is too broad: * matches")
    "The query '\\\\*' is too broad: \\\\* matches"
    """
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def code(text: str) -> str:
    """``text`` as inline code, whatever backticks it holds."""
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def search_message(query: str, count: int, error: str | None) -> str:
    """The line under the search bar: the engine's refusal in plain text, or how many pages came back."""
    if error:
        return f"**Not searched:** {plain(error)}"
    return f"{count} page(s) for {code(query.strip())}"


def doc_title(document: str) -> str:
    """A document's file name as a title: ``harlan_superior_court_order.pdf`` → ``Harlan superior court order``.

    >>> doc_title("riverton_water_annual_report_2019.pdf")
    'Riverton water annual report 2019'
    """
    stem = re.sub(r"\.pdf$", "", document, flags=re.IGNORECASE)
    words = re.sub(r"[_\s]+", " ", stem).strip() or document
    return words[:1].upper() + words[1:]


def caption(document: str, page: int, snippet: str | None = None) -> str:
    """Label of a result image: page first (so a cut label still tells results apart), the document's title, and
    a snippet of the page when another result is of the same document."""
    text = f"p. {page} · {doc_title(document)}"
    return f"{text} — “{snippet}”" if snippet else text


def captions(pages: Sequence[tuple[str, int]], snippet: Callable[[str, int], str]) -> list[str]:
    """The captions of a result list: a snippet (``snippet(document, page)``) wherever a title repeats."""
    seen = Counter(d for d, _ in pages)
    return [caption(d, p, snippet(d, p) if seen[d] > 1 else None) for d, p in pages]


def jump_problem(page: int, pages: int) -> str | None:
    """Why a jump to ``page`` cannot be shown (``None``: it can).

    >>> jump_problem(99, 2)
    'page 99 does not exist; this document has 2 pages'
    """
    if 1 <= page <= pages:
        return None
    return f"page {page} does not exist; this document has {pages} page{'s' if pages != 1 else ''}"
