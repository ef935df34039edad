"""Images too big for MuPDF to decode within an OCR worker's memory bound: progressive JPEGs.

MuPDF renders a page at the OCR resolution and decodes a baseline JPEG scaled down (libjpeg's DCT scaling), so
a 300 dpi A0 scan costs little more than the pixels rendered. A *progressive* JPEG cannot be decoded in one pass:
libjpeg keeps every DCT coefficient of the image (2 bytes per sample of each component) until the last scan, and
MuPDF adds full-size buffers on top (measured: 684 MB peak RSS for one worker on an A0 page holding a 300 dpi
progressive RGB JPEG, where the README promised 600). :func:`prepare_page` runs before a page is rendered for
OCR and, for each progressive JPEG on it whose coefficients exceed :data:`SELF_DECODE_BYTES`:

* when they and the decoded pixels fit :data:`DECODE_BUDGET_BYTES`, decodes it with Pillow (in a child process
  of its own, so that the worker's own memory does not add up with the decoder's), scaled in the
  decoder and in grayscale, to the pixels the page will be rendered at, and swaps it into the open document (in
  memory; the file is not touched) as a small grayscale JPEG, which MuPDF then renders as usual;
* when they do not (e.g. an A0 page at 300 dpi with full-resolution colour, 4:4:4: 832 MiB in all),
  raises :class:`.tesseract.OcrError` naming the image and what it would need: the page keeps its row and is
  named in the file's warnings, rather than the worker going over its bound or being killed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .tesseract import OcrError

#: The peak RSS one OCR worker stays under (the documented bound, docs/extraction.md;
#: tests/loading_script/test_extract_memory.py measures it).
WORKER_BOUND_MIB = 600
#: A progressive JPEG whose DCT coefficients take more than this is decoded here, not by MuPDF.
SELF_DECODE_BYTES = 32 * 2**20
#: ... and one whose coefficients plus decoded pixels take more than this is not decoded at all: a worker without
#: a page holds about 140 MiB (Python, NumPy, MuPDF), so its peak stays under :data:`WORKER_BOUND_MIB`. A 300 dpi
#: A0 scan in 4:2:0 colour (what scanners and Pillow write) needs 433 MiB in all.
DECODE_BUDGET_BYTES = 440 * 2**20
#: Quality of the grayscale JPEG that stands in for a decoded progressive one.
STAND_IN_QUALITY = 92
_PROGRESSIVE_SOF = frozenset({0xC2, 0xC6, 0xCA, 0xCE})
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # C4 DHT, C8 JPG, CC DAC are not frames


@dataclass(frozen=True)
class JpegFrame:
    """What a JPEG's frame header says: size, whether it is progressive, each component's sampling factors."""

    width: int
    height: int
    progressive: bool
    sampling: tuple[tuple[int, int], ...]

    @property
    def coefficient_bytes(self) -> int:
        """Bytes libjpeg holds for all DCT coefficients of the image (64 per 8x8 block, 2 bytes each)."""
        h_max = max(h for h, _ in self.sampling)
        v_max = max(v for _, v in self.sampling)
        blocks = sum(
            math.ceil(self.width * h / h_max / 8) * math.ceil(self.height * v / v_max / 8) for h, v in self.sampling
        )
        return blocks * 64 * 2

    def decoded_pixels(self, width: int, height: int) -> int:
        """Pixels of the grayscale image libjpeg gives when asked for at least ``width`` x ``height``.

        Pillow's ``draft`` picks the largest of the scales 1/8, 1/4, 1/2 that keeps both sides at least that big.
        """
        ratio = min(self.width // max(1, width), self.height // max(1, height))
        scale = next((a for a in (8, 4, 2) if ratio >= a), 1)  # asked for more than it has: full size
        return math.ceil(self.width / scale) * math.ceil(self.height / scale)


def jpeg_frame(data: bytes) -> JpegFrame | None:
    """The frame header of a JPEG stream (``None`` when ``data`` is not a JPEG or has no frame header)."""
    if data[:2] != b"\xff\xd8":
        return None
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            pos += 2
            continue
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if marker in _SOF:
            seg = data[pos + 4 : pos + 2 + length]
            if len(seg) < 6:
                return None
            height, width, count = int.from_bytes(seg[1:3], "big"), int.from_bytes(seg[3:5], "big"), seg[5]
            sampling = tuple((seg[7 + 3 * i] >> 4, seg[7 + 3 * i] & 15) for i in range(count) if 8 + 3 * i < len(seg))
            if not sampling or not width or not height or any(not h or not v for h, v in sampling):
                return None
            return JpegFrame(width, height, marker in _PROGRESSIVE_SOF, sampling)
        pos += 2 + length
    return None


def prepare_page(page: Any, zoom: float) -> list[str]:
    """Swap each big progressive JPEG on ``page`` for a grayscale stand-in at the pixels rendered at ``zoom``.

    Returns:
        One line per image swapped (for the log).

    Raises:
        OcrError: an image would need more than :data:`DECODE_BUDGET_BYTES` to decode.
    """
    doc = page.parent
    done = []
    for xref, *_, filter_name, _referencer in page.get_images(full=True):
        if filter_name != "DCTDecode":
            continue
        raw = doc.xref_stream_raw(xref)
        frame = jpeg_frame(raw)
        if frame is None or not frame.progressive or frame.coefficient_bytes <= SELF_DECODE_BYTES:
            continue
        width, height = (max(1, math.ceil(side * zoom)) for side in _largest_image_box(page))
        need = frame.coefficient_bytes + frame.decoded_pixels(width, height)
        if need > DECODE_BUDGET_BYTES:
            raise OcrError(
                f"a progressive JPEG of {frame.width}x{frame.height} pixels needs {need / 2**20:.0f} MiB "
                f"to decode (libjpeg holds all its coefficients), more than an OCR worker's "
                f"{WORKER_BOUND_MIB} MiB allow"
            )
        stand_in = _decode_scaled(raw, width, height, frame)
        del raw
        page.replace_image(xref, stream=stand_in)
        done.append(f"progressive JPEG {frame.width}x{frame.height} decoded scaled ({need / 2**20:.0f} MiB)")
    return done


def _largest_image_box(page: Any) -> tuple[float, float]:
    """Width and height (points, within the page) of the largest image drawn on ``page``.

    MuPDF's bbox log places images without decoding them (``get_image_rects`` decodes each whole, which is
    what this module avoids); it does not say which image is which, so every stand-in gets the largest size.
    """
    import pymupdf

    best = (0.0, 0.0)
    for kind, box in page.get_bboxlog():
        if kind == "fill-image":
            rect = pymupdf.Rect(box) & page.rect
            best = max(best, (rect.width, rect.height), key=lambda wh: wh[0] * wh[1])
    return best if best[0] * best[1] > 0 else (page.rect.width, page.rect.height)


#: The decoder process's program: a bare interpreter with only Pillow imported, so that the coefficients (up to
#: :data:`DECODE_BUDGET_BYTES`) come on top of ~20 MiB rather than on top of the OCR worker's own ~150 MiB (MuPDF,
#: Tesseract, the open document): decoded in the worker, a 300 dpi A0 page peaked at 580-601 MiB.
_DECODE_PROGRAM = """
import io, sys
from PIL import Image
width, height, quality = map(int, sys.argv[1:4])
Image.MAX_IMAGE_PIXELS = None  # the parent checked the size, by what decoding costs
with Image.open(io.BytesIO(sys.stdin.buffer.read())) as image:
    image.draft("L", (width, height))
    gray = image.convert("L")
if gray.size[0] > width:
    gray = gray.resize((width, height), Image.Resampling.BOX)
gray.save(sys.stdout.buffer, "JPEG", quality=quality)
"""


def _decode_scaled(raw: bytes, width: int, height: int, frame: JpegFrame) -> bytes:
    """Pillow decodes ``raw`` in grayscale, scaled by libjpeg to at least ``width`` x ``height`` (never up).

    It runs in a child process (see :data:`_DECODE_PROGRAM`), which inherits the worker's OOM-killer preference.
    """
    import subprocess
    import sys

    width, height = min(width, frame.width), min(height, frame.height)
    done = subprocess.run(
        [sys.executable, "-I", "-c", _DECODE_PROGRAM, str(width), str(height), str(STAND_IN_QUALITY)],
        input=raw,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0 or not done.stdout:
        detail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        raise OcrError(f"a progressive JPEG of {frame.width}x{frame.height} pixels could not be decoded: {detail[0]}")
    return done.stdout
