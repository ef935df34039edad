"""Right-to-left and mixed-direction text (issue 45, item 2): words stay words and numbers read in order.

Generated PDFs (PyMuPDF, DejaVu Sans for the Arabic and Hebrew glyphs) reproduce MuPDF's two defects: words glued
where the page shows a space (``كتاب2500``, ``استPython``) and a number drawn inside right-to-left text read
backwards (``٨٩٨١`` for ``١٨٩٨``). The real files are Debian's (``texlive-lang-arabic``); their tests skip when the
package, or poppler's ``pdftotext`` for the word recall, is not installed. ``MADQA_TEXLIVE_DOC`` points the tests
at another copy of ``/usr/share/doc/texlive-doc`` (an unpacked ``.deb``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import pymupdf
import pytest

from madqa.loading_script import pdf_content
from madqa.loading_script.pdf_bidi import rebuild_line
from madqa.loading_script.pdf_content import read_page
from madqa.loading_script.pdf_text import extract_pdf, normalise_text

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
pytestmark = pytest.mark.skipif(not DEJAVU.exists(), reason="fonts-dejavu-core is not installed")

ARABIC = "تأسست المكتبة عام 1898 وفيها 2500 كتاب"
HEBREW = "הספרייה נוסדה בשנת 1898 ויש בה 2500 ספרים"
PERSIAN_LATIN = "این برنامه با Python نوشته شده است"
ARABIC_DIGITS = "تأسست المكتبة عام ١٨٩٨ وأغلقت عام ١٩٣٣ في المدينة"


def _writer_pdf(path: Path, text: str) -> Path:
    """One line written right to left by PyMuPDF's TextWriter: space glyphs between words, Latin and numbers
    left to right; MuPDF reads it in drawing order and glues the words at each change of direction."""
    doc = pymupdf.open()
    page = doc.new_page()
    writer = pymupdf.TextWriter(page.rect)
    writer.append((60, 100), text, font=pymupdf.Font(fontfile=str(DEJAVU)), fontsize=12, right_to_left=True)
    writer.write_text(page)
    page.insert_text((60, 140), "Catalogue entry 7, shelf B (left to right)", fontsize=11)
    doc.save(path)
    return path


def _html_pdf(path: Path, text: str) -> Path:
    """A shaped right-to-left paragraph (PyMuPDF's Story with HarfBuzz): the digits are drawn left to right."""
    doc = pymupdf.open()
    page = doc.new_page()
    css = f"@font-face {{font-family: dv; src: url({DEJAVU});}} body {{font-family: dv; font-size: 14px;}}"
    page.insert_htmlbox(pymupdf.Rect(50, 50, 550, 200), f'<p dir="rtl">{text}</p>', css=css)
    doc.save(path)
    return path


@pytest.mark.parametrize(
    ("text", "glued"),
    [(ARABIC, "كتاب2500"), (HEBREW, "ספרים2500"), (PERSIAN_LATIN, "استPython")],
    ids=["arabic", "hebrew", "persian-latin"],
)
def test_right_to_left_words_are_separated_as_the_page_shows_them(tmp_path: Path, text: str, glued: str):
    path = _writer_pdf(tmp_path / "rtl.pdf", text)
    with pymupdf.open(path) as doc:
        assert glued in doc[0].get_text()  # MuPDF alone: the defect this fixes
    (row,) = extract_pdf(path, tessdata=None, ocr=False).pages
    assert row["text"] == f"{text}\nCatalogue entry 7, shelf B (left to right)\n"


def test_numbers_inside_right_to_left_text_keep_their_digit_order(tmp_path: Path):
    path = _html_pdf(tmp_path / "digits.pdf", ARABIC_DIGITS)
    with pymupdf.open(path) as doc:
        assert "٨٩٨١" in doc[0].get_text()  # MuPDF alone: the number read backwards
    (row,) = extract_pdf(path, tessdata=None, ocr=False).pages
    assert row["text"].split() == ARABIC_DIGITS.split()  # NFKC: the shaped forms are read as the letters written


def test_left_to_right_lines_keep_mupdf_text_exactly(tmp_path: Path):
    path = _writer_pdf(tmp_path / "rtl.pdf", HEBREW)
    with pymupdf.open(path) as doc:
        page = doc.new_page()
        page.insert_text((72, 72), "Invoice  no. 12 -- total 1,898.00 (paid)", fontsize=11)
        page.insert_text((72, 90), "Second line, x=3", fontsize=11)
        assert read_page(page).text == page.get_text()
        assert read_page(doc[0]).text.splitlines()[1] == doc[0].get_text().splitlines()[-1]  # the Latin line


def _raw_line(*spans: list[tuple[str, float, float]]) -> dict:
    """A line of ``get_text("rawdict")``: spans of (character, x0, width) at 10 pt, in drawing order."""
    return {
        "dir": (1.0, 0.0),
        "spans": [
            {"size": 10.0, "chars": [{"c": c, "bbox": (x0, 0.0, x0 + width, 10.0)} for c, x0, width in span]}
            for span in spans
        ],
    }


def _drawn_left_to_right(text: str, *, x: float = 0.0) -> list[tuple[str, float, float]]:
    """``text`` as the page shows it from left to right, 5 pt a character; a space is a 5 pt gap, not a glyph."""
    chars = []
    for i, c in enumerate(text):
        if c != " ":
            chars.append((c, x + 5.0 * i, 5.0))
    return chars


def test_hidden_kinds_survive_the_rebuild():
    """Each rebuilt span keeps the hidden kind of the span its glyphs came from (the hidden-text rule needs it)."""
    # drawn right to left: "אב" shows, then "גד" is invisible, one word gap (5 pt) apart
    raw = _raw_line([("א", 40.0, 5.0), ("ב", 35.0, 5.0)], [("ג", 25.0, 5.0), ("ד", 20.0, 5.0)])
    spans = rebuild_line(raw, [None, "render mode 3 (invisible)"])
    assert [(s.text, s.hidden) for s in spans] == [("אב ", None), ("גד", "render mode 3 (invisible)")]


def test_numbers_in_a_latin_line_with_a_hebrew_word_stay_in_place():
    """Rule W7: in a mostly Latin line, numbers after Latin words are Latin; two of them are not swapped."""
    raw = _raw_line(_drawn_left_to_right("Total 12 34 kg לקש"))  # the Hebrew word shows right to left
    assert "".join(s.text for s in rebuild_line(raw, [None])) == "Total 12 34 kg שקל"


def test_marks_stay_with_their_letters():
    """Niqqud and harakat follow the letter they were drawn with, whichever way the word is read."""
    shalom = [("ש", 40.0, 5.0), ("\u05b8", 40.0, 0.0), ("\u05c1", 40.0, 0.0), ("ל", 35.0, 5.0)]
    shalom += [("ו", 30.0, 5.0), ("\u05b9", 30.0, 0.0), ("ם", 25.0, 5.0)]
    assert "".join(s.text for s in rebuild_line(_raw_line(shalom), [None])) == "שָׁלוֹם"


def test_a_line_whose_glyphs_have_no_width_is_left_as_mupdf_read_it():
    """Without widths every gap looks like a space: the rebuild declines rather than split each letter."""
    flat = [("ש", 40.0, 0.0), ("ל", 35.0, 0.0), ("ו", 30.0, 0.0), ("ם", 25.0, 5.0)]
    assert rebuild_line(_raw_line(flat), [None]) is None
    wide = [(c, x0, 5.0) for c, x0, _ in flat]
    assert "".join(s.text for s in rebuild_line(_raw_line(wide), [None]) or []) == "שלום"


# Real files: Debian's texlive-lang-arabic documentation (XeTeX's Persian; arabi's Type 3 Arabic).
#: Where the documentation is: MADQA_TEXLIVE_DOC, else what scripts/bootstrap.sh unpacks into the venv, else Debian's
#: own place (the packages installed).
TEXLIVE_DOC = next(
    (
        path
        for path in (
            Path(os.environ.get("MADQA_TEXLIVE_DOC", "/nonexistent")),
            Path(sys.prefix) / "share/texlive-doc/usr/share/doc/texlive-doc",
            Path("/usr/share/doc/texlive-doc"),
        )
        if path.is_dir()
    ),
    Path("/usr/share/doc/texlive-doc"),
)
LSHORT_PERSIAN = TEXLIVE_DOC / "latex/lshort-persian/lshort.pdf"
ARABI_SAMPLEBOOK = TEXLIVE_DOC / "latex/arabi/samplebook.pdf"
CJHEBREW = TEXLIVE_DOC / "latex/cjhebrew/cjhebrew.pdf"  # texlive-lang-other
_BIDI_CONTROLS = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # pdftotext wraps runs in embeddings


def _words(text: str) -> Counter[str]:
    """Words as a reader counts them: NFKC, no bidi controls, punctuation at either end dropped (pdftotext puts a
    right-to-left sentence's full stop on the next word, ``.این``)."""
    words: Counter[str] = Counter()
    for token in _BIDI_CONTROLS.sub("", normalise_text(text)).split():
        start, end = 0, len(token)
        while start < end and unicodedata.category(token[start])[0] in "PS":
            start += 1
        while end > start and unicodedata.category(token[end - 1])[0] in "PS":
            end -= 1
        if start < end:
            words[token[start:end]] += 1
    return words


@pytest.mark.skipif(not LSHORT_PERSIAN.exists(), reason="texlive-lang-arabic's lshort-persian is not installed")
@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils' pdftotext is not installed")
def test_persian_word_recall_against_pdftotext():
    reference = subprocess.run(
        ["pdftotext", "-q", str(LSHORT_PERSIAN), "-"], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    result = extract_pdf(LSHORT_PERSIAN, tessdata=None, ocr=False)
    assert len(result.pages) == reference.count("\f")
    ours, theirs = _words("\n".join(row["text"] for row in result.pages)), _words(reference)
    recall = sum(min(count, ours[word]) for word, count in theirs.items()) / sum(theirs.values())
    assert recall >= 0.9, f"word recall {recall:.3f} against pdftotext"


@pytest.mark.skipif(not ARABI_SAMPLEBOOK.exists(), reason="texlive-lang-arabic's arabi samplebook is not installed")
def test_arabic_years_read_in_order_on_the_samplebook():
    """Page 5 (a Type 3 font pdftotext cannot read) shows the years 1898 and 1933 in Arabic-Indic digits."""
    with pymupdf.open(ARABI_SAMPLEBOOK) as doc:
        text = normalise_text(read_page(doc[4]).text)
    assert "(١٨٩٨ الإسكندرية - ١٩٨٧ القاهرة" in text
    assert "(١٩٣٣)" in text
    assert "٨٩٨١" not in text and "٣٣٩١" not in text


@pytest.mark.skipif(not CJHEBREW.exists(), reason="texlive-lang-other's cjhebrew documentation is not installed")
def test_a_hebrew_word_in_an_english_sentence_is_a_word_of_its_own():
    with pymupdf.open(CJHEBREW) as doc:
        assert ",דגבאwhich" in doc[0].get_text()  # MuPDF alone
        text = read_page(doc[0]).text
    assert "the result will be דגבא, which is in most cases" in text


def test_a_failing_rebuild_keeps_the_page_with_mupdfs_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    def broken(raw_line: dict, hidden: list) -> list:
        raise KeyError("chars")

    monkeypatch.setattr(pdf_content, "rebuild_line", broken)
    path = _writer_pdf(tmp_path / "rtl.pdf", HEBREW)
    with pymupdf.open(path) as doc:
        assert read_page(doc[0]).text == doc[0].get_text()
    assert "page 1: right-to-left lines not rebuilt; MuPDF's text kept" in caplog.text
