"""Tesseract OCR of one PDF page: render at a capped pixel count, recognise, and on doubt fix orientation/script.

How a page goes through OCR (:func:`ocr_page`):

1. It is rendered in grayscale at the settings' dpi, or lower when that would exceed ``max_pixels`` (an A0 scan
   at 300 dpi is 139 million pixels; capped, memory stays bounded and the effective dpi is recorded). A big
   progressive JPEG, which MuPDF would decode whole, is decoded scaled first, or refused (:mod:`.ocr_images`).
2. It is recognised upright with the explicit ``ocr_lang``, or with English. A result whose mean word confidence
   is at least :data:`CONFIDENT_OCR` is kept: most pages of a collection are upright and in the base language,
   and orientation detection costs a quarter of an OCR pass.
3. Otherwise, where Tesseract's OSD data is installed, orientation and script detection runs (on at most
   :data:`OSD_MAX_PIXELS`). A sideways or upside-down page is turned upright; automatically chosen languages
   become English plus the installed pack of the detected script (Cyrillic → ``eng+rus``; English first, since
   Tesseract tries the first language first and falls back per word: measured, ``eng+rus`` reads an English and
   a Russian page as well as ``eng`` and ``rus`` alone, at the same speed). If either changed, the page is
   recognised again, and the more confident of the two results is kept.
4. Automatic languages only: OSD cannot tell German from English (both "Latin"), and English reading German
   drops every umlaut and ß with little loss of confidence. So when the text read so far is clearly in another
   Latin-script language by its function words (:mod:`.ocr_language`), the page is read again with that pack
   first (``deu+eng``); when the pack is not installed, the page keeps its reading and a note names the package
   and ``--ocr-lang``.

Tesseract runs in this process through its C API (``libtesseract``, the library the ``tesseract`` command is
built on), with one engine per language set kept for the life of the process: no model load and no image file
per page. Measured on this project's 2-core machine, per page of the sample's scans: render 0.13 s, OCR 0.83 s,
OSD 0.23 s when needed, vs 0.97 s for the ``tesseract`` command on the same image; PyMuPDF's
``get_textpage_ocr`` took 1.5-2x as long and cannot detect orientation (``madqa bench extract`` prints the
comparison). When the library cannot be loaded, the ``tesseract`` command is run on the same rendered image
instead (it gives no confidence, so step 3 always runs there).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import tesseract
from .tesseract import OcrError, Orientation

#: First language of every automatic choice.
BASE_LANGUAGE = "eng"
#: A first OCR pass (base or explicit languages, upright) with this mean word confidence (0-100) is kept without
#: orientation and script detection. Measured: upright English scans 79-95 (one form full of shading: 57);
#: the same text sideways or upside down 36-46, Russian read as English 34-49.
CONFIDENT_OCR = 65
#: Orientation and script detection looks at no more pixels than this (a US letter page at 300 dpi).
OSD_MAX_PIXELS = 9_000_000
#: A detected rotation is applied only above this orientation confidence (wrong guesses measured below 1).
MIN_ORIENTATION_CONFIDENCE = 2.0
#: Installed data files that are not OCR languages.
NOT_LANGUAGES = frozenset({"osd", "equ"})
#: Language packs for each script Tesseract's OSD reports, in order of preference (the first installed is used).
SCRIPT_LANGUAGES: dict[str, tuple[str, ...]] = {
    "Cyrillic": ("rus", "ukr", "bul", "srp", "bel", "mkd", "kaz", "kir", "tgk", "mon", "uzb_cyrl", "aze_cyrl"),
    "Greek": ("ell", "grc"),
    "Arabic": ("ara", "fas", "urd", "pus", "uig", "snd"),
    "Hebrew": ("heb", "yid"),
    "Han": ("chi_sim", "chi_tra", "jpn"),
    "Japanese": ("jpn", "jpn_vert"),
    "Katakana": ("jpn",),
    "Hiragana": ("jpn",),
    "Hangul": ("kor", "kor_vert"),
    "Korean": ("kor", "kor_vert"),
    "Devanagari": ("hin", "mar", "nep", "san"),
    "Bengali": ("ben", "asm"),
    "Gurmukhi": ("pan",),
    "Gujarati": ("guj",),
    "Oriya": ("ori",),
    "Tamil": ("tam",),
    "Telugu": ("tel",),
    "Kannada": ("kan",),
    "Malayalam": ("mal",),
    "Sinhala": ("sin",),
    "Thai": ("tha",),
    "Lao": ("lao",),
    "Khmer": ("khm",),
    "Myanmar": ("mya",),
    "Tibetan": ("bod",),
    "Armenian": ("hye",),
    "Georgian": ("kat",),
    "Ethiopic": ("amh", "tir"),
    "Syriac": ("syr",),
    "Thaana": ("div",),
    "Cherokee": ("chr",),
    "Canadian_Aboriginal": ("iku",),
    "Fraktur": ("deu_latf", "frk"),
}


@dataclass(frozen=True)
class PageOcr:
    """What OCR of one page gave, and how.

    Attributes:
        text: the recognised text (not normalised).
        languages: the Tesseract languages used, e.g. ``eng+rus``.
        dpi: the effective resolution (below the setting when the pixel cap applied).
        rotated: degrees the image was turned (counter-clockwise) before recognition.
        script: the script OSD detected (``None`` without OSD or when it found too little text).
        note: a one-line remark for the file's warnings (a detected script without an installed pack), or ``None``.
    """

    text: str
    languages: str
    dpi: float
    rotated: int
    script: str | None
    note: str | None = None


def debian_package(lang: str) -> str:
    """The Debian package that installs a Tesseract language (``chi_sim`` → ``tesseract-ocr-chi-sim``)."""
    if lang.startswith("script/"):
        return f"tesseract-ocr-script-* (the one with {lang}.traineddata)"
    return "tesseract-ocr-" + lang.lower().replace("_", "-")


@functools.lru_cache(maxsize=8)
def installed_languages(tessdata: str) -> tuple[str, ...]:
    """The OCR languages in a tessdata folder, sorted (``script/Cyrillic`` for script data; no ``osd``)."""
    root = Path(tessdata)
    names = [p.name.removesuffix(".traineddata") for p in root.glob("*.traineddata")]
    names += [f"script/{p.name.removesuffix('.traineddata')}" for p in root.glob("script/*.traineddata")]
    return tuple(sorted(n for n in names if n not in NOT_LANGUAGES))


def has_osd(tessdata: str) -> bool:
    """Whether Tesseract's orientation and script detection data (Debian ``tesseract-ocr-osd``) is installed."""
    return (Path(tessdata) / "osd.traineddata").is_file()


