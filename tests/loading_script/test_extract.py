"""Page extraction: text layer, OCR, bad PDFs, the per-file cache, and a missing Tesseract."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pymupdf
import pytest
from helpers.pdfs import scanned_pdf

from madqa.loading_script import extract
from madqa.loading_script.extract import extract_corpus

pytestmark = pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian tesseract-ocr")


def _text_pdf(path: Path, lines: list[str]) -> Path:
    doc = pymupdf.open()
    for line in lines:
        page = doc.new_page()
        page.insert_text((72, 100), line, fontsize=12)
    doc.save(path)
    return path


def _zero_page_pdf(path: Path) -> Path:
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    body, offsets = b"%PDF-1.4\n", []
    for i, obj in enumerate(objs, start=1):
        offsets.append(len(body))
        body += f"{i} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(body)
    body += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    body += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    body += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(body)
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    _text_pdf(
        folder / "a_minutes.pdf",
        [
            "The council met on Tuesday to review the harbour budget.",
            "Second page lists the attendees of the meeting in full.",
        ],
    )
    scanned_pdf(folder / "b_scan.pdf", "Permit BP-4417 approved for Harbor Lane", dpi=200)
    (folder / "c_corrupt.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    enc = pymupdf.open()
    enc.new_page().insert_text((72, 100), "secret quarterly figures for the board", fontsize=12)
    enc.save(folder / "d_encrypted.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    _zero_page_pdf(folder / "e_empty.pdf")
    return folder


def test_text_layer_ocr_and_bad_files(corpus: Path, tmp_path: Path):
    report = extract_corpus(corpus, cache_dir=tmp_path / "cache", workers=2, progress=False)
    rows = {(r["document"], r["page"]): r for r in report.pages}
    assert rows[("a_minutes.pdf", 1)]["text_source"] == "pdf"
    assert "harbour budget" in rows[("a_minutes.pdf", 1)]["text"]
    assert rows[("a_minutes.pdf", 2)]["page"] == 2
    scan = rows[("b_scan.pdf", 1)]
    assert scan["text_source"] == "ocr" and "BP-4417" in scan["text"] and "Harbor Lane" in scan["text"]
    skipped = dict(report.skipped)
    assert set(skipped) == {"c_corrupt.pdf", "d_encrypted.pdf", "e_empty.pdf"}
    assert "encrypted" in skipped["d_encrypted.pdf"] and "zero pages" in skipped["e_empty.pdf"]
    assert report.ocr_pages == 1 and not report.ocr_missing


def test_cache_skips_unchanged_files(corpus: Path, tmp_path: Path, monkeypatch):
    cache = tmp_path / "cache"
    first = extract_corpus(corpus, cache_dir=cache, workers=1, progress=False)
    calls = []
    real = extract.extract_pdf
    monkeypatch.setattr(extract, "extract_pdf", lambda path, **kw: calls.append(path.name) or real(path, **kw))
    second = extract_corpus(corpus, cache_dir=cache, workers=1, progress=False)
    assert second.pages == first.pages and second.cached == 2
    assert sorted(calls) == ["c_corrupt.pdf", "d_encrypted.pdf", "e_empty.pdf"]  # bad files are never cached
    _text_pdf(corpus / "a_minutes.pdf", ["A changed first page about the ferry timetable and fares."])
    calls.clear()
    third = extract_corpus(corpus, cache_dir=cache, workers=1, progress=False)
    assert "a_minutes.pdf" in calls and any("ferry" in r["text"] for r in third.pages)


def test_missing_tesseract_keeps_text_pages_and_says_so(corpus: Path, tmp_path: Path, monkeypatch, caplog):
    monkeypatch.setattr(extract, "tessdata_dir", lambda: None)
    with caplog.at_level(logging.ERROR):
        report = extract_corpus(corpus, cache_dir=tmp_path / "cache", workers=1, progress=False)
    assert report.ocr_missing and report.ocr_needed_missing == 1
    assert any(r["document"] == "a_minutes.pdf" and "harbour" in r["text"] for r in report.pages)
    assert "tesseract-ocr" in caplog.text
    assert not list((tmp_path / "cache").glob("*")) or all(
        "b_scan" not in p.read_text() for p in (tmp_path / "cache").glob("*")
    )


def test_setup_exits_non_zero_without_tesseract(layout, tmp_path, monkeypatch, caplog):
    from madqa.cli import main

    home = tmp_path / "home"
    shutil.copytree(layout.sample_dir, home / "sample")
    monkeypatch.setenv("MADQA_HOME", str(home))
    monkeypatch.setattr(extract, "tessdata_dir", lambda: None)
    with caplog.at_level(logging.ERROR):
        assert main(["setup", "--no-progress"]) == 3
    assert "tesseract-ocr" in caplog.text
    assert not (home / "hub" / "madqa").exists()
