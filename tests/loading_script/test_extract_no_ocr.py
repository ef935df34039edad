"""What the extractor does and says when a page needs OCR that cannot run (issue 28, items 5 and 10's follow-up):
a scan whose invisible text layer is a quarter garbled, and a text layer of undecodable glyph codes. Generated PDFs.

The rule (:mod:`madqa.loading_script.pdf_hidden_text`): without OCR an invisible layer over a page that shows no
text cannot be checked; it is kept, with a note. When OCR was asked for and Tesseract is missing, such a page also
counts as needing OCR, like a page without a usable text layer: `madqa extract` exits 3 naming the Debian package,
and the file is not cached, so the next run with Tesseract checks it (before: cached as it was, never checked)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from helpers.scans import SHOWN, TESSDATA, _garbled, _scan_with_layer, needs_tesseract

from madqa.loading_script import extract
from madqa.loading_script.extract import extract_corpus
from madqa.loading_script.pdf_text import extract_pdf, has_usable_text

GARBLED = _garbled(SHOWN)
UNCHECKED = "page 1: invisible text layer kept without a check (no OCR to compare it with the page)"
NO_TESSERACT = "page 1: no usable text layer and Tesseract is not installed: not OCR'd"


def _undecodable_text_layer(path: Path) -> Path:
    """A text page whose font maps every code to a private-use character (a broken ToUnicode map)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "The council met on Tuesday to review the harbour budget.", fontsize=12)
    cmap = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Garbled def /CMapType 2 def\n"
        "1 begincodespacerange <00> <FF> endcodespacerange\n1 beginbfrange\n<20> <7E> <E020>\nendbfrange\n"
        "endcmap CMapName currentdict /CMap defineresource pop end end\n"
    )
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, cmap.encode())
    doc.xref_set_key(page.get_fonts()[0][0], "ToUnicode", f"{xref} 0 R")
    doc.save(path)
    return path


def test_without_tesseract_a_garbled_invisible_layer_is_kept_unchecked_and_needs_ocr(tmp_path: Path):
    result = extract_pdf(_scan_with_layer(tmp_path / "scan.pdf", GARBLED), tessdata=None)  # OCR asked, none here
    (row,) = result.pages
    assert row["text_source"] == "pdf" and " ".join(row["text"].split()) == GARBLED  # nothing better to give
    assert result.warnings == [UNCHECKED]
    assert result.ocr_needed_missing == 1  # so the run exits 3 and the file is not cached


def test_with_ocr_turned_off_the_unchecked_layer_is_a_choice_not_a_missing_tesseract(tmp_path: Path):
    result = extract_pdf(_scan_with_layer(tmp_path / "scan.pdf", GARBLED), tessdata=None, ocr=False)
    assert result.warnings == [UNCHECKED] and result.ocr_needed_missing == 0


def test_without_tesseract_an_undecodable_text_layer_is_kept_and_its_page_named(tmp_path: Path):
    result = extract_pdf(_undecodable_text_layer(tmp_path / "glyphs.pdf"), tessdata=None)
    (row,) = result.pages
    assert not has_usable_text(row["text"]) and row["text_source"] == "pdf"  # kept as it is: no OCR to replace it
    assert result.warnings == [NO_TESSERACT] and result.ocr_needed_missing == 1


def test_an_unchecked_layer_is_not_cached_and_is_checked_once_tesseract_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    _scan_with_layer(folder / "scan.pdf", GARBLED)
    cache = tmp_path / "cache"
    with monkeypatch.context() as patch:
        patch.setattr(extract, "tessdata_dir", lambda: None)
        first = extract_corpus(folder, cache_dir=cache, workers=1, progress=False)
    assert first.ocr_missing and first.ocr_needed_missing == 1
    assert not list(cache.glob("*.json"))  # before: cached unchecked, and served so to every later run
    if TESSDATA is None:
        return
    second = extract_corpus(folder, cache_dir=cache, workers=1, progress=False)
    ((_, warning),) = second.warnings
    assert second.pages[0]["text_source"] == "ocr" and "does not match what the page shows" in warning


@needs_tesseract
def test_with_tesseract_the_same_pages_need_nothing_more(tmp_path: Path):
    result = extract_pdf(_undecodable_text_layer(tmp_path / "glyphs.pdf"), tessdata=TESSDATA)
    (row,) = result.pages
    assert row["text_source"] == "ocr" and "harbour budget" in row["text"] and result.ocr_needed_missing == 0
