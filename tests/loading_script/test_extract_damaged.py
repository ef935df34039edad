"""A PDF whose xref stream and object streams are corrupt: MuPDF repairs it and finds no page. That is a damaged
file, and the error says so (it used to read "PDF has zero pages", as for a well-formed empty PDF). And a repaired
file whose pages read while one object stream is corrupt keeps its pages (issue 45: the repair-warning pass raised
FzErrorFormat after the pages were read, and the whole file was skipped)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from helpers.pdfs import corrupt_object_stream_pdf

from madqa.loading_script.pdf_text import extract_pdf


def _pdf(path: Path) -> Path:
    doc = pymupdf.open()
    for i in range(3):
        doc.new_page().insert_text((72, 72), f"hello page {i}")
    doc.save(path, use_objstms=1, garbage=4, deflate=True)  # pages inside object streams, a compressed xref
    return path


def test_a_file_repaired_to_no_page_is_named_damaged(tmp_path: Path) -> None:
    data = bytearray(_pdf(tmp_path / "good.pdf").read_bytes())
    for marker in (b"/Type/XRef", b"/Type/ObjStm"):  # garble the start of every such stream's data
        start = 0
        while (i := data.find(marker, start)) != -1:
            j = data.find(b"stream", i) + 7
            data[j : j + 30] = bytes(b ^ 0x5A for b in data[j : j + 30])
            start = i + 1
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(bytes(data))
    result = extract_pdf(bad, tessdata=None, ocr=False)
    assert result.pages == [] and result.error is not None
    assert result.error.startswith("damaged PDF: MuPDF repaired it and recovered no page"), result.error
    assert "object stream" in result.error or "xref" in result.error  # MuPDF's own words, for the maintainer
    assert extract_pdf(tmp_path / "good.pdf", tessdata=None, ocr=False).error is None


def test_a_well_formed_pdf_without_pages_still_says_so(tmp_path: Path) -> None:
    body = b"%PDF-1.4\n"
    catalog = len(body)
    body += b"1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    pages = len(body)
    body += b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n"
    xref = len(body)  # a correct xref table: nothing to repair
    body += (
        b"xref\n0 3\n0000000000 65535 f \n"
        + f"{catalog:010d} 00000 n \n{pages:010d} 00000 n \n".encode()
        + b"trailer<</Size 3/Root 1 0 R>>\nstartxref\n"
        + str(xref).encode()
        + b"\n%%EOF\n"
    )
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(body)
    assert extract_pdf(empty, tessdata=None, ocr=False).error == "PDF has zero pages"


def test_a_corrupt_object_stream_met_after_the_pages_costs_no_page(tmp_path: Path) -> None:
    path = tmp_path / "minutes.pdf"
    path.write_bytes(corrupt_object_stream_pdf(["First page of the harbour minutes", "Second page: dredging permit"]))
    with pymupdf.open(path) as doc:  # what MuPDF itself reads, and where it fails
        assert doc.is_repaired and [page.get_text().strip() for page in doc] == [
            "First page of the harbour minutes",
            "Second page: dredging permit",
        ]
        with pytest.raises(Exception, match="corrupt object stream"):
            [doc.xref_get_key(xref, "Type") for xref in range(1, doc.xref_length())]
    result = extract_pdf(path, tessdata=None, ocr=False)
    assert result.error is None
    assert [(row["page"], row["text"].strip(), row["text_source"]) for row in result.pages] == [
        (1, "First page of the harbour minutes", "pdf"),
        (2, "Second page: dredging permit", "pdf"),
    ]
    assert result.warnings == [
        "damaged file (e.g. truncated), repaired by MuPDF: pages may be missing or incomplete; "
        "2 object(s) could not be read"
    ]
