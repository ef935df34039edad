"""One page's text layer as the corpus gets it: visible and hidden spans apart, form fields, reading order.

:func:`read_page` is what :mod:`.pdf_text` calls for every page: one structured-text pass (``get_text("dict")``
with the flags of ``get_text()``), then

* **hidden spans** (:mod:`.pdf_hidden_text`) are kept apart: :attr:`PageContent.text` leaves them out,
  :attr:`PageContent.full` has them in place, and the page reader applies the stated rule to choose;
* **form fields** (:mod:`.pdf_forms`): their widgets' drawn appearance is replaced by ``label: value`` lines;
* **right-to-left lines** (:mod:`.pdf_bidi`): a line with Arabic-script or Hebrew text is rebuilt from its glyphs'
  positions (words where the page leaves gaps, numbers and Latin words in reading order);
* **reading order** (:mod:`.pdf_layout`): vertical CJK joined into lines, columns read one after the other.

Without hidden text, form fields, right-to-left text, vertical writing or columns the text is exactly
``page.get_text()``'s (a test checks every page of the sample).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .pdf_bidi import has_rtl, rebuild_line
from .pdf_forms import form_lines
from .pdf_hidden_text import BACKGROUND, needs_colour_check, same_colour_as_background, span_hidden_kind
from .pdf_layout import Line, Span, column_order, join_vertical

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PageContent:
    """A page's text layer, read by :func:`read_page`.

    Attributes:
        text: the visible text in reading order (a line per line, each ending in a newline).
        full: the same with the hidden spans in place.
        hidden: the hidden spans' text only.
        kinds: how the hidden spans are hidden, distinct, in order of appearance.
        form: the ``label: value`` lines of the page's form fields (in ``text`` too), for the scan check of
            :mod:`.pdf_scan_layer`.
    """

    text: str
    full: str
    hidden: str
    kinds: list[str]
    form: str = ""


def read_page(page: Any) -> PageContent:
    """Read one ``pymupdf.Page`` (see the module docstring).

    Cost: the one structured-text pass (the C work) and one pass over its spans; what cannot change the page is
    skipped (no widget: no form step; no light-coloured span: no render; no hidden span: the full text is the
    visible text, not joined again), and the layout steps read each line's text once (:meth:`.Line.text` caches).
    """
    import pymupdf

    textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_TEXT)
    data = textpage.extractDICT()  # get_text("dict"), less its wrapper
    lines: list[Line] = []
    colour: list[tuple[Span, dict[str, Any]]] = []
    right_to_left: list[tuple[int, int, Line]] = []  # (block, line, Line) of lines with right-to-left text
    hidden_found = False
    for block_number, block in enumerate(data["blocks"]):
        for line_number, raw in enumerate(block.get("lines", ())):
            spans = []
            rtl = False
            for span in raw["spans"]:
                spans.append(kept := Span(span["text"], span_hidden_kind(span)))
                if kept.hidden is not None:
                    hidden_found = True
                elif needs_colour_check(span):
                    colour.append((kept, span))
                rtl = rtl or (not kept.text.isascii() and has_rtl(kept.text))  # isascii: most spans, no regex
            lines.append(Line(*raw["bbox"], spans, raw.get("wmode") == 1))
            if rtl:
                right_to_left.append((block_number, line_number, lines[-1]))
    if colour:
        for (span, _), hidden in zip(colour, same_colour_as_background(page, [raw for _, raw in colour]), strict=True):
            if hidden:
                span.hidden, hidden_found = BACKGROUND, True
    if right_to_left:  # their glyphs' boxes: the same text page read again, per character (.pdf_bidi)
        try:
            blocks = textpage.extractRAWDICT()["blocks"]
            rebuilt = [
                rebuild_line(blocks[b]["lines"][i], [s.hidden for s in line.spans]) for b, i, line in right_to_left
            ]
        except Exception:  # noqa: BLE001 - as for the layout steps: MuPDF's text, never the page lost
            logger.warning(
                "page %d: right-to-left lines not rebuilt; MuPDF's text kept", page.number + 1, exc_info=True
            )
        else:
            for (_, _, line), spans in zip(right_to_left, rebuilt, strict=True):
                if spans is not None:
                    line.spans = spans
    form = ""
    try:
        if page.first_widget is not None:
            drawn = {id(line) for line in lines}
            lines = form_lines(page, lines)
            form = _join([line for line in lines if id(line) not in drawn], hidden=False)
        lines = column_order(join_vertical(lines))
    except Exception:  # noqa: BLE001 - a layout step that fails keeps MuPDF's order, never the page
        logger.warning("page %d: layout analysis failed; MuPDF's line order kept", page.number + 1, exc_info=True)
    visible = _join(lines, hidden=False)
    if not hidden_found:
        return PageContent(visible, visible, "", [], form)
    kinds = list(dict.fromkeys(s.hidden for line in lines for s in line.spans if s.hidden is not None))
    hidden = "\n".join(part for line in lines if (part := "".join(s.text for s in line.spans if s.hidden)))
    return PageContent(visible, _join(lines, hidden=True), hidden.strip(), kinds, form)


def _join(lines: list[Line], *, hidden: bool) -> str:
    return "".join([text + "\n" for line in lines if (text := line.text(hidden=hidden))])