def missing_languages_message(langs: str, tessdata: str) -> str | None:
    """One line naming the languages of ``langs`` (``eng+rus``) that are not installed and their packages."""
    installed = set(installed_languages(tessdata))
    missing = [lang for lang in langs.split("+") if lang not in installed]
    if not missing:
        return None
    packages = ", ".join(debian_package(lang) for lang in missing)
    return (
        f"OCR language {'+'.join(missing)} is not installed in {tessdata}: install the Debian package "
        f"{packages} (installed: {'+'.join(sorted(installed)) or 'none'})"
    )


def choose_languages(script: str | None, tessdata: str) -> tuple[str, str | None]:
    """The automatic languages for a page of ``script`` (``None``: unknown), and a note when a pack is missing.

    Latin (or unknown) pages get :data:`BASE_LANGUAGE` alone: other Latin-script packs only when asked for with
    ``ocr_lang``. Another script gets ``eng+<its first installed pack>``, else ``eng+script/<Script>`` when only
    the script data is installed, else ``eng`` with a note naming the package to install.
    """
    installed = installed_languages(tessdata)
    base = BASE_LANGUAGE if BASE_LANGUAGE in installed else (installed[0] if installed else BASE_LANGUAGE)
    candidates = SCRIPT_LANGUAGES.get(script or "", ())
    if not candidates:
        return base, None
    extra = next((lang for lang in candidates if lang in installed), None)
    if extra is None and f"script/{script}" in installed:
        extra = f"script/{script}"
    if extra is None:
        return base, (
            f"{script} script detected but no Tesseract language for it is installed (Debian package "
            f"{debian_package(candidates[0])}); OCR'd with {base}"
        )
    return (extra if extra == base else f"{base}+{extra}"), None


def render_gray(page: Any, dpi: int, max_pixels: int) -> tuple[Any, float]:
    """Render a page in grayscale at ``dpi``, or lower so that it has at most ``max_pixels`` pixels.

    Returns:
        ``(pixmap, effective dpi)``.
    """
    import pymupdf

    from .ocr_images import prepare_page

    zoom = dpi / 72.0
    rect = page.rect
    pixels = rect.width * zoom * rect.height * zoom
    if pixels > max_pixels:
        zoom *= (max_pixels / pixels) ** 0.5
        while math.ceil(rect.width * zoom) * math.ceil(rect.height * zoom) > max_pixels:  # MuPDF rounds up
            zoom *= 0.999
    prepare_page(page, zoom)  # raises OcrError for an image that cannot be decoded within the memory bound
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    pymupdf.TOOLS.store_shrink(100)  # drop MuPDF's cache of decoded images: a 300 dpi A0 scan's is 139 MB
    return pix, zoom * 72.0


