"""A scan with a short real text layer (issue 45, items 1 and 4): the page is still read, and both are kept.

Generated with PyMuPDF: 26 lines of text rendered into an image that fills the page (a scan), then real text added
over it: a Bates stamp in the margin, a filled form field, an unchecked check box. Also an empty form, a short
exact text layer that OCR misreads (``Page1`` → ``Pagel``), and invisible text on a blank page."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from helpers.pdfs import add_form_field
from helpers.scans import SHOWN, TESSDATA, _scan_with_layer, needs_tesseract

from madqa.loading_script.extract import extract_corpus
from madqa.loading_script.pdf_hidden_text import word_containment
from madqa.loading_script.pdf_text import EXTRACTOR_VERSION, extract_pdf

BODY = "\n".join(
    f"{n}. The witness stated that the harbour office received permit {1000 + n} on Tuesday morning."
    for n in range(26)
)
STAMP = "CONFIDENTIAL SMITH-000123"
CASE = "2024-CV-00917"


def _stamp(page: pymupdf.Page) -> None:
    page.insert_text((400, 780), STAMP, fontsize=8)


def _filled_field(page: pymupdf.Page) -> None:
    add_form_field(
        page, pymupdf.PDF_WIDGET_TYPE_TEXT, "case", (400, 20, 560, 36), field_label="Case number", field_value=CASE
    )


def _unchecked_box(page: pymupdf.Page) -> None:
    add_form_field(
        page, pymupdf.PDF_WIDGET_TYPE_CHECKBOX, "sealed", (40, 770, 52, 782), field_label="Filed under seal"
    )


def _scan(path: Path, add=None) -> Path:
    """A US-letter page that is one 150 dpi image of :data:`BODY`, with ``add(page)`` drawn over it."""
    src = pymupdf.open()
    sheet = src.new_page()
    sheet.insert_textbox(pymupdf.Rect(54, 60, 560, 760), BODY, fontsize=10)
    pix = sheet.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(page.rect, pixmap=pix)
    if add is not None:
        add(page)
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def scan_alone(tmp_path_factory: pytest.TempPathFactory) -> str:
    """What the extractor reads from the scan without any text layer (OCR alone)."""
    if TESSDATA is None:
        pytest.skip("needs Debian tesseract-ocr")
    result = extract_pdf(_scan(tmp_path_factory.mktemp("alone") / "alone.pdf"), tessdata=TESSDATA)
    (row,) = result.pages
    assert row["text_source"] == "ocr" and word_containment(BODY, row["text"]) >= 0.8
    return row["text"]


@needs_tesseract
@pytest.mark.parametrize(
    ("add", "kept"), [(_stamp, STAMP), (_filled_field, f"Case number: {CASE}")], ids=["bates-stamp", "filled-field"]
)
def test_a_scan_with_a_short_text_layer_keeps_the_layer_and_the_ocr(tmp_path: Path, scan_alone: str, add, kept):
    result = extract_pdf(_scan(tmp_path / "scan.pdf", add), tessdata=TESSDATA)
    (row,) = result.pages
    assert kept in row["text"].splitlines()  # the exact layer line
    assert word_containment(scan_alone, row["text"]) >= 0.8  # and what OCR reads from the scan alone
    assert row["text_source"] == "pdf+ocr"
    assert sum(STAMP in line for line in row["text"].splitlines()) <= 1  # OCR's reading of the stamp not repeated
    (note,) = [w for w in result.warnings if "OCR" in w]
    assert note.startswith("page 1: ") and "kept" in note


@needs_tesseract
def test_an_empty_form_over_a_scan_adds_no_unchecked_lines_and_the_scan_is_read(tmp_path: Path, scan_alone: str):
    result = extract_pdf(_scan(tmp_path / "form.pdf", _unchecked_box), tessdata=TESSDATA)
    (row,) = result.pages
    assert "unchecked" not in row["text"] and "seal" not in row["text"]
    assert word_containment(scan_alone, row["text"]) >= 0.8 and row["text_source"] == "ocr"


def test_an_empty_form_adds_one_line_per_filled_value_and_none_per_unchecked_box(tmp_path: Path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 60), "Security questionnaire, part 2 of the personnel form", fontsize=12)
    for n in range(5):
        page.insert_text((70, 110 + 20 * n), f"Answer {n} applies", fontsize=10)
        add_form_field(page, pymupdf.PDF_WIDGET_TYPE_CHECKBOX, f"q{n}", (50, 100 + 20 * n, 62, 112 + 20 * n))
    for n, choice in enumerate(("Yes", "No")):  # a radio group of two buttons, none selected
        page.insert_text((70, 230 + 20 * n), choice, fontsize=10)
        add_form_field(page, pymupdf.PDF_WIDGET_TYPE_RADIOBUTTON, "consent", (50, 220 + 20 * n, 62, 232 + 20 * n))
    for widget in page.widgets():  # PyMuPDF switches a new radio button on: off, as in a form nobody filled
        doc.xref_set_key(widget.xref, "AS", "/Off")
    doc.save(tmp_path / "empty.pdf")
    (row,) = extract_pdf(tmp_path / "empty.pdf", tessdata=None, ocr=False).pages
    assert "unchecked" not in row["text"] and row["text"].splitlines()[0].startswith("Security questionnaire")
    assert row["text"].count("\n") == 1 + 5 + 2  # the page's own lines, no line per widget


@needs_tesseract
def test_an_exact_short_text_layer_wins_a_tie_against_ocr(tmp_path: Path):
    doc = pymupdf.open()
    for n in range(1, 5):
        doc.new_page(width=200, height=100).insert_text((20, 50), f"Page{n}", fontsize=12)
    doc.save(tmp_path / "short.pdf")
    result = extract_pdf(tmp_path / "short.pdf", tessdata=TESSDATA)
    assert [row["text"] for row in result.pages] == [f"Page{n}\n" for n in range(1, 5)]
    assert {row["text_source"] for row in result.pages} == {"pdf"}


@needs_tesseract
def test_invisible_text_on_a_blank_page_is_dropped_and_the_warning_says_the_page_is_empty(tmp_path: Path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "Hello world and more invisible words", fontsize=11, render_mode=3)
    doc.save(tmp_path / "blank.pdf")
    result = extract_pdf(tmp_path / "blank.pdf", tessdata=TESSDATA)
    (row,) = result.pages
    assert row["text"] == "" and row["text_source"] == "none"
    (warning,) = result.warnings
    assert "replaced by OCR" not in warning and "dropped" in warning and "no text" in warning


@needs_tesseract
def test_a_kept_layer_and_ocr_page_is_cached_under_the_new_version_with_its_tesseract_data(tmp_path: Path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    path = _scan(folder / "filing.pdf", _stamp)
    cache = tmp_path / "cache"
    cache.mkdir()
    stale = cache / f"{'0' * 64}.v{int(EXTRACTOR_VERSION) - 1}.x.json"  # what the last version kept: not read
    stale.write_text('{"pages": [{"document": "filing.pdf", "page": 1, "text": "stale", "text_source": "pdf"}]}')
    report = extract_corpus(folder, cache_dir=cache, workers=1, progress=False)
    assert report.pages[0]["text_source"] == "pdf+ocr" and report.ocr_pages == 1
    (entry,) = [p for p in cache.glob("*.json") if p != stale]
    assert f".v{EXTRACTOR_VERSION}." in entry.name and path.exists()
    assert '"tesseract_data": [' in entry.read_text()  # re-OCR'd when the installed Tesseract data change
    again = extract_corpus(folder, cache_dir=cache, workers=1, progress=False)
    assert again.cached == 1 and again.pages == report.pages


def test_without_tesseract_a_short_layer_over_a_scan_is_kept_and_counted_as_needing_ocr(tmp_path: Path):
    result = extract_pdf(_scan(tmp_path / "scan.pdf", _stamp), tessdata=None)
    (row,) = result.pages
    assert row["text"] == f"{STAMP}\n" and row["text_source"] == "pdf" and result.ocr_needed_missing == 1
    (note,) = result.warnings
    assert note.startswith("page 1: short text layer over a scan") and "Tesseract is not installed" in note
    assert extract_pdf(tmp_path / "scan.pdf", tessdata=None, ocr=False).warnings == []  # OCR not asked for


@needs_tesseract
def test_a_stamped_scan_whose_invisible_layer_is_dropped_keeps_the_stamp_and_the_ocr(tmp_path: Path):
    other = "Quarterly sales of garden furniture rose sharply in spring while umbrella stock remained unsold."
    with pymupdf.open(_scan_with_layer(tmp_path / "layer.pdf", other)) as doc:
        doc[0].insert_text((250, 292), STAMP, fontsize=7)
        doc.save(tmp_path / "stamped.pdf")
    result = extract_pdf(tmp_path / "stamped.pdf", tessdata=TESSDATA)
    (row,) = result.pages
    assert STAMP in row["text"].splitlines() and "Quarterly" not in row["text"]
    assert word_containment(SHOWN, row["text"]) >= 0.9 and row["text_source"] == "pdf+ocr"
    assert any(w.startswith("page 1: hidden text") for w in result.warnings)


def test_the_scan_layer_doctests_hold():
    import doctest

    from madqa.loading_script import pdf_scan_layer

    assert doctest.testmod(pdf_scan_layer).failed == 0
