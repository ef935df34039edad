"""One file's pages, as a messy real collection has them: other scripts, scans in other languages, sideways scans,
ligatures, huge pages, a broken page, a truncated file. PDFs are made here with PyMuPDF, fpdf2 and pypdf."""

from __future__ import annotations

import difflib
from pathlib import Path

import pymupdf
import pytest

from madqa.loading_script import ocr, tesseract
from madqa.loading_script.pdf_text import (
    ExtractSettings,
    extract_pdf,
    has_usable_text,
    normalise_text,
    tessdata_dir,
)

TESSDATA = tessdata_dir()
needs_tesseract = pytest.mark.skipif(TESSDATA is None, reason="needs Debian tesseract-ocr")
needs_rus_osd = pytest.mark.skipif(
    TESSDATA is None or "rus" not in ocr.installed_languages(TESSDATA) or not ocr.has_osd(TESSDATA),
    reason="needs Debian tesseract-ocr-rus and tesseract-ocr-osd (scripts/bootstrap.sh installs them)",
)
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
needs_dejavu = pytest.mark.skipif(not DEJAVU.is_file(), reason="needs Debian fonts-dejavu-core (DejaVuSans.ttf)")

RUSSIAN = "Настоящий договор заключён между поставщиком и покупателем. Оплата производится банковским переводом."
CHINESE = "合同\n编号：HT-2024-017\n甲方：北京华信贸易有限公司\n乙方：上海明远物流有限公司"
ENGLISH = (
    "The council met on Tuesday to review the harbour budget and approved the new ferry timetable. "
    "Members discussed the permit for the warehouse on Harbor Lane and the cost of repairs."
)


def _words(text: str) -> str:
    return " ".join(text.split())


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, _words(a), _words(b)).ratio()


def _scan_page(
    doc: pymupdf.Document,
    text: str,
    *,
    turn: int = 0,
    font: Path | None = None,
    dpi: int = 150,
    width: float = 420,
    height: float = 300,
) -> None:
    """Append an image-only page: ``text`` set on a vector page, photographed at ``dpi``, turned by ``turn``."""
    src = pymupdf.open()
    page = src.new_page(width=width, height=height)
    fontname = "helv"
    if font is not None:
        page.insert_font(fontname="dv", fontfile=str(font))
        fontname = "dv"
    page.insert_textbox(pymupdf.Rect(24, 24, width - 24, height - 24), text, fontsize=13, fontname=fontname)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(dpi / 72, dpi / 72).prerotate(turn), colorspace=pymupdf.csGRAY)
    out = doc.new_page(width=pix.width * 72 / dpi, height=pix.height * 72 / dpi)  # no /Rotate: the image is turned
    out.insert_image(out.rect, pixmap=pix)


def _fpdf_text_pdf(path: Path, text: str) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.add_font("dejavu", fname=str(DEJAVU))
    pdf.set_font("dejavu", size=12)
    pdf.multi_cell(w=0, text=text)
    pdf.output(str(path))
    return path


# --- usable text and normalisation (no OCR) ---------------------------------------------------------------------


def test_usable_text_counts_letters_of_every_script_and_not_glyph_garbage():
    for text in (
        "Договор поставки номер семнадцать",
        "合同编号甲方北京华信",
        "Σύμβαση προμήθειας αριθμός",
        "عقد توريد رقم سبعة عشر بين الطرفين",
        "Contract number seventeen",
    ):
        assert has_usable_text(text), text
    for text in ("\ufffd" * 40, "(cid:12)(cid:7)(cid:33)" * 10, "\ue000\ue001\ue002" * 12, "- 12 -", ""):
        assert not has_usable_text(text), text
    # A real text layer with a few undecodable symbols is kept; one mostly made of them goes to OCR.
    assert has_usable_text("The council approved the harbour budget \ufffd and the ferry timetable \ufffd")
    assert not has_usable_text("Budget approved " + "\ufffd" * 6)


def test_nfkc_replaces_compatibility_forms_only():
    assert normalise_text("ﬁnancial oﬃcer") == "financial officer"
    assert normalise_text("ＨＴ－２０２４\u00a0m²\u3000…") == "HT-2024 m2 ..."
    ordinary = "Café “Zoë” — 5 € × 2 • § 4° – naïve façade’s ﬁ"[:-2]
    assert normalise_text(ordinary) == ordinary


def test_nfkc_leaves_the_sample_text_layer_unchanged(layout):
    """Every page of the built sample extracts exactly as PyMuPDF's raw text layer (NFKC changes nothing there)."""
    pdfs = sorted((layout.sample_dir / "documents").glob("*.pdf"))
    assert pdfs
    compared = 0
    for path in pdfs:
        result = extract_pdf(path, tessdata=None, ocr=False)
        assert result.error is None and result.warnings == []
        with pymupdf.open(path) as doc:
            raw = [page.get_text() for page in doc]
        assert [row["text"] for row in result.pages] == raw, path.name
        compared += sum(bool(text.strip()) for text in raw)
    assert compared > 100


