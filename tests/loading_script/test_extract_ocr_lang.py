"""Latin-script scans in automatic OCR mode (issue 28 item 3): a German scan keeps its umlauts and ß, and where the
German pack is missing the file's warnings say so, naming the package and --ocr-lang; English pages are untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pymupdf
import pytest

from madqa.loading_script.ocr_language import guess_latin_language
from madqa.loading_script.pdf_text import extract_pdf, tessdata_dir

GERMAN = [
    "Sehr geehrte Damen und Herren,",
    "für die Prüfung der Unterlagen über die Größe des Grundstücks",
    "müssen wir Ihnen leider mitteilen, dass die Gebühren für das",
    "Verfahren nicht erstattet werden können. Die Straße wird im",
    "nächsten Frühjahr gesperrt, während die Brücke repariert wird.",
    "Bitte schicken Sie uns die Bestätigung bis zum Ende des Monats.",
    "Mit freundlichen Grüßen, Ihre Stadtverwaltung Düsseldorf",
]
DIACRITICS = "äöüÄÖÜß"
ENGLISH = [
    "Dear Sir or Madam,",
    "the inspection of the documents about the size of the plot",
    "is complete, and we regret that the fees for the procedure",
    "cannot be refunded. The road will be closed next spring",
    "while the bridge is repaired by the city engineers.",
]

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian tesseract-ocr")


def _scan(path: Path, lines: list[str]) -> Path:
    """A scanned page: the lines typeset (Helvetica has every German letter), rasterised at 300 dpi, as an image."""
    src = pymupdf.open()
    page = src.new_page()
    for i, line in enumerate(lines):
        page.insert_text((60, 100 + 22 * i), line, fontsize=13, fontname="helv")
    scan = pymupdf.open()
    scan.new_page().insert_image(scan[0].rect, pixmap=page.get_pixmap(dpi=300, colorspace=pymupdf.csGRAY))
    scan.save(path)
    return path


def _diacritics(text: str) -> int:
    return sum(text.count(c) for c in DIACRITICS)


def _tessdata_without(tmp_path: Path, *left_out: str) -> str:
    """A tessdata folder with the installed data files but ``left_out`` (links, so nothing is copied)."""
    real = Path(tessdata_dir() or "")
    folder = tmp_path / "tessdata"
    folder.mkdir()
    for data in real.glob("*.traineddata"):
        if data.name.removesuffix(".traineddata") not in left_out:
            (folder / data.name).symlink_to(data)
    return str(folder)


@needs_tesseract
@pytest.mark.skipif(
    not (Path(tessdata_dir() or "/") / "deu.traineddata").is_file(),
    reason="needs Debian tesseract-ocr-deu (scripts/bootstrap.sh installs it)",
)
def test_a_german_scan_in_automatic_mode_keeps_its_umlauts_and_sharp_s(tmp_path):
    expected = sum(_diacritics(line) for line in GERMAN)
    result = extract_pdf(_scan(tmp_path / "brief.pdf", GERMAN), tessdata=tessdata_dir())
    (page,) = result.pages
    assert page["text_source"] == "ocr" and result.warnings == []
    assert _diacritics(page["text"]) >= expected - 1, page["text"]  # before: 0 of 19
    assert "Straße" in page["text"] and "Grüßen" in page["text"] and "Düsseldorf" in page["text"]


@needs_tesseract
def test_without_the_german_pack_the_file_says_which_package_and_option_would_keep_the_umlauts(tmp_path):
    tessdata = _tessdata_without(tmp_path, "deu")
    result = extract_pdf(_scan(tmp_path / "brief.pdf", GERMAN), tessdata=tessdata)
    (page,) = result.pages
    assert page["text_source"] == "ocr" and "Verfahren" in page["text"]  # read, with English
    assert result.warnings == [
        "page 1: German text suspected but the Tesseract language deu is not installed (Debian package "
        "tesseract-ocr-deu): OCR'd with eng, which drops letters it lacks (ä ö ü ß é ...); install it, or choose "
        "the languages with --ocr-lang (e.g. --ocr-lang deu+eng)"
    ]


@needs_tesseract
def test_an_english_scan_is_read_once_in_english(tmp_path, monkeypatch):
    from madqa.loading_script import ocr, tesseract

    calls = []
    real = tesseract.recognise
    monkeypatch.setattr(
        tesseract, "recognise", lambda image, dpi, langs, data: calls.append(langs) or real(image, dpi, langs, data)
    )
    doc = pymupdf.open(_scan(tmp_path / "letter.pdf", ENGLISH))
    done = ocr.ocr_page(doc[0], tessdata=tessdata_dir() or "", dpi=300, max_pixels=25_000_000, ocr_lang=None, osd=True)
    assert (done.languages, done.note, calls) == ("eng", None, ["eng"])
    assert "bridge is repaired" in done.text


@pytest.mark.parametrize(
    ("lang", "text"),
    [
        (
            "deu",
            "fur die Prufung der Unterlagen uber die Grose des Grundstucks mussen wir Ihnen mitteilen, dass die "
            "Gebuhren fur das Verfahren nicht erstattet werden konnen",
        ),
        (
            "fra",
            "Nous avons le plaisir de vous informer que la demande est acceptee et que les travaux sur la route "
            "seront faits par la ville avec une equipe",
        ),
        (
            "spa",
            "La carretera del puerto se cierra por obras y los vecinos pueden pedir una compensacion para el "
            "mes de mayo con el formulario",
        ),
        (
            "nld",
            "De gemeente heeft het verzoek ontvangen en zal de weg naar het dorp voor een week sluiten om de "
            "brug te herstellen",
        ),
        (None, " ".join(ENGLISH)),
        (None, "Gebuhren Verfahren Strafe"),  # too few words to tell
        (None, "INVOICE 2024-17 TOTAL 1,250.00 EUR VAT 19% NET 1,050.42 DUE 30 DAYS IBAN DE89 3704 0044 0532 0130 00"),
    ],
)
def test_the_language_of_an_ocr_text_is_told_by_its_function_words(lang, text):
    assert guess_latin_language(text) == lang
