"""A PDF with incremental updates whose newest ``/Prev`` skips a revision or points at garbage: MuPDF alone loses
the middle update (an added page, a page's changed text) without reporting a repair. The extractor must read
every revision, newest definitions winning, and say so; ordinary files must cost nothing extra. A file stuffed with
stray "xref" tokens is scanned in linear time and gets a warning of bounded length (issue 45: 20k tokens took
1.15 s, 40k 4.99 s, and 200k gave an 8.6 MB warning)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pymupdf
import pytest

from madqa.loading_script import pdf_revisions
from madqa.loading_script.extract import ExtractionReport
from madqa.loading_script.pdf_text import extract_pdf

ORIGINAL, MIDDLE_EDIT, MIDDLE_PAGE, NEWEST = (
    "original first page text",
    "middle edit on page one",
    "middle update added page",
    "newest update text here",
)


def _three_revisions(path: Path, *, objstm: bool) -> bytes:
    """Original + an update adding a page and text on page 1 + an update adding more text on page 1."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), ORIGINAL)
    doc.save(path, use_objstms=objstm)
    doc.close()
    doc = pymupdf.open(path)
    doc.new_page().insert_text((72, 72), MIDDLE_PAGE)
    doc[0].insert_text((72, 150), MIDDLE_EDIT)
    doc.save(path, incremental=True, encryption=pymupdf.PDF_ENCRYPT_KEEP)
    doc.close()
    doc = pymupdf.open(path)
    doc[0].insert_text((72, 200), NEWEST)
    doc.save(path, incremental=True, encryption=pymupdf.PDF_ENCRYPT_KEEP)
    doc.close()
    return path.read_bytes()


def _patch_last_prev(data: bytes, value: int) -> bytes:
    """The newest trailer's /Prev set to ``value``, zero-padded to the same width so no offset moves."""
    last = list(re.finditer(rb"/Prev\s+(\d+)", data))[-1]
    width = len(last.group(1))
    digits = str(value).zfill(width).encode()
    assert len(digits) == width
    return data[: last.start(1)] + digits + data[last.end(1) :]


def _text(result: object) -> str:
    return " ".join(row["text"] for row in result.pages)  # type: ignore[attr-defined]


@pytest.mark.parametrize("objstm", [False, True], ids=["xref-table", "xref-stream"])
def test_a_prev_skipping_the_middle_revision_still_reads_it(tmp_path: Path, objstm: bool) -> None:
    good = _three_revisions(tmp_path / "good.pdf", objstm=objstm)
    first_xref = int(re.search(rb"/Prev\s+(\d+)", good).group(1))  # type: ignore[union-attr]
    bad = tmp_path / "skipped.pdf"
    bad.write_bytes(_patch_last_prev(good, first_xref))
    with pymupdf.open(bad) as plain:  # the failure being fixed: MuPDF alone drops the middle update, unrepaired
        assert plain.page_count == 1 and not plain.is_repaired
        assert MIDDLE_EDIT not in plain[0].get_text()

    result = extract_pdf(bad, tessdata=None, ocr=False)
    assert result.error is None
    assert [row["page"] for row in result.pages] == [1, 2]
    assert ORIGINAL in result.pages[0]["text"] and MIDDLE_EDIT in result.pages[0]["text"]
    assert NEWEST in result.pages[0]["text"] and MIDDLE_PAGE in result.pages[1]["text"]
    middle = pdf_revisions.read_chain(bad.read_bytes()).unreachable
    assert len(middle) == 1
    assert result.warnings == [
        f"broken /Prev chain: revision at byte {middle[0]} was not reachable; "
        "read all 3 revisions by scanning (2 pages, the chain gave 1)"
    ]


