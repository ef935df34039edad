"""Tesseract itself, for :mod:`.ocr`: its C API (``libtesseract``) through ctypes, else the ``tesseract`` command.

In process, one initialised engine per language set is kept for the life of the process (loading a model costs
0.1-0.2 s; an engine holds tens of MB), and the page image is handed over as raw grayscale pixels: no image file
and no model load per page. When the library cannot be loaded, the ``tesseract`` command is run on a PNG of the
same image (it gives no word confidence).
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import logging
import re
import subprocess
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

#: Tesseract's ``min_characters_to_try`` for OSD (it classifies up to 5x this many glyphs; Tesseract's default 50).
OSD_MIN_CHARACTERS = 20
#: A command-line Tesseract run on one page is stopped after this many seconds (fallback path only).
CLI_TIMEOUT_S = 600.0


class OcrError(RuntimeError):
    """Tesseract could not OCR a page (the message says why, in one line)."""


@dataclass(frozen=True)
class Orientation:
    """Tesseract OSD's answer for one page image.

    Attributes:
        degrees: how far the text is turned counter-clockwise (0, 90, 180, 270); turning the image back by it makes
            the text upright.
        confidence: orientation confidence (Tesseract's margin over the next best).
        script: the dominant script, by Tesseract's names (``Latin``, ``Cyrillic``, ``Han``, ...).
        script_confidence: script confidence.
    """

    degrees: int
    confidence: float
    script: str
    script_confidence: float


def detect(image: Any, dpi: float, tessdata: str) -> Orientation | None:
    """Orientation and script of a grayscale page image (2-D uint8 array); ``None`` when it has too little text."""
    lib = _library()
    if lib is None:
        return _cli_detect(image, dpi, tessdata)
    with _LOCK:
        return _engine(lib, tessdata, "osd").detect(image, dpi)


def recognise(image: Any, dpi: float, langs: str, tessdata: str) -> tuple[str, int | None]:
    """The text of a grayscale page image and Tesseract's mean word confidence (0-100; ``None`` from the command)."""
    lib = _library()
    if lib is None:
        return _cli_recognise(image, dpi, langs, tessdata), None
    with _LOCK:
        return _engine(lib, tessdata, langs).recognise(image, dpi)


# --- libtesseract through ctypes -------------------------------------------------------------------------------

_LOCK = threading.Lock()
_LIB: Any = None
_ENGINES: OrderedDict[tuple[str, str], _Engine] = OrderedDict()
#: Engines kept per process (each holds its language models: tens of MB).
_MAX_ENGINES = 3
_LIBRARY_NAMES = ("libtesseract.so.5", "libtesseract.so.4", "libtesseract.5.dylib")


def _library() -> Any:
    """The loaded C API of libtesseract, or ``None`` when it cannot be loaded (then the CLI is used)."""
    global _LIB
    if _LIB is None:
        _LIB = False
        for name in (*_LIBRARY_NAMES, None):
            name = name or ctypes.util.find_library("tesseract")  # last: it runs ldconfig
            if not name:
                continue
            try:
                _LIB = _declare(ctypes.CDLL(name))
                break
            except (OSError, AttributeError):
                continue
        if _LIB is False:
            logger.info("libtesseract could not be loaded; OCR runs the tesseract command instead")
    return _LIB or None


def _declare(lib: Any) -> Any:
    from ctypes import POINTER, c_char_p, c_float, c_int, c_void_p

    signatures: dict[str, tuple[list[Any], Any]] = {
        "TessBaseAPICreate": ([], c_void_p),
        "TessBaseAPIDelete": ([c_void_p], None),
        "TessBaseAPIEnd": ([c_void_p], None),
        "TessBaseAPIInit3": ([c_void_p, c_char_p, c_char_p], c_int),
        "TessBaseAPISetVariable": ([c_void_p, c_char_p, c_char_p], c_int),
        "TessBaseAPISetImage": ([c_void_p, c_void_p, c_int, c_int, c_int, c_int], None),
        "TessBaseAPISetSourceResolution": ([c_void_p, c_int], None),
        "TessBaseAPIDetectOrientationScript": (
            [c_void_p, POINTER(c_int), POINTER(c_float), POINTER(c_char_p), POINTER(c_float)],
            c_int,
        ),
        "TessBaseAPIGetUTF8Text": ([c_void_p], c_void_p),
        "TessBaseAPIMeanTextConf": ([c_void_p], c_int),
        "TessBaseAPIClear": ([c_void_p], None),
        "TessDeleteText": ([c_void_p], None),
    }
    for name, (args, result) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result
    return lib


class _Engine:
    """One initialised Tesseract (``TessBaseAPI``) for one language set."""

    def __init__(self, lib: Any, tessdata: str, langs: str) -> None:
        self.lib, self.langs = lib, langs
        self.handle = lib.TessBaseAPICreate()
        if lib.TessBaseAPIInit3(self.handle, tessdata.encode(), langs.encode()) != 0:
            lib.TessBaseAPIDelete(self.handle)
            raise OcrError(f"Tesseract could not load the language data {langs} from {tessdata}")
        # Tesseract's progress remarks ("Too few characters", "Estimating resolution") go nowhere, not to stderr.
        lib.TessBaseAPISetVariable(self.handle, b"debug_file", b"/dev/null")
        if langs == "osd":
            lib.TessBaseAPISetVariable(self.handle, b"min_characters_to_try", str(OSD_MIN_CHARACTERS).encode())

    def _set_image(self, image: Any, dpi: float) -> None:
        import numpy as np

        image = np.ascontiguousarray(image)
        height, width = image.shape
        self.lib.TessBaseAPISetImage(self.handle, image.ctypes.data, width, height, 1, width)  # copies the pixels
        self.lib.TessBaseAPISetSourceResolution(self.handle, max(1, round(dpi)))

    def detect(self, image: Any, dpi: float) -> Orientation | None:
        degrees, confidence = ctypes.c_int(), ctypes.c_float()
        script, script_confidence = ctypes.c_char_p(), ctypes.c_float()
        self._set_image(image, dpi)
        try:
            ok = self.lib.TessBaseAPIDetectOrientationScript(
                self.handle,
                ctypes.byref(degrees),
                ctypes.byref(confidence),
                ctypes.byref(script),
                ctypes.byref(script_confidence),
            )
        finally:
            self.lib.TessBaseAPIClear(self.handle)
        if not ok:
            return None
        name = (script.value or b"").decode("ascii", "replace")
        return Orientation(degrees.value % 360, confidence.value, name, script_confidence.value)

    def recognise(self, image: Any, dpi: float) -> tuple[str, int]:
        self._set_image(image, dpi)
        try:
            pointer = self.lib.TessBaseAPIGetUTF8Text(self.handle)
            if not pointer:
                raise OcrError(f"Tesseract ({self.langs}) returned no result")
            try:
                text = ctypes.string_at(pointer).decode("utf-8", "replace")
            finally:
                self.lib.TessDeleteText(pointer)
            return text, self.lib.TessBaseAPIMeanTextConf(self.handle)
        finally:
            self.lib.TessBaseAPIClear(self.handle)

    def close(self) -> None:
        self.lib.TessBaseAPIEnd(self.handle)
        self.lib.TessBaseAPIDelete(self.handle)


def _engine(lib: Any, tessdata: str, langs: str) -> _Engine:
    key = (tessdata, langs)
    engine = _ENGINES.get(key)
    if engine is None:
        if not _ENGINES:
            atexit.register(close_engines)
        engine = _ENGINES[key] = _Engine(lib, tessdata, langs)
        while len(_ENGINES) > _MAX_ENGINES:
            _ENGINES.popitem(last=False)[1].close()
    _ENGINES.move_to_end(key)
    return engine


def close_engines() -> None:
    """Free the Tesseract engines of this process (also run at exit, so Tesseract reports no leaks)."""
    with _LOCK:
        while _ENGINES:
            _ENGINES.popitem()[1].close()


# --- fallback: the tesseract command ---------------------------------------------------------------------------


def _png(image: Any) -> bytes:
    import pymupdf

    height, width = image.shape
    return pymupdf.Pixmap(pymupdf.csGRAY, width, height, image.tobytes(), 0).tobytes("png")  # tobytes: C order


def _cli(image: Any, dpi: float, tessdata: str, args: list[str]) -> str:
    command = ["tesseract", "stdin", "stdout", "--tessdata-dir", tessdata, "--dpi", str(max(1, round(dpi))), *args]
    try:
        done = subprocess.run(command, input=_png(image), capture_output=True, timeout=CLI_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise OcrError(f"tesseract took more than {CLI_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        raise OcrError(f"cannot run tesseract: {exc.strerror or exc}") from None
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        raise OcrError(f"tesseract exited with status {done.returncode}: {last}")
    return done.stdout.decode("utf-8", "replace")


def _cli_detect(image: Any, dpi: float, tessdata: str) -> Orientation | None:
    try:
        out = _cli(image, dpi, tessdata, ["--psm", "0", "-c", f"min_characters_to_try={OSD_MIN_CHARACTERS}"])
    except OcrError:  # "Too few characters. Skipping this page" ends with a non-zero status
        return None
    fields = dict(re.findall(r"^([A-Za-z ]+): (.+)$", out, flags=re.M))
    try:
        return Orientation(
            int(fields["Orientation in degrees"]) % 360,
            float(fields["Orientation confidence"]),
            fields["Script"].strip(),
            float(fields["Script confidence"]),
        )
    except (KeyError, ValueError):
        return None


def _cli_recognise(image: Any, dpi: float, langs: str, tessdata: str) -> str:
    return _cli(image, dpi, tessdata, ["-l", langs]).replace("\f", "")
