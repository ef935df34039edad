"""Whether a page's text layer accounts for what the page shows, and how a short layer and OCR are put together.

A scanned court filing often carries a little real text over its image: a Bates stamp, a filled form field, a
check box. That text is enough letters for a "usable" layer (:func:`.pdf_text.has_usable_text`), yet it is not
what the page says. So a page is also OCR'd when (:func:`needs_scan_check`)

* images cover at least :data:`SCAN_IMAGE_COVER` of it, and
* its text layer, form lines left out (:mod:`.pdf_forms`), has fewer than :data:`SCAN_LAYER_LETTERS` letters.

Then, and on every page OCR'd for want of a usable layer, :func:`combine` decides what the page keeps:

* the **layer alone** when it accounts for what OCR reads: OCR reads fewer than :data:`MIN_UNREAD_LETTERS`
  letters, or under :data:`UNREAD_SHARE` of its letters, in words the layer does not have. An exact short layer
  thus wins a tie (``Page1`` is not replaced by OCR's ``Pagel``);
* **OCR alone** when the layer has no letters or digits;
* **both** otherwise (``text_source`` ``pdf+ocr``): the layer's lines (form values, stamps), then OCR's lines less
  those that repeat a layer line (:func:`merge_lines`); a note names the pages.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

#: A page whose images cover at least this share of it is a scan (the image is what a reader sees). Half: a
#: letterhead or a photo next to text covers less; a scan, even with margins cropped, covers more.
SCAN_IMAGE_COVER = 0.5
#: ... and whose text layer (less its form lines) has fewer letters and digits than this is OCR'd to check it.
#: A Bates stamp, a case number and a date have 20-60; a page of text has over 1,000. A longer layer is taken to
#: be the page's text, so a born-digital page over a background image costs no OCR.
SCAN_LAYER_LETTERS = 200
#: OCR adds to the layer when at least this share of the letters it reads are in words the layer lacks (and at
#: least MIN_UNREAD_LETTERS of them): a layer that says what the page shows leaves only OCR's misreadings, a few in a
#: hundred; a stamp over a 26-line scan leaves over 98 %.
UNREAD_SHARE = 0.25
#: ... and OCR adds nothing when it reads fewer letters than this in words the layer lacks: the floor of a usable
#: text layer (:data:`.pdf_text.MIN_TEXT_CHARS`, not imported: that module imports this one).
MIN_UNREAD_LETTERS = 16
#: An OCR line this similar (difflib ratio) to a layer line, or contained in one, repeats it (OCR read the stamp).
SAME_LINE = 0.85
#: What the page-range note says about pages that kept both.
BOTH_KEPT_NOTE = (
    "short text layer (form values, stamps) over a scan: the layer and OCR of the page both kept, OCR lines that "
    "repeat the layer left out (text_source pdf+ocr)"
)
_WORD = re.compile(r"[^\W_]+")
_LONG_LAYER = re.compile(rf"(?:[\W_]*+[^\W_]){{{SCAN_LAYER_LETTERS}}}")  # SCAN_LAYER_LETTERS letters from the start


@dataclass(frozen=True)
class Combined:
    """What a page keeps of its text layer and its OCR (:func:`combine`).

    Attributes:
        text: the page's text; ``source``: ``"pdf"``, ``"ocr"``, ``"pdf+ocr"`` or ``"none"`` (no text).
        said: what was kept, in words, for a warning.
    """

    text: str
    source: str
    said: str


def image_cover(page: Any) -> float:
    """Share of the page's area under images (each image's box clipped to the page, summed, at most 1)."""
    area = abs(page.rect)
    if not area:
        return 0.0
    import pymupdf

    covered = sum(abs(pymupdf.Rect(info["bbox"]) & page.rect) for info in page.get_image_info())
    return min(1.0, covered / area)


def needs_scan_check(page: Any, text: str, form: str) -> bool:
    """Whether a page with a usable text layer ``text`` (form lines ``form`` in it) is OCR'd too (module docstring).

    Most pages have a longer layer and no form: one regular expression stops at its 200th letter, no image lookup.
    """
    if not form and _LONG_LAYER.match(text):
        return False
    return _letters(text) - _letters(form) < SCAN_LAYER_LETTERS and image_cover(page) >= SCAN_IMAGE_COVER


def unread_letters(layer: str, ocr: str) -> int:
    """Letters and digits of the words OCR reads that the layer does not have (case-folded, with repeats).

    >>> unread_letters("CONFIDENTIAL SMITH-000123", "The permit\\nCONFIDENTIAL SMITH-000123")
    9
    """
    have = Counter(w.casefold() for w in _WORD.findall(layer))
    unread = 0
    for word in _WORD.findall(ocr):
        key = word.casefold()
        if have[key]:
            have[key] -= 1
        else:
            unread += len(word)
    return unread


def combine(layer: str, ocr: str) -> Combined:
    """The page's text from its text layer and its OCR (module docstring). Both are NFKC-normalised already."""
    layer_letters, ocr_letters = _letters(layer), _letters(ocr)
    unread = unread_letters(layer, ocr)
    if layer_letters and (unread < MIN_UNREAD_LETTERS or unread < UNREAD_SHARE * ocr_letters):
        return Combined(layer, "pdf", "the text layer kept (OCR reads nothing it lacks)")
    if not layer_letters:
        if ocr_letters:
            return Combined(ocr, "ocr", "replaced by OCR of the page")
        return Combined("", "none", "OCR of the page read no text either: the page is left empty")
    return Combined(merge_lines(layer, ocr), "pdf+ocr", "the text layer and OCR of the page both kept")


def merge_lines(layer: str, ocr: str) -> str:
    """The layer's lines, then OCR's lines that do not repeat one of them (module docstring)."""
    keys = [_key(line) for line in layer.splitlines()]
    keys = [key for key in keys if key]
    out = layer if layer.endswith("\n") or not layer else layer + "\n"
    for line in ocr.splitlines():
        key = _key(line)
        if key and not any(_same(key, known) for known in keys):
            out += line + "\n"
    return out


def _letters(text: str) -> int:
    """Letters and digits of any script (Unicode L* and N*)."""
    return sum(len(word) for word in _WORD.findall(text))


def _key(line: str) -> str:
    return " ".join(_WORD.findall(line.casefold()))


def _same(key: str, known: str) -> bool:
    if key == known or (len(key) >= 4 and key in known):
        return True
    matcher = difflib.SequenceMatcher(None, key, known, autojunk=False)
    return matcher.real_quick_ratio() >= SAME_LINE and matcher.ratio() >= SAME_LINE
