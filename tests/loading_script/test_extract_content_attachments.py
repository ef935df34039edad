"""Embedded files and portfolios (issue 28, item 4): attached PDFs become documents of their own, named after
their parent; other attached files are named in a warning. PDFs are generated here with PyMuPDF."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from helpers.pdfs import one_page_pdf

from madqa.loading_script.extract import extract_corpus
from madqa.loading_script.pdf_text import extract_pdf

CSV = b"item,cost\npier,12000\n"


def _parent(path: Path, *, portfolio: bool = False) -> Path:
    doc = pymupdf.open(stream=one_page_pdf("Harbour report: see the annexed budget tables."))
    inner = one_page_pdf("Nested annex: storm damage estimate for the breakwater.")
    doc.embfile_add(
        "annex.pdf",
        one_page_pdf("Annex A: the ferry pier budget of 2024.", {"storm.pdf": inner}),
        filename="annex.pdf",
        ufilename="annex.pdf",
    )
    doc.embfile_add("tables.csv", CSV, filename="tables.csv")
    doc[0].add_file_annot((400, 100), one_page_pdf("Signed minutes of the March meeting."), "minutes.pdf")
    if portfolio:
        doc.xref_set_key(doc.pdf_catalog(), "Collection", "<< /Type /Collection /View /D >>")
    doc.save(path)
    return path


def test_attached_pdfs_are_documents_of_their_own_and_other_files_are_named(tmp_path: Path):
    with pymupdf.open(_parent(tmp_path / "report.pdf")) as doc:
        assert "Annex A" not in doc[0].get_text()  # MuPDF's text layer: only the parent's own page

    result = extract_pdf(tmp_path / "report.pdf", tessdata=None, ocr=False)
    assert result.error is None
    by_name = {child.document: child for child in result.attachments}
    assert sorted(by_name) == ["report.pdf#annex.pdf", "report.pdf#minutes.pdf"]
    annex = by_name["report.pdf#annex.pdf"]
    assert annex.parent == "report.pdf" and annex.pages[0]["document"] == "report.pdf#annex.pdf"
    assert "ferry pier budget" in annex.pages[0]["text"]
    (storm,) = annex.attachments  # an attachment's attachment, named after it
    assert storm.document == "report.pdf#annex.pdf#storm.pdf" and "storm damage" in storm.pages[0]["text"]
    assert f"attached file 'tables.csv' ({len(CSV)} bytes) is not a PDF: not extracted" in result.warnings
    assert "attached PDF 'annex.pdf' is extracted as its own document (this one's name + '#annex.pdf')" in (
        result.warnings
    )


def test_the_corpus_holds_attached_documents_with_their_parent_also_from_the_cache(tmp_path: Path):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    _parent(folder / "report.pdf", portfolio=True)
    runs = [
        extract_corpus(folder, cache_dir=tmp_path / "cache", workers=1, isolate=True, ocr=False, progress=False)
        for _ in range(2)
    ]
    first, cached = runs
    assert cached.cached == 4  # the file and its three attached PDFs
    for report in runs:
        assert sorted({row["document"] for row in report.pages}) == [
            "report.pdf",
            "report.pdf#annex.pdf",
            "report.pdf#annex.pdf#storm.pdf",
            "report.pdf#minutes.pdf",
        ]
        assert report.parents == {
            "report.pdf#annex.pdf": "report.pdf",
            "report.pdf#minutes.pdf": "report.pdf",
            "report.pdf#annex.pdf#storm.pdf": "report.pdf#annex.pdf",
        }
        assert ("report.pdf", "PDF portfolio of 3 file(s): each PDF in it is its own document") in report.warnings
        assert report.num_pages["report.pdf#minutes.pdf"] == 1
    assert first.pages == cached.pages


def test_an_unreadable_attachment_is_skipped_by_name(tmp_path: Path):
    doc = pymupdf.open(stream=one_page_pdf("Cover page of the bundle."))
    doc.embfile_add("broken.pdf", b"%PDF-1.7\n this is not a PDF body", filename="broken.pdf")
    doc.save(tmp_path / "bundle.pdf")
    report = extract_corpus([tmp_path / "bundle.pdf"], workers=1, ocr=False, progress=False)
    assert [name for name, _ in report.skipped] == ["bundle.pdf#broken.pdf"]
    assert {row["document"] for row in report.pages} == {"bundle.pdf"}