def _as_array(pix: Any) -> Any:
    """A view of a grayscale pixmap's pixels (valid only while ``pix`` lives)."""
    import numpy as np

    return np.frombuffer(pix.samples_mv, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width]


def ocr_page(page: Any, *, tessdata: str, dpi: int, max_pixels: int, ocr_lang: str | None, osd: bool) -> PageOcr:
    """OCR one PDF page (see the module docstring for the steps).

    Args:
        page: a ``pymupdf.Page``.
        tessdata: Tesseract's data folder.
        dpi: render resolution before the pixel cap.
        max_pixels: cap on the rendered page's pixels.
        ocr_lang: explicit languages (``eng+rus``), or ``None`` for the automatic choice.
        osd: detect and correct orientation (and, without ``ocr_lang``, the script) where OSD data is installed.

    Raises:
        OcrError: Tesseract failed (or an explicit language is not installed).
    """

    if ocr_lang is not None and (problem := missing_languages_message(ocr_lang, tessdata)):
        raise OcrError(problem)
    pix, used_dpi = render_gray(page, dpi, max_pixels)  # kept alive here: the images below are views of it
    result, image = _read(pix, used_dpi, tessdata=tessdata, ocr_lang=ocr_lang, osd=osd)
    if ocr_lang is None and result.script in (None, "Latin") and "+" not in result.languages:
        result = _latin_language_pass(result, image, tessdata)
    return result


def _read(pix: Any, used_dpi: float, *, tessdata: str, ocr_lang: str | None, osd: bool) -> tuple[PageOcr, Any]:
    """Steps 2 and 3 of the module docstring: the page's OCR and the image it was read from (turned upright)."""
    import numpy as np

    image = _as_array(pix)
    first_langs = ocr_lang or choose_languages(None, tessdata)[0]
    text, confidence = tesseract.recognise(image, used_dpi, first_langs, tessdata)
    first = PageOcr(text, first_langs, used_dpi, 0, None)
    if not osd or not has_osd(tessdata) or (confidence is not None and confidence >= CONFIDENT_OCR):
        return first, image
    found = _detect(pix, used_dpi, tessdata)
    if found is None:
        return first, image
    turn = found.degrees if found.confidence >= MIN_ORIENTATION_CONFIDENCE else 0
    langs, note = (ocr_lang, None) if ocr_lang is not None else choose_languages(found.script, tessdata)
    if not turn and langs == first_langs:
        return PageOcr(text, first_langs, used_dpi, 0, found.script, note), image
    upright = np.rot90(image, k=turn // 90) if turn else image  # rot90 turns counter-clockwise
    again, again_confidence = tesseract.recognise(upright, used_dpi, langs, tessdata)
    if confidence is not None and again_confidence is not None and again_confidence < confidence:
        return PageOcr(text, first_langs, used_dpi, 0, found.script, note), image  # OSD guessed wrong
    return PageOcr(again, langs, used_dpi, turn, found.script, note), upright


def _latin_language_pass(result: PageOcr, image: Any, tessdata: str) -> PageOcr:
    """Step 4: a Latin-script page whose words say German (French, ...) is read again with that pack first.

    When the pack is not installed, the result is kept with a note naming the package and ``--ocr-lang``.
    """
    from .ocr_language import LANGUAGE_NAMES, guess_latin_language

    lang = guess_latin_language(result.text)
    if lang is None or lang in result.languages.split("+"):
        return result
    name = LANGUAGE_NAMES[lang]
    if lang not in installed_languages(tessdata):
        return replace(
            result,
            note=(
                f"{name} text suspected but the Tesseract language {lang} is not installed (Debian package "
                f"{debian_package(lang)}): OCR'd with {result.languages}, "
                f"which drops letters it lacks (ä ö ü ß é ...); "
                f"install it, or choose the languages with --ocr-lang (e.g. --ocr-lang {lang}+eng)"
            ),
        )
    langs = f"{lang}+{result.languages}"
    text, _confidence = tesseract.recognise(image, result.dpi, langs, tessdata)
    return replace(result, text=text, languages=langs)


def _detect(pix: Any, dpi: float, tessdata: str) -> Orientation | None:
    """OSD on the page image (downscaled to :data:`OSD_MAX_PIXELS`); ``None`` when it finds too little text."""
    pixels = pix.width * pix.height
    if pixels > OSD_MAX_PIXELS:
        import pymupdf

        scale = (OSD_MAX_PIXELS / pixels) ** 0.5
        pix, dpi = pymupdf.Pixmap(pix, int(pix.width * scale), int(pix.height * scale), None), dpi * scale
    return tesseract.detect(_as_array(pix), dpi, tessdata)