@pytest.mark.parametrize("objstm", [False, True], ids=["xref-table", "xref-stream"])
def test_a_prev_pointing_at_garbage_keeps_the_newest_update(
    tmp_path: Path, objstm: bool, caplog: pytest.LogCaptureFixture
) -> None:
    good = _three_revisions(tmp_path / "good.pdf", objstm=objstm)
    bad = tmp_path / "garbage.pdf"
    bad.write_bytes(_patch_last_prev(good, 17))  # inside the header: no xref there
    result = extract_pdf(bad, tessdata=None, ocr=False)
    text = _text(result)
    assert MIDDLE_EDIT in text and MIDDLE_PAGE in text and NEWEST in text
    assert len(result.warnings) == 1
    assert "points at byte 17, where no xref starts" in result.warnings[0], result.warnings
    assert "read all 3 revisions by scanning" in result.warnings[0]
    with caplog.at_level("WARNING"):
        ExtractionReport().add(result)  # what a corpus run logs: the file's name, then the one line
    assert f"garbage.pdf: {result.warnings[0]}" in caplog.messages


def test_a_correct_incremental_file_gets_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "updated.pdf"
    data = _three_revisions(path, objstm=False)
    chain = pdf_revisions.read_chain(data)
    assert len(chain.sections) == 3 and not chain.broken
    result = extract_pdf(path, tessdata=None, ocr=False)
    assert result.warnings == [] and MIDDLE_EDIT in _text(result) and NEWEST in _text(result)


def test_a_single_revision_file_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "plain.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), ORIGINAL)
    doc.save(path)
    doc.close()
    reads: list[Path] = []
    original = Path.read_bytes

    def spy(self: Path) -> bytes:
        reads.append(self)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", spy)
    result = extract_pdf(path, tessdata=None, ocr=False, sha256="0" * 64)
    assert ORIGINAL in _text(result) and result.warnings == []
    assert path not in reads  # the raw-byte check only runs when MuPDF followed more than one section


def test_xref_bytes_inside_a_stream_are_not_a_revision() -> None:
    # an uncompressed attached PDF carries its own xref table and startxref inside a stream
    inner = b"xref\n0 1\n0000000000 65535 f \ntrailer<</Size 1>>\nstartxref\n9\n%%EOF\n"
    data = b"%PDF-1.4\n1 0 obj<</Length " + str(len(inner)).encode() + b">>stream\n" + inner + b"\nendstream\nendobj\n"
    table = len(data)
    data += b"xref\n0 2\n0000000000 65535 f \n0000000009 00000 n \ntrailer<</Size 2>>\nstartxref\n"
    data += str(table).encode() + b"\n%%EOF\n"
    chain = pdf_revisions.read_chain(data)
    assert chain.sections == [table] and chain.reached == [table] and not chain.broken


def _stray_xrefs(count: int) -> bytes:
    return b"%PDF-1.4\n" + b"xref\n" * count + b"trailer\n<< /Size 3 >>\nstartxref\n9\n%%EOF\n"


def test_the_revision_scan_grows_linearly_with_stray_xref_tokens():
    def best_of_three(data: bytes) -> float:
        times = []
        for _ in range(3):
            # CPU time, not wall time: a busy machine delays the process but does not add to its CPU time
            start = time.process_time()
            chain = pdf_revisions.read_chain(data)
            times.append(time.process_time() - start)
        assert len(chain.sections) == data.count(b"xref\n") - 1  # every token seen (not the one of startxref)
        return min(times)

    small, large = best_of_three(_stray_xrefs(20_000)), best_of_three(_stray_xrefs(80_000))
    # 4x the tokens: about 4x the time when linear; the quadratic scan took about 16x (1.15 s -> 4.99 s for 2x)
    assert large / small < 10, f"20k tokens {small:.3f} s, 80k tokens {large:.3f} s"


def test_a_file_stuffed_with_xref_tokens_keeps_its_page_with_a_short_warning(tmp_path: Path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), ORIGINAL)
    good = doc.tobytes()
    head = good.index(b"\n") + 1
    path = tmp_path / "stuffed.pdf"
    path.write_bytes(good[:head] + b"xref\n" * 80_000 + good[head:])  # every offset after them is now wrong
    result = extract_pdf(path, tessdata=None, ocr=False)
    assert result.error is None and ORIGINAL in result.pages[0]["text"]
    (warning,) = [w for w in result.warnings if w.startswith("broken /Prev chain")]
    assert len(warning) < 1000 and "more unreachable revisions" in warning, warning[:300]