@needs_dejavu
def test_cjk_and_cyrillic_text_layers_are_kept_and_searchable(tmp_path: Path):
    from madqa.agents.corpus.search import open_index

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), CHINESE, fontname="china-s", fontsize=14)
    doc.save(tmp_path / "cn.pdf")
    _fpdf_text_pdf(tmp_path / "ru.pdf", RUSSIAN)
    _fpdf_text_pdf(tmp_path / "lig.pdf", "The ﬁnancial oﬃcer signed the ﬂoor plan.")
    _fpdf_text_pdf(tmp_path / "el_ar.pdf", "Σύμβαση προμήθειας αριθμός 17\nعقد توريد رقم سبعة عشر")
    names = ("cn.pdf", "ru.pdf", "lig.pdf", "el_ar.pdf")
    results = {name: extract_pdf(tmp_path / name, tessdata=TESSDATA) for name in names}
    rows = {name: r.pages for name, r in results.items()}
    assert {name: [row["text_source"] for row in pages] for name, pages in rows.items()} == {
        "cn.pdf": ["pdf"],
        "ru.pdf": ["pdf"],
        "lig.pdf": ["pdf"],
        "el_ar.pdf": ["pdf"],
    }
    assert [(r.error, r.warnings) for r in results.values()] == [(None, [])] * 4
    greek, arabic = rows["el_ar.pdf"][0]["text"].splitlines()  # MuPDF gives this unshaped Arabic line reversed
    assert greek == "Σύμβαση προμήθειας αριθμός 17" and sorted(arabic) == sorted("عقد توريد رقم سبعة عشر")
    assert rows["cn.pdf"][0]["text"] == normalise_text(CHINESE) + "\n"  # the full-width colon becomes ':'
    assert rows["ru.pdf"][0]["text_source"] == "pdf" and _words(rows["ru.pdf"][0]["text"]) == RUSSIAN
    assert rows["lig.pdf"][0]["text"] == "The financial officer signed the floor plan.\n"

    pages = [row for name in sorted(rows) for row in rows[name]]
    with open_index(pages, index_dir=tmp_path / "index", progress=False) as index:
        assert [(h.document, h.page) for h in index.search("договор")] == [("ru.pdf", 1)]
        assert [(h.document, h.page) for h in index.search("合同")] == [("cn.pdf", 1)]
        assert [(h.document, h.page) for h in index.search('"financial officer"')] == [("lig.pdf", 1)]


# --- OCR: languages, orientation, pixel cap ---------------------------------------------------------------------


@pytest.mark.slow
@needs_rus_osd
@needs_dejavu
def test_russian_scan_is_ocrd_with_russian_chosen_automatically(tmp_path: Path):
    doc = pymupdf.open()
    _scan_page(doc, RUSSIAN, font=DEJAVU)
    doc.save(tmp_path / "scan_ru.pdf")
    with pymupdf.open(tmp_path / "scan_ru.pdf") as check:
        done = ocr.ocr_page(check[0], tessdata=TESSDATA, dpi=300, max_pixels=25_000_000, ocr_lang=None, osd=True)
    assert (done.script, done.languages, done.rotated, done.note) == ("Cyrillic", "eng+rus", 0, None)

    result = extract_pdf(tmp_path / "scan_ru.pdf", tessdata=TESSDATA)
    (row,) = result.pages
    assert result.warnings == [] and row["text_source"] == "ocr"
    assert "договор" in row["text"] and _similarity(row["text"], RUSSIAN) > 0.9


@needs_tesseract
def test_explicit_language_that_is_not_installed_names_the_package(tmp_path: Path):
    doc = pymupdf.open()
    _scan_page(doc, ENGLISH)
    doc.save(tmp_path / "scan.pdf")
    result = extract_pdf(tmp_path / "scan.pdf", tessdata=TESSDATA, settings=ExtractSettings(ocr_lang="eng+xqz"))
    installed = "+".join(ocr.installed_languages(TESSDATA))
    assert result.pages == [] and result.error == (
        f"OCR language xqz is not installed in {TESSDATA}: install the Debian package tesseract-ocr-xqz "
        f"(installed: {installed})"
    )


