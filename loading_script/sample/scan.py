"""Image-only "scanned" pages: a rendered page with slight skew, paper tone and sensor noise."""

from __future__ import annotations

import io
import random

import numpy as np
import pymupdf
from PIL import Image

#: Resolution of the simulated scanner.
SCAN_DPI = 200
#: Largest skew, in degrees.
MAX_SKEW = 1.5


def rasterise(page: pymupdf.Page, rng: random.Random, dpi: int = SCAN_DPI) -> bytes:
    """Render ``page`` as a degraded grayscale scan.

    Args:
        page: the vector page to photograph.
        rng: source of the skew angle and the noise seed.
        dpi: scan resolution.

    Returns:
        JPEG bytes of the scan (deterministic for a given ``rng`` state).
    """
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    # Kept well under MAX_SKEW: across a full-width table a larger skew tilts the rules into neighbouring text
    # lines, and Tesseract then discards those lines as graphics.
    angle = rng.choice((-1.0, 1.0)) * rng.uniform(0.2, 0.7)
    image = image.rotate(angle, resample=Image.Resampling.BICUBIC, fillcolor=255)
    noise_rng = np.random.default_rng(rng.getrandbits(32))
    pixels = np.asarray(image, dtype=np.float32)
    pixels = pixels * 0.93 + 12.0  # paper tone: white becomes light gray, ink stays dark
    pixels += noise_rng.normal(0.0, 6.0, pixels.shape).astype(np.float32)
    specks = noise_rng.random(pixels.shape) < 0.0003
    pixels[specks] = noise_rng.uniform(60.0, 160.0, int(specks.sum())).astype(np.float32)
    degraded = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), mode="L")
    buffer = io.BytesIO()
    degraded.save(buffer, format="JPEG", quality=82)
    return buffer.getvalue()
