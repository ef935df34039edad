"""Page rendering and image-encoder measurements (the render part of `madqa bench search`, :mod:`.search`).

Renders the first pages of each PDF with :class:`madqa.agents.corpus.render.PageRenderer` (cache off) and encodes every
image with each candidate encoder, the encoders in turn on each image (:func:`.measure.alternate`); the figures chose
:data:`madqa.agents.corpus.render.ENCODER`.
"""

from __future__ import annotations

import io
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from madqa.agents.corpus.render import DEFAULT_DPI, PageRenderer

from .measure import alternate, percentile


def _pil(fmt: str, **options: Any) -> Callable[[Any], bytes]:
    def encode(image: Any) -> bytes:
        out = io.BytesIO()
        image.save(out, format=fmt, **options)
        return out.getvalue()

    return encode


def _pymupdf(fmt: str, **options: Any) -> Callable[[Any], bytes]:
    def encode(image: Any) -> bytes:
        import pymupdf

        pix = pymupdf.Pixmap(pymupdf.csRGB, image.width, image.height, image.tobytes(), 0)
        return bytes(pix.tobytes(fmt, **options))

    return encode


def candidate_encoders() -> dict[str, Callable[[Any], bytes]]:
    """The encoders compared: PIL PNG at three zlib levels, PyMuPDF's PNG and JPEG, PIL JPEG and WebP."""
    return {
        "PIL PNG level 6 (PIL default)": _pil("PNG"),
        "PIL PNG level 3": _pil("PNG", compress_level=3),
        "PIL PNG level 1": _pil("PNG", compress_level=1),
        "PyMuPDF PNG": _pymupdf("png"),
        "PyMuPDF JPEG q90": _pymupdf("jpeg", jpg_quality=90),
        "PIL JPEG q85": _pil("JPEG", quality=85),
        "PIL JPEG q90": _pil("JPEG", quality=90),
        "PIL WebP q85 method 0": _pil("WEBP", quality=85, method=0),
    }


def bench_render(
    pdfs: Sequence[Path], *, dpi: int = DEFAULT_DPI, per_document: int = 3, max_pages: int = 60
) -> dict[str, Any]:
    """Render up to ``per_document`` first pages of each PDF (``max_pages`` in all) and encode them every way.

    Returns:
        ``pages``, ``image_size`` (of the first page), ``render_p50_ms``/``render_p95_ms`` (PDF page to PIL image,
        size cap included) and ``encoders``: name → ``median_ms``, ``mean_kib``, ``max_kib``; the renderer's own
        :meth:`~madqa.agents.corpus.render.PageRenderer.encode` is listed as ``madqa encode()``.
    """
    import pymupdf

    renderer = PageRenderer({p.name: p for p in pdfs}, dpi=dpi, cache_mb=0)
    wanted: list[tuple[str, int]] = []
    for pdf in pdfs:
        with pymupdf.open(str(pdf)) as doc:
            wanted += [(pdf.name, i + 1) for i in range(min(per_document, doc.page_count))]
    wanted = wanted[:max_pages]
    images, render_ms = [], []
    for document, page in wanted:
        t0 = time.perf_counter()
        images.append(renderer.image(document, page))
        render_ms.append(1000 * (time.perf_counter() - t0))
    renderer.close()
    encoders = {**candidate_encoders(), "madqa encode()": renderer.encode}
    sizes: dict[str, list[float]] = {name: [] for name in encoders}

    def encoding_with(name: str) -> Callable[[Any], None]:
        return lambda image: sizes[name].append(len(encoders[name](image)) / 1024)

    # Every encoder on one image, then every encoder on the next: the machine's load falls on all of them alike.
    timed = alternate({name: encoding_with(name) for name in encoders}, images, repeats=1)
    figures: dict[str, dict[str, float]] = {}
    for name in encoders:
        ms = [1000 * s for s in timed.seconds[name][0]]
        figures[name] = {
            "median_ms": statistics.median(ms) if ms else float("nan"),
            "mean_kib": statistics.fmean(sizes[name]) if sizes[name] else float("nan"),
            "max_kib": max(sizes[name], default=float("nan")),
        }
    return {
        "pdfs": len(pdfs),
        "pages": len(images),
        "dpi": dpi,
        "image_size": list(images[0].size) if images else None,
        "render_p50_ms": statistics.median(render_ms) if render_ms else float("nan"),
        "render_p95_ms": percentile(render_ms, 0.95),
        "encoders": figures,
    }
