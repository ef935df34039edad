"""The record of a preparation (``prepared.json``) and the extraction settings it records.

Both :mod:`.release` (which writes the record) and :mod:`.pages_repo` (which publishes a prepared corpus with its
settings) read it here, so neither imports the other for it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from .paths import PREPARED_FILE, Layout


def _tesseract_version() -> str | None:
    try:
        out = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (out.stdout or out.stderr).splitlines()
    return lines[0].strip() if lines else None


def extraction_settings(ocr: bool, settings: Any = None) -> dict[str, Any]:
    """The settings that determine the extracted page texts (recorded in ``prepared.json`` and published cards)."""
    from . import extract
    from .ocr import has_osd, installed_languages
    from .pdf_text import NORMALISATION, ExtractSettings

    chosen = settings or ExtractSettings()
    tessdata = extract.tessdata_dir() if ocr else None
    return {
        "extractor_version": extract.EXTRACTOR_VERSION,
        "ocr": ocr,
        "ocr_dpi": chosen.dpi,
        "ocr_language": chosen.ocr_lang or extract.OCR_LANGUAGE,
        "ocr_language_choice": "explicit"
        if chosen.ocr_lang
        else "automatic: the base language, plus the "
        "installed pack of the script Tesseract OSD detects on a page read with low confidence",
        "ocr_languages_installed": list(installed_languages(tessdata)) if tessdata else None,
        "ocr_max_pixels": chosen.max_pixels,
        "ocr_osd": bool(chosen.osd and tessdata and has_osd(tessdata)),
        "normalisation": NORMALISATION,
        "min_text_chars": extract.MIN_TEXT_CHARS,
        "tesseract": _tesseract_version() if ocr else None,
    }


def read_prepared_folder(folder: Path) -> dict[str, Any]:
    """The ``prepared.json`` record of a folder (``{}`` when missing or unreadable)."""
    try:
        data = json.loads((folder / PREPARED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_prepared(spec: str, layout: Layout | None = None) -> dict[str, Any] | None:
    """The ``prepared.json`` record of a prepared spec (``None`` when it was never prepared)."""
    folder = (layout or Layout.default()).prepared_dataset(spec)
    return read_prepared_folder(folder) if folder is not None else None
