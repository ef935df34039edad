"""Shared by the tests (moved out of test_extract_content_hidden.py, which other tests imported)."""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf
import pytest

from madqa.loading_script.pdf_text import tessdata_dir

TESSDATA = tessdata_dir()


needs_tesseract = pytest.mark.skipif(TESSDATA is None, reason="needs Debian tesseract-ocr")


SHOWN = (
    "The council met on Tuesday to review the harbour budget and approved the new ferry timetable. "
    "Members discussed the permit for the warehouse on Harbor Lane and the cost of repairs."
)


def _garbled(text: str, share: float = 0.25, seed: int = 3) -> str:
    """``text`` with ``share`` of its words replaced by letter salad of the same length."""
    rng = random.Random(seed)
    words = text.split()
    for i in rng.sample(range(len(words)), round(share * len(words))):
        words[i] = "".join(rng.choice("xqzjvkw") for _ in words[i])
    return " ".join(words)


def _scan_with_layer(path: Path, layer: str | None) -> Path:
    """An image-only page showing :data:`SHOWN`, with ``layer`` as invisible text over it (``None``: no layer)."""
    src = pymupdf.open()
    sheet = src.new_page(width=420, height=300)
    box = pymupdf.Rect(24, 24, 396, 276)
    sheet.insert_textbox(box, SHOWN, fontsize=13)
    pix = sheet.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=300)
    page.insert_image(page.rect, pixmap=pix)
    if layer is not None:
        page.insert_textbox(box, layer, fontsize=13, render_mode=3)
    doc.save(path)
    return path
