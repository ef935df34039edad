"""The text layer's work per page (issue 28: the checks for hidden text, forms and layout had made it 1.6x raw
PyMuPDF time). Work is counted, not timed: each page is loaded once (attachments look again only at pages with
annotations), its text layer is read once, an ordinary page's letters are not counted, and nothing is rendered
without a light-coloured span. ``madqa bench extract`` measures the time."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from madqa.loading_script import pdf_hidden_text, pdf_text
from madqa.loading_script.pdf_layout import Line, Span
from madqa.loading_script.pdf_text import extract_pdf, has_usable_text, text_counts

PROSE = "The harbour committee met on Tuesday to review the budget for the new ferry pier and the breakwater."


def _pages(path: Path, n: int, *, annot_on: int | None = None) -> Path:
    doc = pymupdf.open()
    for i in range(n):
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 520, 300), f"Page {i + 1}. {PROSE}", fontsize=11)
        if i == annot_on:
            inner = pymupdf.open()
            inner.new_page().insert_text((72, 72), "Signed minutes of the March meeting.", fontsize=11)
            page.add_file_annot((400, 400), inner.tobytes(), "minutes.pdf")
    doc.save(path)
    return path


def _count(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """From now on, count page loads, text-layer passes (``get_textpage``) and renders."""
    calls: dict[str, list] = {"load_page": [], "get_textpage": [], "get_pixmap": []}
    load, get_textpage, get_pixmap = pymupdf.Document.load_page, pymupdf.Page.get_textpage, pymupdf.Page.get_pixmap

    def counting_load(self, *args, **kwargs):
        page = load(self, *args, **kwargs)
        calls["load_page"].append(page.number)
        return page

    def counting_get_textpage(self, *args, **kwargs):
        calls["get_textpage"].append(self.number)
        return get_textpage(self, *args, **kwargs)

    def counting_get_pixmap(self, *args, **kwargs):
        calls["get_pixmap"].append(self.number)
        return get_pixmap(self, *args, **kwargs)

    monkeypatch.setattr(pymupdf.Document, "load_page", counting_load)
    monkeypatch.setattr(pymupdf.Page, "get_textpage", counting_get_textpage)
    monkeypatch.setattr(pymupdf.Page, "get_pixmap", counting_get_pixmap)
    return calls


def test_each_page_is_loaded_once_and_its_text_layer_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = _pages(tmp_path / "five.pdf", 5)
    counted = _count(monkeypatch)
    result = extract_pdf(path, tessdata=None, ocr=False)
    assert [row["text_source"] for row in result.pages] == ["pdf"] * 5 and result.warnings == []
    assert counted["load_page"] == [0, 1, 2, 3, 4]  # the attachment check loads no page again
    assert counted["get_textpage"] == [0, 1, 2, 3, 4]  # one structured-text pass a page (get_text() makes one too)
    assert counted["get_pixmap"] == []  # black text: no background check


def test_only_a_page_with_annotations_is_looked_at_again_for_attached_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = _pages(tmp_path / "annot.pdf", 4, annot_on=2)
    counted = _count(monkeypatch)
    result = extract_pdf(path, tessdata=None, ocr=False)
    assert [child.document for child in result.attachments] == ["annot.pdf#minutes.pdf"]
    assert "Signed minutes" in result.attachments[0].pages[0]["text"]
    assert counted["load_page"][:5] == [0, 1, 2, 3, 2]  # then the attachment's own page 0


def test_an_ordinary_page_is_found_usable_without_counting_its_letters(monkeypatch: pytest.MonkeyPatch):
    def no_count(text: str) -> tuple[int, int]:
        raise AssertionError("letters counted")

    page = PROSE * 40
    monkeypatch.setattr(pdf_text, "text_counts", no_count)
    assert has_usable_text(page)
    monkeypatch.undo()
    # the exact count still decides every other case: short, garbled, glyph codes, CJK (a wide letter counts twice)
    for text in ("short text", "\ufffd" * 40 + "abc", "(cid:12)" * 40, "合同编号二〇二四", "a" * 15, "a_" * 20):
        letters, garbage = text_counts(text)
        assert has_usable_text(text) == (letters >= 16 and garbage <= 0.1 * (letters + garbage)), text


def test_a_line_joins_its_spans_once(monkeypatch: pytest.MonkeyPatch):
    line = Line(0, 0, 100, 10, [Span("visible "), Span("hidden", pdf_hidden_text.INVISIBLE), Span(" end")])
    assert (line.text(), line.text(hidden=True)) == ("visible  end", "visible hidden end")
    line.spans.clear()  # the layout steps ask many times; the text was joined at the first call
    assert (line.text(), line.text(hidden=True)) == ("visible  end", "visible hidden end")
