"""Text a reader of the page cannot see: how it is detected, and the rule that decides whether it is kept.

A PDF can carry text that is never painted: the invisible OCR layer of a scan (render mode 3), text with zero
opacity, text in the colour of what lies under it (white on white), text under one point tall, text clipped away.
Agents read the extracted text, so such text is checked before it enters the corpus.

Detection, per span of MuPDF's structured text (:func:`span_hidden_kind`, :func:`same_colour_as_background`):

* **render mode 3 (invisible)**: neither filled nor stroked (MuPDF's character flags; mode 7 too);
* **transparent**: fill opacity 0;
* **tiny**: font size under :data:`TINY_POINTS`;
* **same colour as the background**: a span whose colour is not near black is looked at on a 72 dpi render of
  the page: when under :data:`MAX_INK_SHARE` of the pixels of its box differ from its own colour, nothing of it
  can be seen (white on white, blue on a blue box);
* **clipped away**: MuPDF's text device already leaves out text outside the clip path (a test checks it).

The rule (:func:`judge_hidden`), for a page with hidden text that has letters or digits:

1. With OCR available, the page is rendered (hidden text does not show) and OCR'd, and the share of the hidden
   text's words that the OCR also reads is measured (:func:`word_containment`). At least :data:`KEEP_SIMILARITY`:
   the hidden layer says what the page shows (an OCR layer) and is kept. Below: it is dropped and reported with
   its similarity; the page's text is its visible text when that is usable, else what
   :func:`.pdf_scan_layer.combine` keeps of the visible text and the fresh OCR (the warning says which). So an
   invisible layer that differs from the scan, or one with a quarter of its words garbled, is replaced by OCR.
2. Without OCR, a render-mode-3 layer on a page with no usable visible text is kept (it cannot be checked: a
   page-range note says so); any other hidden text is dropped and reported. When OCR was asked for and only
   Tesseract is missing, the kept page also counts as needing OCR (:attr:`.pdf_text.PdfResult.ocr_needed_missing`):
   the run exits 3 and the file is not cached, so a run with Tesseract checks it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .pdf_scan_layer import combine

#: Hidden text is kept only when at least this share of its words also appear in OCR of the rendered page.
#: Measured on the generated scans of ``tests/loading_script/test_extract_content_hidden.py`` (OCR at 300 dpi): a
#: faithful layer 1.0, one with 25 % of its words garbled 0.74, one with other text than the scan 0.08; a real OCR
#: layer from another engine differs from Tesseract's reading by a few words in a hundred.
KEEP_SIMILARITY = 0.85
#: A span of text smaller than this (points) counts as hidden.
TINY_POINTS = 1.0
#: A span whose colour has no channel above this (0-1) is dark: never checked against the background (the
#: sample's dark blue headings and grey captions are not; white, light grey and pure colours are).
DARK_CHANNEL = 0.5
#: A coloured span is hidden when fewer than this share of its box's pixels differ from its colour.
MAX_INK_SHARE = 0.02
#: Two colours differ when a channel differs by more than this (0-255).
COLOUR_TOLERANCE = 40
#: Render resolution of the background check.
CHECK_DPI = 72
_FILLED, _STROKED = 16, 32  # MuPDF's FZ_STEXT_FILLED, FZ_STEXT_STROKED character flags
_WORD = re.compile(r"\w+")

INVISIBLE = "render mode 3 (invisible)"
TRANSPARENT = "transparent"
TINY = "tiny"
BACKGROUND = "same colour as the background"


def span_hidden_kind(span: dict[str, Any]) -> str | None:
    """How a span of ``page.get_text("dict")`` is hidden (one of the kinds above), ``None`` if it may show.

    The background check needs a render: :func:`same_colour_as_background` does it for :func:`needs_colour_check`
    spans.
    """
    if "char_flags" in span and not span["char_flags"] & (_FILLED | _STROKED):
        return INVISIBLE
    if span.get("alpha", 255) == 0:
        return TRANSPARENT
    if span.get("size", TINY_POINTS) < TINY_POINTS:
        return TINY
    return None


def needs_colour_check(span: dict[str, Any]) -> bool:
    """Whether a span's colour is not near black, so it could match what lies under it."""
    colour, limit = span.get("color", 0), DARK_CHANNEL * 255  # on every span: no tuple, no max()
    return (colour >> 16 & 255 > limit or colour >> 8 & 255 > limit or colour & 255 > limit) and bool(
        span.get("text", "").strip()
    )


