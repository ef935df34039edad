"""A PDF whose xref stream and object streams are corrupt: MuPDF repairs it and finds no page. That is a damaged
file, and the error says so (it used to read "PDF has zero pages", as for a well-formed empty PDF)."""

from __future__ import annotations

from pathlib import Path

import pymupdf

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
