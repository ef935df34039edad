"""Reading order from the layout (issue 28, items 7 and 8): vertical CJK joined into lines, and two columns drawn
row by row read one column after the other. PDFs are generated here with PyMuPDF."""

from __future__ import annotations

import difflib
from pathlib import Path

import pymupdf

from madqa.loading_script.pdf_layout import Line, Span, column_order, join_vertical
from madqa.loading_script.pdf_text import extract_pdf

#: Two Japanese columns of vertical writing, read right to left (the first is the rightmost). The search index
#: keeps a run of CJK characters as one term (``\w+``) and drops one-character terms: MuPDF's one character per
#: line gave the page no term at all.
VERTICAL = ["東京都庁舎", "縦書き文書"]
LEFT = [
    "The harbour committee met on Tuesday morning",
    "to review the budget for the new ferry pier",
    "and heard a report on the storm damage done",
    "to the breakwater during the winter months.",
    "Members agreed that repairs must start soon.",
]
RIGHT = [
    "In other business the council approved the",
    "permit for the warehouse on Harbor Lane and",
    "asked the engineer for an estimate of costs",
    "before the next meeting of the full council",
    "which is planned for the first week of May.",
]


def _vertical_pdf(path: Path) -> Path:
    """Each character placed on its own, stacked top to bottom; columns right to left."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "案内", fontsize=12, fontname="japan")  # a short horizontal title
    for column, text in enumerate(VERTICAL):
        x = 420 - column * 32
        for i, char in enumerate(text):
            page.insert_text((x, 110 + i * 20), char, fontsize=16, fontname="japan")
    doc.save(path)
    return path


def _wmode1_pdf(path: Path) -> Path:
    """Real vertical writing: an embedded CJK font switched to ``/Identity-V`` (``wmode`` 1), one string a column.

    PyMuPDF writes a ``/Identity-H`` Type0 font (glyph ids as CIDs, with a ToUnicode map); the same CIDs under
    ``/Identity-V`` are set top to bottom. MuPDF returns each character as a ``wmode`` 1 line of its own.
    """
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "案内", fontsize=12, fontname="japan")  # a short horizontal title
    font = page.insert_font(fontname="tate", fontbuffer=pymupdf.Font("japan").buffer)
    for column, text in enumerate(VERTICAL):
        page.insert_text((420 - column * 32, 110), text, fontsize=16, fontname="tate")
    doc.xref_set_key(font, "Encoding", "/Identity-V")
    doc.subset_fonts()
    doc.save(path, garbage=3, deflate=True)
    return path


def _row_by_row_pdf(path: Path) -> Path:
    """Two columns whose lines the content stream alternates: left line 1, right line 1, left line 2, …"""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 60), "Harbour Committee: Minutes of the March Meeting, Both Columns Below", fontsize=13)
    for i, (left, right) in enumerate(zip(LEFT, RIGHT, strict=True)):
        page.insert_text((50, 100 + 14 * i), left, fontsize=10)
        page.insert_text((320, 100 + 14 * i), right, fontsize=10)
    doc.save(path)
    return path


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, " ".join(a.split()), " ".join(b.split())).ratio()


def test_vertical_japanese_is_one_line_per_column_and_searchable(tmp_path: Path):
    from madqa.agents.corpus.search import open_index

    path = _vertical_pdf(tmp_path / "tate.pdf")
    with pymupdf.open(path) as doc:
        assert "東京都庁舎" not in doc[0].get_text()  # MuPDF alone: one character per line
    result = extract_pdf(path, tessdata=None, ocr=False)
    (row,) = result.pages
    assert row["text"] == "案内\n" + "\n".join(VERTICAL) + "\n"  # right column first
    with open_index(result.pages, index_dir=tmp_path / "index", progress=False) as index:
        assert [(h.document, h.page) for h in index.search("東京都庁舎")] == [("tate.pdf", 1)]
        assert [(h.document, h.page) for h in index.search("縦書き文書")] == [("tate.pdf", 1)]


def test_vertical_writing_mode_one_lines_are_joined_per_column(tmp_path: Path):
    path = _wmode1_pdf(tmp_path / "tate-v.pdf")
    with pymupdf.open(path) as doc:
        lines = [line for block in doc[0].get_text("dict")["blocks"] for line in block["lines"]]
        assert {line["wmode"] for line in lines} == {0, 1}  # a real vertical font, not stacked horizontal text
        assert "東京都庁舎" not in doc[0].get_text()  # MuPDF alone: one character per line
    (row,) = extract_pdf(path, tessdata=None, ocr=False).pages
    assert row["text"] == "案内\n" + "\n".join(VERTICAL) + "\n"  # right column first


def test_two_columns_drawn_row_by_row_come_out_column_after_column(tmp_path: Path):
    path = _row_by_row_pdf(tmp_path / "columns.pdf")
    expected = "Harbour Committee: Minutes of the March Meeting, Both Columns Below\n" + "\n".join(LEFT + RIGHT)
    with pymupdf.open(path) as doc:
        stream_order = doc[0].get_text()
    assert _similarity(stream_order, expected) < 0.7  # interleaved
    (row,) = extract_pdf(path, tessdata=None, ocr=False).pages
    assert _similarity(row["text"], expected) >= 0.95
    text = row["text"]
    assert max(text.index(line) for line in LEFT) < min(text.index(line) for line in RIGHT)


def _line(x0: float, y0: float, x1: float, text: str) -> Line:
    return Line(x0, y0, x1, y0 + 10, [Span(text)])


def test_a_table_of_short_cells_keeps_its_row_order():
    """Short cells in two groups are not prose columns: rows stay rows."""
    rows = [("Item", "Price"), ("Ferry ticket", "12.50"), ("Parking", "4.00"), ("Pier fee", "1.00")]
    lines = [
        line
        for i, (a, b) in enumerate(rows)
        for line in (_line(50, 100 + 14 * i, 50 + 8 * len(a), a), _line(400, 100 + 14 * i, 400 + 6 * len(b), b))
    ]
    assert column_order(lines) == lines


def test_horizontal_text_is_left_alone_by_the_vertical_join():
    lines = [_line(50, 100, 300, "The harbour committee met"), _line(50, 114, 300, "on Tuesday morning.")]
    assert join_vertical(lines) == lines
