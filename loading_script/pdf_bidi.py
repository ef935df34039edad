"""Right-to-left and mixed-direction lines, rebuilt from their glyphs' positions.

MuPDF keeps a line's characters in the order the content stream draws them and decides spaces by where the next
glyph "should" start in the writing direction. Right-to-left text breaks both: Arabic-script and Hebrew words come
out glued (``بیشترمجله``, ``نخواهندwordنخواهندکرد``) and a number drawn left to right inside a right-to-left
stretch comes out in whatever order the producer drew its digits (١٨٩٨ read as ٨٩٨١).

:func:`rebuild_line` reads such a line from its glyphs' boxes instead, the way the page shows it:

1. **glyphs in visual order**: the characters sorted along the line's direction (MuPDF's ``dir``; plain
   horizontal text is sorted by x). Combining marks (harakat, niqqud) and format characters (the Persian
   zero-width non-joiner) stay with the character they follow in the stream; MuPDF's own spaces are dropped;
2. **words**: a gap between two neighbouring glyphs wider than :data:`WORD_GAP` of the font size is a space,
   whichever way the text runs (the spaces a producer draws are such gaps too);
3. **reading order**: the visual sequence is put back into logical order with the reordering of Unicode's
   bidirectional algorithm (UAX #9 rules W4-W5, W7, N1-N2, I1-I2, L2 and L4 for brackets; character classes from
   :mod:`unicodedata`; no explicit embeddings): right-to-left letters are read right to left, Latin words and
   numbers left to right, the line's base direction being that of most of its strong letters. Reading the visual
   order back is the algorithm run on it, which gives the logical order for text without nested embeddings.

Only lines with a right-to-left character (:func:`has_rtl`) are rebuilt; every other line keeps MuPDF's text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .pdf_layout import Span

#: A gap between two glyphs wider than this share of the font size is a word space. Measured on XeTeX's
#: Persian and Arabic (lshort-persian, arabi's samplebook): spaces leave 0.17-0.33 em, glyphs of one word touch
#: or overlap (at most 0.02 em apart); pdftotext's own word-break threshold is 0.1 em too.
WORD_GAP = 0.1

#: Hebrew, Arabic, Syriac, Thaana, NKo, Samaritan, Mandaic, Arabic supplements and presentation forms, and the
#: right-to-left historic scripts of the supplementary planes.
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]")
_STRONG_RTL = frozenset({"R", "AL"})
_NUMBER = frozenset({"EN", "AN"})
_NEUTRAL_SPACE = " "
_NO_WIDTH = 0.01  # of the font size: a glyph box narrower than this has no width
#: Rule L4: in a right-to-left run the page shows a bracket mirrored, and producers map the glyph drawn (")" on the
#: right of a parenthesised Arabic phrase) to its own character; read in logical order it is the other one.
_MIRROR = dict(zip("()[]{}<>«»‹›", ")(][}{><»«›‹", strict=True))


def has_rtl(text: str) -> bool:
    """Whether ``text`` has a character of a right-to-left script."""
    return _RTL.search(text) is not None


@dataclass(slots=True)
class _Glyph:
    lo: float  # extent along the line's direction
    hi: float
    text: str
    size: float
    hidden: str | None
    kind: str = ""  # simplified bidi class: "R", "L", "N" (number), "ES", "ET", "CS" or "ON" (neutral)
    level: int = 0


def rebuild_line(raw_line: dict[str, Any], hidden: Sequence[str | None]) -> list[Span] | None:
    """The spans of one line of ``get_text("rawdict")``, rebuilt as the module docstring says.

    ``hidden`` is the hidden kind of each of the line's spans (:class:`.Span`'s ``hidden``); the result keeps it,
    one span per run of glyphs with the same kind. A line with no glyph gives no span; ``None`` means the line
    is better left as MuPDF read it: most of its glyph boxes have no width, so gaps would split every letter.
    """
    glyphs = _glyphs(raw_line, hidden)
    if not glyphs:
        return []
    if sum(g.hi - g.lo < _NO_WIDTH * g.size for g in glyphs) * 2 > len(glyphs):
        return None  # boxes without widths (a font with no metrics) cannot show where words end
    glyphs.sort(key=lambda g: g.lo + g.hi)  # stable: glyphs on one spot keep the stream's order
    visual = _with_spaces(glyphs)
    _classify(visual)
    base = 1 if sum(g.kind == "R" for g in visual) >= sum(g.kind == "L" for g in visual) else 0
    _numbers_in_latin(visual, base)
    _resolve_levels(visual, base)
    logical = _reorder(visual)
    for glyph in logical:
        if glyph.level % 2 and glyph.text in _MIRROR:
            glyph.text = _MIRROR[glyph.text]
    spans: list[Span] = []
    for glyph in logical:
        if spans and spans[-1].hidden == glyph.hidden:
            spans[-1].text += glyph.text
        else:
            spans.append(Span(glyph.text, glyph.hidden))
    return spans


def _glyphs(raw_line: dict[str, Any], hidden: Sequence[str | None]) -> list[_Glyph]:
    dx, dy = raw_line.get("dir", (1.0, 0.0))
    glyphs: list[_Glyph] = []
    for span, kind in zip(raw_line["spans"], hidden, strict=True):
        size = float(span.get("size") or 1.0)
        for char in span["chars"]:
            text = char["c"]
            if not text or text.isspace():
                continue
            if glyphs and (unicodedata.combining(text[0]) or unicodedata.category(text[0]) in ("Mn", "Me", "Cf")):
                glyphs[-1].text += text  # a mark or joiner belongs to the character before it
                continue
            x0, y0, x1, y1 = char["bbox"]
            ends = (x0 * dx + y0 * dy, x1 * dx + y0 * dy, x0 * dx + y1 * dy, x1 * dx + y1 * dy)
            glyphs.append(_Glyph(min(ends), max(ends), text, size, kind))
    return glyphs


def _with_spaces(glyphs: list[_Glyph]) -> list[_Glyph]:
    out = [glyphs[0]]
    for before, glyph in zip(glyphs, glyphs[1:], strict=False):
        if glyph.lo - before.hi > WORD_GAP * max(before.size, glyph.size):
            kind = before.hidden if before.hidden == glyph.hidden else None
            out.append(_Glyph(before.hi, glyph.lo, _NEUTRAL_SPACE, before.size, kind))
        out.append(glyph)
    return out


def _classify(glyphs: list[_Glyph]) -> None:
    """Bidi classes, with rules W4 (a separator between two numbers) and W5 (terminators next to a number)."""
    for glyph in glyphs:
        cls = unicodedata.bidirectional(glyph.text[0])
        if cls in _STRONG_RTL:
            glyph.kind = "R"
        elif cls == "L":
            glyph.kind = "L"
        elif cls in _NUMBER:
            glyph.kind = "N"
        elif cls in ("ES", "ET", "CS"):
            glyph.kind = cls
        else:
            glyph.kind = "ON"
    for i in range(1, len(glyphs) - 1):
        if glyphs[i].kind in ("ES", "CS") and glyphs[i - 1].kind == "N" and glyphs[i + 1].kind == "N":
            glyphs[i].kind = "N"
    for i, glyph in enumerate(glyphs):
        if glyph.kind != "ET":
            continue
        j = i
        while j < len(glyphs) and glyphs[j].kind == "ET":
            j += 1
        k = i
        while k > 0 and glyphs[k - 1].kind == "ET":
            k -= 1
        if (j < len(glyphs) and glyphs[j].kind == "N") or (k > 0 and glyphs[k - 1].kind == "N"):
            glyph.kind = "N"
    for glyph in glyphs:
        if glyph.kind in ("ES", "ET", "CS"):
            glyph.kind = "ON"


def _numbers_in_latin(glyphs: list[_Glyph], base: int) -> None:
    """Rule W7: a number within Latin text is Latin. In a left-to-right line that is a number whose nearest letter
    before it is Latin (or none); in a right-to-left line, where the visual order leaves "before" open, one with
    Latin letters nearest on both sides."""
    previous, strong_before = ("R" if base else "L"), []
    for glyph in glyphs:
        if glyph.kind in ("R", "L"):
            previous = glyph.kind
        strong_before.append(previous)
    following = "R" if base else "L"
    for i in range(len(glyphs) - 1, -1, -1):
        glyph = glyphs[i]
        if glyph.kind in ("R", "L"):
            following = glyph.kind
        elif glyph.kind == "N" and strong_before[i] == "L" and (not base or following == "L"):
            glyph.kind = "L"


def _resolve_levels(glyphs: list[_Glyph], base: int) -> None:
    """Levels by rules N1-N2 and I1-I2: numbers count as right-to-left for the neutrals between them (N1)."""
    strong_level = {"R": 1, "L": 2 if base else 0, "N": 2}
    side = {"R": "R", "N": "R", "L": "L"}
    base_side = "R" if base else "L"
    i = 0
    while i < len(glyphs):
        glyph = glyphs[i]
        if glyph.kind != "ON":
            glyph.level = strong_level[glyph.kind]
            i += 1
            continue
        j = i
        while j < len(glyphs) and glyphs[j].kind == "ON":
            j += 1
        before = side[glyphs[i - 1].kind] if i > 0 else base_side
        after = side[glyphs[j].kind] if j < len(glyphs) else base_side
        level = (1 if before == "R" else (2 if base else 0)) if before == after else base
        for neutral in glyphs[i:j]:
            neutral.level = level
        i = j


def _reorder(glyphs: list[_Glyph]) -> list[_Glyph]:
    """Rule L2: from the highest level down to 1, reverse every run at that level or above."""
    order = list(glyphs)
    for level in range(max(g.level for g in order), 0, -1):
        i = 0
        while i < len(order):
            if order[i].level < level:
                i += 1
                continue
            j = i
            while j < len(order) and order[j].level >= level:
                j += 1
            order[i:j] = order[i:j][::-1]
            i = j
    return order
