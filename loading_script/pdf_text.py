"""One PDF's pages as text: PyMuPDF's text layer, Tesseract OCR (:mod:`.ocr`) for pages without a usable one.

:func:`extract_pdf` is what a pool worker of :func:`.extract.extract_corpus` runs for one file; everything here is
about a single file and its pages (the corpus-level concerns — listing, pool, cache, report — are in
:mod:`.extract`). Guarantees for one file:

* every page of the page tree gets a row, in order; all text is NFKC-normalised (:func:`normalise_text`);
* a text layer is used when it has enough letters or digits of any script and little undecodable glyph garbage
  (:func:`has_usable_text`); otherwise the page is OCR'd, and the OCR text replaces the text layer unless it reads
  fewer letters (a short real text layer beats OCR noise);
* a page that cannot be read, rendered or OCR'd keeps its row (its text layer if it has one, else empty text
  with ``text_source`` ``"none"``), and so does a page that yields no text while MuPDF reports a problem with it;
  each is named in :attr:`PdfResult.warnings` as ``page N: <reason>``;
* a damaged file that MuPDF had to repair gets a warning, with the page count it found if that differs;
* a broken ``/Prev`` chain of incremental updates is read by scanning, newest definitions winning
  (:mod:`.pdf_revisions`), with a warning.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .pdf_scan_layer import BOTH_KEPT_NOTE, combine, needs_scan_check

logger = logging.getLogger(__name__)

#: Bump when extraction output changes: it is part of the cache key.
EXTRACTOR_VERSION = "7"
#: A page whose text layer has fewer letters and digits than this (any script) goes through OCR.
MIN_TEXT_CHARS = 16
#: ... as does one where more than this share of the characters are undecodable glyph codes.
MAX_GARBAGE_SHARE = 0.1
OCR_DPI = 300
#: What a file says, per page range, about pages that needed OCR while Tesseract is missing.
NO_TESSERACT_NOTE = "no usable text layer and Tesseract is not installed: not OCR'd"
#: ... and about a page whose short text layer over a scan could not be checked with OCR (:mod:`.pdf_scan_layer`).
SCAN_NO_TESSERACT_NOTE = "short text layer over a scan and Tesseract is not installed: the layer alone kept"
#: The base OCR language; the automatic choice adds the installed pack of the page's script (:mod:`.ocr`).
OCR_LANGUAGE = "eng"
#: Default cap on the pixels of a page rendered for OCR: US letter, A4 and A3 at 300 dpi fit; an A0 scan renders
#: at 127 dpi, under half its scanned resolution, so MuPDF decodes its image subsampled. Measured peak RSS of one
#: OCR worker on a 300 dpi A0 scan full of text: 366 MB (grayscale or RGB Flate), 415 MB (baseline JPEG); at a
#: 40 M cap the image is decoded whole: 422 MB grayscale, 712 MB RGB. A progressive JPEG is decoded whole at any
#: size (~1.1 GB for an RGB A0). ``madqa bench extract`` measures a grayscale one.
DEFAULT_MAX_PIXELS = 25_000_000
#: Unicode normalisation applied to every page's text (text layer and OCR), see :func:`normalise_text`.
NORMALISATION = "NFKC"
_CID = re.compile(r"\(cid:\d+\)")
_ENOUGH_LETTERS = re.compile(rf"(?:[\W_]*+[^\W_]){{{MIN_TEXT_CHARS}}}")  # MIN_TEXT_CHARS letters from the start
_NOT_ALNUM = re.compile(r"[\W_]+")
_WIDE = re.compile(
    r"[\u1100-\u115f\u2e80-\ua4cf\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60"
    r"\U00016fe0-\U0001b2ff\U00020000-\U0003fffd]"
)  # East Asian wide letters (CJK, kana, Hangul)
_GARBAGE = re.compile(
    r"[\ufffd\ue000-\uf8ff\U000f0000-\U0010ffff\ud800-\udfff"  # U+FFFD, private use, surrogates
    r"\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]"
)  # control characters but whitespace


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, streamed."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def tessdata_dir() -> str | None:
    """The Tesseract language-data folder, or ``None`` when Tesseract is not installed."""
    if shutil.which("tesseract") is None:
        return None
    env = os.environ.get("TESSDATA_PREFIX")
    if env and Path(env).is_dir():
        return env
    try:
        import pymupdf

        found = pymupdf.get_tessdata()
    except Exception:  # noqa: BLE001 - PyMuPDF raises a bare RuntimeError when nothing is found
        return None
    return str(found) if found else None


def normalise_text(text: str) -> str:
    """Unicode NFKC, so that text extracted from PDFs matches what people type (``ﬁnancial`` → ``financial``).

    Beyond canonical composition (``e`` + combining acute → ``é``), NFKC replaces compatibility characters:
    ligatures (``ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ ĳ`` → ``ff fi fl ffi ffl st st ij``); full-width ASCII and punctuation (``Ａ１：`` →
    ``A1:``) and half-width katakana (→ full-width); superscripts and subscripts (``m²`` → ``m2``, ``H₂O`` →
    ``H2O``, ``ª º`` → ``a o``); fractions (``½`` → ``1⁄2``); no-break, narrow, en, em, thin and ideographic
    spaces (U+00A0, U+202F, U+2000–U+200A, U+3000 → space); ``…`` → ``...``, ``™`` → ``TM``, ``№`` → ``No``,
    ``℃`` → ``°C``; Roman-numeral, circled and parenthesised number signs (``Ⅻ ① ⑴`` → ``XII 1 (1)``); letter-like
    symbols (long ``ſ`` → ``s``, micro ``µ`` → ``μ``, Kelvin, Ohm and Ångström signs → the letters); spacing
    accents (``´ ¨ ¸ ¯``) → a space and the combining accent; Arabic presentation forms → the base letters; CJK
    compatibility ideographs → the unified ones. Ordinary text is unchanged: ASCII, precomposed accented letters,
    curly quotes and apostrophes, dashes, bullets, ``§ ° € ×`` and the soft hyphen stay as they are.

    >>> normalise_text("ﬁnancial oﬃcer, 25\\u00a0m², ½ day…")
    'financial officer, 25 m2, 1⁄2 day...'
    """
    return unicodedata.normalize(NORMALISATION, text)


def text_counts(text: str) -> tuple[int, int]:
    """``(letters, garbage)`` of a text layer: weighted letters and digits of any script, undecodable glyphs.

    Letters and digits are the Unicode categories L* and N* (Python's ``str.isalnum``); a CJK ideograph, kana or
    Hangul syllable counts twice, since one carries about as much as a short word. Garbage is U+FFFD, private-use
    and surrogate code points, control characters other than whitespace, and pdfminer-style ``(cid:NN)`` glyph
    codes (each counts once, its letters not at all) — what a text layer without a usable ToUnicode map yields.
    (Regular expressions, not a loop over characters: this runs on every page.)
    """
    garbage = len(_CID.findall(text))
    if garbage:
        text = _CID.sub("", text)
    alnum = _NOT_ALNUM.sub("", text)
    return len(alnum) + len(_WIDE.findall(alnum)), garbage + len(_GARBAGE.findall(text))


def has_usable_text(text: str) -> bool:
    """Whether a page's text layer carries enough real text to skip OCR (any script; see :func:`text_counts`).

    >>> has_usable_text("Договор поставки № 17"), has_usable_text("合同编号：二〇二四年")
    (True, True)
    >>> has_usable_text("\\ufffd" * 40), has_usable_text("(cid:12)" * 40)
    (False, False)
    """
    if _ENOUGH_LETTERS.match(text) and "(cid:" not in text and not _GARBAGE.search(text):
        return True  # the common case, without counting the page's letters: 16 found and no garbage at all
    letters, garbage = text_counts(text)
    return letters >= MIN_TEXT_CHARS and garbage <= MAX_GARBAGE_SHARE * (letters + garbage)


@dataclass(frozen=True)
class ExtractSettings:
    """How pages are read (recorded with every extracted corpus).

    Attributes:
        ocr_lang: Tesseract language(s), e.g. ``"eng+rus"``; ``None`` chooses per page from the installed data:
            English, and on a page English reads with low confidence, English plus the installed pack of the
            script Tesseract's OSD detects (see :mod:`.ocr`). An explicit language that is not installed makes
            :func:`extract_pdf` return an error naming the Debian package.
        dpi: OCR render resolution (lowered for a page that would exceed ``max_pixels``).
        max_pixels: cap on the pixels of one rendered page (large formats are downscaled to fit); bounds memory.
        osd: on a page read with low confidence, detect orientation (and turn the page upright) and script with
            Tesseract OSD, where installed (Debian ``tesseract-ocr-osd``).
    """

    ocr_lang: str | None = None
    dpi: int = OCR_DPI
    max_pixels: int = DEFAULT_MAX_PIXELS
    osd: bool = True


@dataclass
class PdfResult:
    """Extraction result for one PDF (picklable, returned by pool workers).

    Attributes:
        document: the PDF's file name.
        sha256: hex digest of its bytes.
        pages: ``{"document", "page", "text", "text_source"}`` rows, 1-based pages, in order.
        error: why the file was skipped (``None`` on success).
        ocr_needed_missing: pages that needed OCR while Tesseract was unavailable (OCR asked for): no usable text
            layer (named in a warning), or an invisible layer kept unchecked (:mod:`.pdf_hidden_text`).
        warnings: one-line messages about this file that did not stop it (a repaired file, a page that failed).
        attachments: the results of the PDFs attached to it (:mod:`.pdf_attachments`), named
            ``<document>#<name>``.
        name_in_parent: for an attachment, its name in the parent; ``parent``: the parent's document name.
    """

    document: str
    sha256: str
    pages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    ocr_needed_missing: int = 0
    from_cache: bool = False
    warnings: list[str] = field(default_factory=list)
    attachments: list[PdfResult] = field(default_factory=list)
    name_in_parent: str | None = None
    parent: str | None = None


def extract_pdf(
    path: Path,
    *,
    tessdata: str | None,
    ocr: bool = True,
    sha256: str | None = None,
    settings: ExtractSettings | None = None,
    depth: int = 0,
    tree: Any = None,
    tree_path: str = "",
) -> PdfResult:
    """Extract every page of one PDF.

    Args:
        path: the PDF file.
        tessdata: Tesseract's language-data folder; ``None`` means OCR is unavailable.
        ocr: whether to OCR pages without a usable text layer at all.
        sha256: the file's digest when the caller already has it (saves reading the file twice).
        settings: OCR languages, resolution, pixel cap, orientation detection (default :class:`ExtractSettings`).
        depth: how deep this file is attached in another (0: a file of the corpus; see :mod:`.pdf_attachments`).
        tree: for an attached file, what its corpus file attached so far (:class:`.pdf_attachments.AttachmentTree`:
            duplicates and the cap); ``tree_path``: its name path there (``annex.pdf#storm.pdf``).

    Returns:
        A :class:`PdfResult`; ``error`` is set (and ``pages`` empty) for a corrupt, encrypted or empty PDF, or
        an explicit ``ocr_lang`` that is not installed.
    """
    import pymupdf

    from .ocr import missing_languages_message
    from .pdf_attachments import extract_attachments
    from .pdf_revisions import check_revisions

    settings = settings or ExtractSettings()
    name = path.name
    try:
        sha = sha256 or sha256_file(path)
    except OSError as exc:
        return PdfResult(name, "", error=f"cannot read file: {exc.strerror or exc}")
    if ocr and tessdata and settings.ocr_lang and (problem := missing_languages_message(settings.ocr_lang, tessdata)):
        return PdfResult(name, sha, error=problem)
    pymupdf.TOOLS.mupdf_warnings(reset=True)
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:  # noqa: BLE001 - PyMuPDF raises several unrelated types for broken files
        return PdfResult(name, sha, error=f"not a readable PDF ({exc})")
    doc, revision_warnings = check_revisions(doc, path)  # a broken /Prev chain: rebuilt by scanning
    with doc:
        if doc.needs_pass or doc.is_encrypted:
            return PdfResult(name, sha, error="encrypted PDF (needs a password)")
        if doc.page_count == 0:
            if doc.is_repaired:  # e.g. a corrupt xref stream over broken object streams: nothing to recover
                problem = _mupdf_problem()
                return PdfResult(
                    name,
                    sha,
                    error="damaged PDF: MuPDF repaired it and recovered no page"
                    + (f" ({problem[:300]})" if problem else ""),
                )
            return PdfResult(name, sha, error="PDF has zero pages")
        result = PdfResult(name, sha)
        reader = _PageReader(doc, result, tessdata=tessdata if ocr else None, ocr=ocr, settings=settings)
        for index in range(doc.page_count):
            result.pages.append(reader.read(index))
        # The pages are read: what follows only adds to them, and a failure there (a corrupt object stream met
        # while counting a repaired file's page objects, a broken attachment) costs that pass, never the pages.
        result.warnings[:0] = revision_warnings or _after_pages(
            "the repair check", result, lambda: _repair_warnings(doc)
        )
        result.warnings.extend(reader.notes())

        def attached(child: Path, level: int, shared: Any, where: str) -> PdfResult:
            return extract_pdf(
                child, tessdata=tessdata, ocr=ocr, settings=settings, depth=level, tree=shared, tree_path=where
            )

        def attachments() -> list[str]:
            extract_attachments(doc, result, attached, depth, reader.annotated, tree, tree_path)
            return []

        result.warnings.extend(_after_pages("reading the attached files", result, attachments))
    return result


def _after_pages(what: str, result: PdfResult, run: Any) -> list[str]:
    """``run()``'s warnings; when it raises, one warning saying so and that the pages read are kept."""
    try:
        return list(run())
    except Exception as exc:  # noqa: BLE001 - MuPDF raises several unrelated types for broken files
        logger.info("%s: %s failed after its pages were read", result.document, what, exc_info=True)
        return [f"{what} failed ({_reason(exc)}); the {len(result.pages)} page(s) read are kept"]


class _PageReader:
    """Reads the pages of one open document, collecting per-page warnings into the result."""

    def __init__(
        self, doc: Any, result: PdfResult, *, tessdata: str | None, ocr: bool, settings: ExtractSettings
    ) -> None:
        self.doc, self.result, self.tessdata, self.ocr, self.settings = doc, result, tessdata, ocr, settings
        self._notes: dict[str, list[int]] = {}
        self._missing: set[int] = set()  # pages that needed OCR without Tesseract
        #: pages with annotations, or that could not be read: where file attachments may be (:mod:`.pdf_attachments`)
        self.annotated: list[int] = []

    def read(self, index: int) -> dict[str, Any]:
        """The row of page ``index`` (0-based); never raises for a bad page."""
        import pymupdf

        from .pdf_content import read_page

        number = index + 1
        pymupdf.TOOLS.mupdf_warnings(reset=True)
        try:
            page = self.doc.load_page(index)
            if page.first_annot is not None:
                self.annotated.append(index)
            content = read_page(page)
        except Exception as exc:  # noqa: BLE001 - one page's failure is that page's
            if index not in self.annotated:
                self.annotated.append(index)
            return self._lost(number, f"cannot be read ({_reason(exc)})")
        text = normalise_text(content.text)
        source = "pdf" if text.strip() else "none"
        if content.hidden and text_counts(content.hidden)[0]:  # hidden text: the rule of .pdf_hidden_text
            text, source, checked = self._hidden(page, number, content, text)
            if checked:
                return self._row(number, text, source)
        usable = has_usable_text(text)
        if self.ocr and (not usable or needs_scan_check(page, text, content.form)):
            if self.tessdata is None:
                self._tesseract_missing(number, NO_TESSERACT_NOTE if not usable else SCAN_NO_TESSERACT_NOTE)
            elif (done := self._ocr(page, number, text)) is None:
                return self._row(number, text, source)  # OCR failed, and said so
            elif _garbled(text):  # undecodable glyphs: OCR replaces them unless it reads fewer letters
                if text_counts(done)[0] >= text_counts(text)[0]:
                    text, source = done, "ocr"
            else:  # a short or scan-covering layer: kept, with OCR's lines where they add (.pdf_scan_layer)
                text, source = self._combine(number, text, done)
        if not text.strip() and (mupdf := _mupdf_problem()):
            return self._lost(number, f"no text ({mupdf})")
        return self._row(number, text, source)

    def _hidden(self, page: Any, number: int, content: Any, visible: str) -> tuple[str, str, bool]:
        """``(text, source, OCR done)`` for a page with hidden text (see :func:`.pdf_hidden_text.judge_hidden`)."""
        from .pdf_hidden_text import judge_hidden

        form = content.form

        ocr = self._ocr(page, number, visible) if self.tessdata is not None else None
        verdict = judge_hidden(
            visible=visible,
            full=normalise_text(content.full),
            hidden=content.hidden,
            kinds=content.kinds,
            ocr=ocr,
            visible_usable=has_usable_text(visible),
        )
        if verdict.warning:
            self.result.warnings.append(f"page {number}: {verdict.warning}")
        if verdict.note:
            self._notes.setdefault(verdict.note, []).append(number)
            if self.ocr and self.tessdata is None:  # kept unchecked for want of Tesseract: a run with it checks it
                self._tesseract_missing(number)
        text, source = verdict.text, verdict.source
        if ocr is not None and source == "pdf" and (not has_usable_text(text) or needs_scan_check(page, text, form)):
            text, source = self._combine(number, text, ocr)  # as for any page: a stamp over a scan keeps its OCR
        return text, source if text.strip() else "none", ocr is not None

    def _combine(self, number: int, layer: str, ocr: str) -> tuple[str, str]:
        """What a page keeps of its text layer and OCR (:func:`.pdf_scan_layer.combine`), noted when both."""
        kept = combine(layer, ocr)
        if kept.source == "pdf+ocr":
            self._notes.setdefault(BOTH_KEPT_NOTE, []).append(number)
        return kept.text, kept.source

    def _tesseract_missing(self, number: int, note: str | None = None) -> None:
        """Count a page that needed OCR while Tesseract is missing (once): the run exits 3, the file is not cached."""
        if number not in self._missing:
            self._missing.add(number)
            self.result.ocr_needed_missing += 1
            if note:
                self._notes.setdefault(note, []).append(number)

    def _ocr(self, page: Any, number: int, text: str) -> str | None:
        """The page's OCR text, or ``None`` (with a warning) when rendering or OCR failed."""
        from .ocr import ocr_page

        try:
            done = ocr_page(
                page,
                tessdata=self.tessdata or "",
                dpi=self.settings.dpi,
                max_pixels=self.settings.max_pixels,
                ocr_lang=self.settings.ocr_lang,
                osd=self.settings.osd,
            )
        except Exception as exc:  # noqa: BLE001 - a page that fails to render or OCR loses only itself
            kept = "its text layer is kept" if text.strip() else "no text"
            self.result.warnings.append(f"page {number}: OCR failed ({_reason(exc)}); {kept}")
            return None
        if done.note:
            self._notes.setdefault(done.note, []).append(number)
        return normalise_text(done.text)

    def _row(self, number: int, text: str, source: str) -> dict[str, Any]:
        return {"document": self.result.document, "page": number, "text": text, "text_source": source}

    def _lost(self, number: int, reason: str) -> dict[str, Any]:
        self.result.warnings.append(f"page {number}: {reason}")
        return self._row(number, "", "none")

    def notes(self) -> list[str]:
        """One warning per OCR remark, naming its pages (``pages 2-4, 7: Cyrillic script detected but …``)."""
        return [f"{_pages_label(pages)}: {note}" for note, pages in self._notes.items()]


def _garbled(text: str) -> bool:
    """Whether a text layer is unusable for its undecodable glyphs rather than for being short."""
    letters, garbage = text_counts(text)
    return garbage > MAX_GARBAGE_SHARE * (letters + garbage)


def _repair_warnings(doc: Any) -> list[str]:
    """What to say about a file MuPDF had to repair (damaged or truncated)."""
    if not doc.is_repaired:
        return []
    message = "damaged file (e.g. truncated), repaired by MuPDF: pages may be missing or incomplete"
    found = unreadable = 0
    for xref in range(1, doc.xref_length()):
        try:
            found += doc.xref_get_key(xref, "Type") == ("name", "/Page")
        except Exception:  # noqa: BLE001 - e.g. FzErrorFormat "corrupt object stream": the pages read are kept
            unreadable += 1
    if found != doc.page_count:
        message += f" (its page tree lists {doc.page_count} pages, {found} page objects were found)"
    if unreadable:
        message += f"; {unreadable} object(s) could not be read"
    return [message]


def _mupdf_problem() -> str | None:
    """MuPDF's complaints since the last reset, as ``MuPDF: a; b`` (``None`` when it had none)."""
    import pymupdf

    lines = [line.strip() for line in pymupdf.TOOLS.mupdf_warnings(reset=True).splitlines()]
    lines = list(dict.fromkeys(line for line in lines if line and not line.startswith("... repeated")))
    if not lines:
        return None
    joined = "; ".join(lines)
    return "MuPDF: " + (joined if len(joined) <= 200 else joined[:197] + "...")


def _reason(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _pages_label(pages: list[int]) -> str:
    """``page 3`` or ``pages 2-4, 7``."""
    runs: list[list[int]] = []
    for page in sorted(pages):
        if runs and page == runs[-1][1] + 1:
            runs[-1][1] = page
        else:
            runs.append([page, page])
    label = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
    return f"page {label}" if len(pages) == 1 else f"pages {label}"
