"""Attachments that would cost their parent (issue 45 items 3 and 4 of "Why"): an attached file is read as a
bounded stream (a 3 GiB attachment of a 3 MB file is stopped at the size limit, never held whole, and the parent
keeps its page); identical attached PDFs are extracted once, the copies recorded as references; attached documents
per file are capped. The bombs are generated in milliseconds (:func:`helpers.pdfs.zeros_flate`)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from helpers.pdfs import one_page_pdf, pdf_with_raw_attachment, zeros_flate

from madqa.loading_script import pdf_attachments
from madqa.loading_script.extract import extract_corpus
from madqa.loading_script.pdf_text import extract_pdf

GIB = 1 << 30


@pytest.mark.slow
def test_a_3_gib_attachment_of_a_3_mb_file_is_skipped_by_name_and_the_parent_keeps_its_page(tmp_path: Path):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    bomb = folder / "filing.pdf"
    bomb.write_bytes(
        pdf_with_raw_attachment("Harbour board filing, page one.", "exhibit.pdf", zeros_flate(b"%PDF-1.7\n", 3 * GIB))
    )
    with pymupdf.open(bomb) as doc:
        assert doc.embfile_info(0)["length"] < 4 << 20  # the attachment's compressed stream: 3 MB on disk
    assert 2 << 20 < bomb.stat().st_size < 4 << 20
    # in a worker under its default memory limit: decoding the attachment whole would end it (as it did: signal 9)
    report = extract_corpus(folder, workers=1, isolate=True, ocr=False, progress=False)
    assert report.skipped == []
    assert [(row["document"], row["text"].strip()) for row in report.pages] == [
        ("filing.pdf", "Harbour board filing, page one.")
    ]
    assert report.warnings == [
        (
            "filing.pdf",
            "attached PDF 'exhibit.pdf' is larger than 512 MiB decompressed (the attachment size limit): "
            "not extracted",
        )
    ]


def test_an_attachment_that_is_no_pdf_is_named_with_its_size_bound(tmp_path: Path):
    path = tmp_path / "filing.pdf"
    path.write_bytes(pdf_with_raw_attachment("Cover page of the bundle.", "zeros.bin", zeros_flate(b"", GIB)))
    result = extract_pdf(path, tessdata=None, ocr=False)
    assert [row["text"].strip() for row in result.pages] == ["Cover page of the bundle."]
    assert result.warnings == ["attached file 'zeros.bin' (more than 512 MiB) is not a PDF: not extracted"]


def _fan_out(levels: int, copies: int) -> bytes:
    """A PDF listing the same PDF ``copies`` times, which lists the same PDF ``copies`` times, ``levels`` deep."""
    inner = one_page_pdf(f"Level {levels} annex text.")
    for level in range(levels - 1, -1, -1):
        inner = one_page_pdf(f"Level {level} annex text.", {f"copy{i}.pdf": inner for i in range(copies)})
    return inner


def test_the_same_attached_pdf_listed_ten_times_per_level_is_one_document_per_level(tmp_path: Path):
    path = tmp_path / "fan.pdf"
    path.write_bytes(_fan_out(3, 10))
    assert path.stat().st_size < 64 << 10
    report = extract_corpus([path], workers=1, ocr=False, progress=False)
    assert sorted(report.num_pages) == [
        "fan.pdf",
        "fan.pdf#copy0.pdf",
        "fan.pdf#copy0.pdf#copy0.pdf",
        "fan.pdf#copy0.pdf#copy0.pdf#copy0.pdf",
    ]  # was 1,110 documents
    references = [(doc, w) for doc, w in report.warnings if "not extracted again" in w]
    assert len(references) == 27  # 9 copies per level, each a reference
    assert (
        "fan.pdf#copy0.pdf",
        "attached PDF 'copy9.pdf' has the same bytes as the attached PDF 'copy0.pdf#copy0.pdf' of this file "
        f"(sha256 {report.sha256['fan.pdf#copy0.pdf#copy0.pdf'][:12]}): a reference to that document, "
        "not extracted again",
    ) in references


def test_attached_documents_per_file_are_capped_with_a_message(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(pdf_attachments, "MAX_ATTACHED_DOCUMENTS", 3)
    path = tmp_path / "bundle.pdf"
    path.write_bytes(one_page_pdf("Bundle cover.", {f"annex{i}.pdf": one_page_pdf(f"Annex {i}.") for i in range(5)}))
    result = extract_pdf(path, tessdata=None, ocr=False)
    assert [child.name_in_parent for child in result.attachments] == ["annex0.pdf", "annex1.pdf", "annex2.pdf"]
    assert [w for w in result.warnings if "at most" in w] == [
        "attached PDF 'annex3.pdf' not extracted: at most 3 attached documents per file",
        "attached PDF 'annex4.pdf' not extracted: at most 3 attached documents per file",
    ]