def same_colour_as_background(page: Any, spans: list[dict[str, Any]]) -> list[bool]:
    """For each span, whether its box on a render of ``page`` shows (almost) nothing but its own colour.

    One render at :data:`CHECK_DPI` of the smallest rectangle holding all the spans' boxes.
    """
    if not spans:
        return []
    import numpy as np
    import pymupdf

    zoom = CHECK_DPI / 72.0
    boxes = [pymupdf.Rect(span["bbox"]) * page.rotation_matrix for span in spans]  # rendered (rotated) coordinates
    clip = pymupdf.Rect(boxes[0])
    for box in boxes[1:]:
        clip |= box
    clip &= page.rect
    if clip.is_empty:
        return [False] * len(spans)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip, colorspace=pymupdf.csRGB, alpha=False)
    image = np.frombuffer(pix.samples_mv, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width * 3]
    image = image.reshape(pix.height, pix.width, 3)
    verdicts = []
    for span, box in zip(spans, boxes, strict=True):
        x0, y0, x1, y1 = (box * pymupdf.Matrix(zoom, zoom)).round()
        cells = pymupdf.IRect(x0 - pix.x, y0 - pix.y, x1 - pix.x, y1 - pix.y) & pymupdf.IRect(
            0, 0, pix.width, pix.height
        )
        if cells.is_empty:
            verdicts.append(False)
            continue
        region = image[cells.y0 : cells.y1, cells.x0 : cells.x1].reshape(-1, 3).astype(np.int16)
        differs = (np.abs(region - np.array(_rgb(span.get("color", 0)))) > COLOUR_TOLERANCE).any(axis=1)
        verdicts.append(float(differs.mean()) < MAX_INK_SHARE)
    return verdicts


def word_containment(hidden: str, shown: str) -> float:
    """Share of the words of ``hidden`` (case-folded, with repeats) that also occur in ``shown``.

    >>> word_containment("the quick brown fox", "The quick red fox jumps")
    0.75
    """
    words = Counter(w.casefold() for w in _WORD.findall(hidden))
    if not words:
        return 1.0
    seen = Counter(w.casefold() for w in _WORD.findall(shown))
    return sum(min(n, seen[w]) for w, n in words.items()) / sum(words.values())


@dataclass(frozen=True)
class HiddenVerdict:
    """What to do with a page that has hidden text.

    Attributes:
        text: the page's text (before NFKC).
        source: ``"pdf"``, ``"ocr"``, ``"pdf+ocr"`` or ``"none"``.
        warning: a per-page message (hidden text dropped), or ``None``.
        note: a message shared by many pages (aggregated by page range), or ``None``.
    """

    text: str
    source: str
    warning: str | None = None
    note: str | None = None


def judge_hidden(
    *, visible: str, full: str, hidden: str, kinds: list[str], ocr: str | None, visible_usable: bool
) -> HiddenVerdict:
    """Apply the module's rule to one page.

    Args:
        visible: the page's text without its hidden spans.
        full: the page's text with them, in reading order.
        hidden: the hidden spans' text.
        kinds: how the spans are hidden (:func:`span_hidden_kind`, :data:`BACKGROUND`), distinct.
        ocr: OCR of the rendered page, or ``None`` when OCR is not available.
        visible_usable: whether ``visible`` is a usable text layer (:func:`.pdf_text.has_usable_text`).
    """
    label = ", ".join(kinds)
    if ocr is None:
        if kinds == [INVISIBLE] and not visible_usable:
            return HiddenVerdict(
                full, "pdf", note="invisible text layer kept without a check (no OCR to compare it with the page)"
            )
        return HiddenVerdict(visible, "pdf", warning=f"hidden text ({label}) dropped: {_snippet(hidden)}")
    similarity = word_containment(hidden, ocr)
    if similarity >= KEEP_SIMILARITY:
        return HiddenVerdict(full, "pdf")
    why = (
        f"hidden text ({label}) does not match what the page shows (similarity {similarity:.2f} to OCR of the "
        f"page, {KEEP_SIMILARITY} needed)"
    )
    if visible_usable:
        return HiddenVerdict(visible, "pdf", warning=f"{why}: dropped: {_snippet(hidden)}")
    kept = combine(visible, ocr)  # as for any page without a usable layer: the exact visible text wins a tie
    return HiddenVerdict(kept.text, kept.source, warning=f"{why}: dropped: {_snippet(hidden)}; {kept.said}")


def _snippet(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def _rgb(colour: int) -> tuple[int, int, int]:
    return (colour >> 16) & 255, (colour >> 8) & 255, colour & 255