@pytest.mark.slow
@needs_tesseract
@pytest.mark.skipif(TESSDATA is None or not ocr.has_osd(TESSDATA), reason="needs Debian tesseract-ocr-osd")
def test_sideways_and_upside_down_scans_are_turned_upright_before_ocr(tmp_path: Path):
    doc = pymupdf.open()
    for turn in (90, 270):
        _scan_page(doc, ENGLISH, turn=turn)
    doc.save(tmp_path / "sideways.pdf")
    result = extract_pdf(tmp_path / "sideways.pdf", tessdata=TESSDATA)
    assert result.error is None and result.warnings == []
    assert [(row["page"], row["text_source"]) for row in result.pages] == [(1, "ocr"), (2, "ocr")]
    for row in result.pages:
        assert _similarity(row["text"], ENGLISH) > 0.9, row["text"]
    # Without orientation detection the same page reads as noise (what happened before).
    plain = extract_pdf(tmp_path / "sideways.pdf", tessdata=TESSDATA, settings=ExtractSettings(osd=False))
    assert _similarity(plain.pages[1]["text"], ENGLISH) < 0.5


def _poster_pdf(path: Path) -> Path:
    """Three pages: text, a 14,400 pt image-only page (the largest PDF allows) reading PERMIT BP-4417, text."""
    src = pymupdf.open()
    sheet = src.new_page(width=700, height=700)
    sheet.insert_textbox(pymupdf.Rect(30, 250, 670, 450), "PERMIT BP-4417 APPROVED", fontsize=56, align=1)
    pix = sheet.get_pixmap(dpi=72, colorspace=pymupdf.csGRAY)
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "A first page with an ordinary text layer for the council.", fontsize=12)
    big = doc.new_page(width=14400, height=14400)
    big.insert_image(big.rect, pixmap=pix)
    doc.new_page().insert_text((72, 100), "A third page with an ordinary text layer for the council.", fontsize=12)
    doc.save(path)
    return path


@needs_tesseract
def test_a_14400_pt_page_is_ocrd_within_the_pixel_cap(tmp_path: Path):
    """At 300 dpi the page would be 3.6 billion pixels, which MuPDF refuses: it is scaled down to the cap."""
    settings = ExtractSettings(max_pixels=2_000_000)
    result = extract_pdf(_poster_pdf(tmp_path / "poster.pdf"), tessdata=TESSDATA, settings=settings)
    assert result.error is None and result.warnings == []
    assert [(row["page"], row["text_source"]) for row in result.pages] == [(1, "pdf"), (2, "ocr"), (3, "pdf")]
    assert "BP-4417" in result.pages[1]["text"]
    with pymupdf.open(tmp_path / "poster.pdf") as check:
        pixmap, dpi = ocr.render_gray(check[1], 300, settings.max_pixels)
    assert pixmap.width * pixmap.height <= settings.max_pixels and round(dpi, 1) == 7.1


@needs_tesseract
def test_an_unrenderable_page_loses_only_itself(tmp_path: Path):
    """Without a usable cap the same page cannot be rendered: that page is reported, the others are kept."""
    result = extract_pdf(
        _poster_pdf(tmp_path / "poster.pdf"), tessdata=TESSDATA, settings=ExtractSettings(max_pixels=10**10)
    )
    assert result.error is None
    assert [(row["page"], row["text_source"], row["text"]) for row in result.pages] == [
        (1, "pdf", "A first page with an ordinary text layer for the council.\n"),
        (2, "none", ""),
        (3, "pdf", "A third page with an ordinary text layer for the council.\n"),
    ]
    assert result.warnings == ["page 2: OCR failed (FzErrorLimit: code=5: Overly large image); no text"]


_A0_CHILD = """
import sys
from pathlib import Path

from madqa.bench.measure import vm_hwm_mib
from madqa.loading_script.pdf_text import extract_pdf, tessdata_dir

result = extract_pdf(Path(sys.argv[1]), tessdata=tessdata_dir())
print(round(vm_hwm_mib()), result.pages[0]["text_source"], " ".join(result.pages[0]["text"].split()))
"""


@pytest.mark.slow
@needs_tesseract
@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads VmHWM from /proc")
def test_an_a0_scan_is_ocrd_in_bounded_memory(tmp_path: Path):
    """A 300 dpi A0 scan (139 million pixels): a fresh process OCRs it with a peak RSS under 600 MB."""
    import os
    import subprocess
    import sys

    width, height = pymupdf.paper_size("a0")
    src = pymupdf.open()
    sheet = src.new_page(width=width, height=height)
    sheet.insert_textbox(
        pymupdf.Rect(100, 100, width - 100, 400), "PERMIT BP-4417 APPROVED FOR HARBOR LANE", fontsize=60
    )
    pix = sheet.get_pixmap(dpi=300, colorspace=pymupdf.csGRAY)
    doc = pymupdf.open()
    doc.new_page(width=width, height=height).insert_image(pymupdf.Rect(0, 0, width, height), pixmap=pix)
    doc.save(tmp_path / "a0.pdf", deflate=True)
    del pix, doc, src
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _A0_CHILD, str(tmp_path / "a0.pdf")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    peak_mb, source, text = done.stdout.strip().split(" ", 2)
    assert (source, text) == ("ocr", "PERMIT BP-4417 APPROVED FOR HARBOR LANE")
    assert int(peak_mb) < 600  # measured ~250 MB; rendered at 300 dpi without the pixel cap: ~710 MB


@needs_rus_osd
@needs_dejavu
def test_without_libtesseract_the_tesseract_command_is_used(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(tesseract, "_LIB", False)  # as if the library could not be loaded
    doc = pymupdf.open()
    _scan_page(doc, RUSSIAN, font=DEJAVU, turn=90)
    with pymupdf.open(stream=doc.tobytes()) as check:
        done = ocr.ocr_page(check[0], tessdata=TESSDATA, dpi=300, max_pixels=25_000_000, ocr_lang=None, osd=True)
    assert (done.script, done.languages, done.rotated) == ("Cyrillic", "eng+rus", 90)
    assert _similarity(done.text, RUSSIAN) > 0.9


# --- damaged files and pages ------------------------------------------------------------------------------------


def _break_page_contents(src: Path, dst: Path, index: int) -> None:
    """Copy ``src`` with page ``index``'s content stream replaced by bytes that do not inflate (pypdf)."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import DecodedStreamObject, NameObject

    writer = PdfWriter(clone_from=PdfReader(src))
    broken = DecodedStreamObject()
    broken.set_data(b"this is not zlib data at all")
    broken[NameObject("/Filter")] = NameObject("/FlateDecode")
    writer.pages[index][NameObject("/Contents")] = writer._add_object(broken)
    with dst.open("wb") as fh:
        writer.write(fh)


@needs_tesseract
def test_a_page_with_a_broken_content_stream_loses_only_itself(tmp_path: Path):
    doc = pymupdf.open()
    for number in (1, 2, 3):
        doc.new_page().insert_text((72, 100), f"Page {number}: the council reviewed the harbour budget.", fontsize=12)
    doc.save(tmp_path / "good.pdf")
    _break_page_contents(tmp_path / "good.pdf", tmp_path / "broken_page.pdf", 1)
    result = extract_pdf(tmp_path / "broken_page.pdf", tessdata=TESSDATA)
    assert result.error is None
    assert [(row["page"], row["text_source"], row["text"]) for row in result.pages] == [
        (1, "pdf", "Page 1: the council reviewed the harbour budget.\n"),
        (2, "none", ""),
        (3, "pdf", "Page 3: the council reviewed the harbour budget.\n"),
    ]
    assert result.warnings == [
        "page 2: no text (MuPDF: library error: zlib error: incorrect header check; read error; treating as end of "
        "file)"
    ]


@needs_tesseract
def test_truncated_file_is_extracted_with_a_warning(tmp_path: Path):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for number in range(1, 6):
        pdf.add_page()
        pdf.cell(text=f"Page {number} of the minutes: the council met to review the harbour budget.")
    data = bytes(pdf.output())
    (tmp_path / "truncated.pdf").write_bytes(data[: int(len(data) * 0.45)])
    result = extract_pdf(tmp_path / "truncated.pdf", tessdata=TESSDATA)
    assert result.error is None
    assert [(row["page"], row["text_source"]) for row in result.pages] == [
        (1, "pdf"),
        (2, "pdf"),
        (3, "pdf"),
        (4, "none"),
        (5, "none"),
    ]
    assert result.pages[2]["text"] == "Page 3 of the minutes: the council met to review the harbour budget.\n"
    assert result.warnings == [
        "damaged file (e.g. truncated), repaired by MuPDF: pages may be missing or incomplete (its page tree lists "
        "5 pages, 4 page objects were found)",
        "page 4: no text (MuPDF: PDF stream Length incorrect; premature end of data in flate filter)",
        "page 5: no text (MuPDF: non-page object in page tree)",
    ]


def test_pdf_result_pickles_with_its_warnings_and_docstrings_hold():
    import doctest
    import pickle

    from madqa.loading_script import pdf_text

    result = pdf_text.PdfResult(
        "a.pdf",
        "0" * 64,
        pages=[{"document": "a.pdf", "page": 1, "text": "", "text_source": "none"}],
        warnings=["page 1: no text"],
    )
    assert pickle.loads(pickle.dumps(result)) == result
    outcome = doctest.testmod(pdf_text)
    assert outcome.attempted >= 3 and outcome.failed == 0
