"""Pages as images (for vision models) or as text (for text-only models), with the one image-size policy.

:class:`PageRenderer` renders a PDF page with PyMuPDF at ``dpi`` (150 by default), applies the size cap for
model providers here and nowhere else, and keeps recently rendered pages in an LRU cache:

* **pixels**: the longest side is at most ``max_side`` (2000 px: Anthropic's limit per image once a request holds
  more than 20 images; OpenAI and Gemini downscale larger images themselves) and the area at most ``max_pixels``
  (off by default). The cap lowers the rendering zoom, so a capped page is rendered once, sharp, at its final size;
* **bytes**: :meth:`PageRenderer.encode` shrinks an image (Lanczos, in steps) until its encoding fits
  ``max_bytes`` (3.75 MB, so the base64 form stays under Anthropic's 5 MB), as the paper's agent does.

Encoder choice (:data:`ENCODER`): PIL's JPEG at quality 90, the fastest encoder measured at half PNG's size.
Measured by ``madqa bench search`` (its render part; after `madqa setup`) on the sample's PDFs: 60 pages, the first
three of each document, US Letter at 150 dpi = 1275 x 1650 px; rendering to a PIL image took 14.2 ms median. Two
cores shared with other jobs (load average about 2.6)::

    encoder                         median    mean size   max size
    PIL PNG level 6 (PIL default)   57.3 ms   379 KiB     1880 KiB
    PIL PNG level 3                 39.4 ms   361 KiB     1689 KiB
    PIL PNG level 1                 37.6 ms   408 KiB     1973 KiB
    PyMuPDF PNG                     46.8 ms   343 KiB     1743 KiB
    PyMuPDF JPEG q90                90.9 ms   177 KiB      459 KiB
    PIL JPEG q85                     7.5 ms   170 KiB      454 KiB
    PIL JPEG q90                     6.3 ms   202 KiB      529 KiB
    PIL WebP q85 method 0           57.1 ms   100 KiB      323 KiB

(An earlier run under heavier load gave the same order: PNG level 6 108 ms, JPEG q90 12 ms.) Providers accept
PNG, JPEG and WebP alike. Note that smolagents encodes PIL images it sends to API models as PNG itself, so a tool
that wants this encoder must hand over encoded bytes.
"""

from __future__ import annotations

import io
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

DEFAULT_DPI = 150
#: Longest image side in pixels (see the module docstring).
DEFAULT_MAX_SIDE = 2000
#: Largest encoded image in bytes: 3.75 MB raw is 5 MB in base64.
DEFAULT_MAX_BYTES = 3_750_000
#: Rendered pages kept in memory (by decoded size: a 150-dpi Letter page is about 6 MiB).
DEFAULT_CACHE_MB = 256
#: Open PDF files kept between renders.
OPEN_DOCUMENTS = 8

#: The image format :meth:`PageRenderer.encode` writes, chosen by measurement (module docstring).
ENCODER = "JPEG"
MIME_TYPE = "image/jpeg"
#: JPEG quality (costs no more time than 85 in the measurements above, for sharper small print).
JPEG_QUALITY = 90

Resolver = Callable[[str], "str | os.PathLike[str]"]


class PageNotFoundError(LookupError):
    """An unknown document or a page outside a document; the message names what exists."""


class PageRenderer:
    """Render pages of a document collection as images and look up their text.

    Args:
        source: where the PDFs are: a dataset spec (``"sample"``, a dataset folder, a Hub id; ``None`` means the
            default dataset), a mapping from document name to PDF path, or a callable returning a document's path.
        pages: pages rows (``document``, ``page``, ``text``) for :meth:`text`; default: the dataset's ``pages``
            config, loaded on first use (only possible when ``source`` is a dataset spec).
        dpi: rendering resolution before the size cap.
        max_side: longest image side in pixels (``None``: no cap).
        max_pixels: largest image area in pixels (``None``: no cap).
        max_bytes: largest encoded image for :meth:`encode` (``None``: no cap).
        cache_mb: memory for rendered pages (0 disables the cache).

    Rendering is serialised by a lock (PyMuPDF is not thread-safe); cached pages are returned without copying,
    so callers must not modify returned images.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]] | Resolver | None = None,
        *,
        pages: Iterable[Mapping[str, Any]] | None = None,
        dpi: int = DEFAULT_DPI,
        max_side: int | None = DEFAULT_MAX_SIDE,
        max_pixels: int | None = None,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        cache_mb: float = DEFAULT_CACHE_MB,
    ) -> None:
        """Configure the renderer; nothing is loaded or opened until the first request."""
        if dpi <= 0:
            raise ValueError(f"dpi must be positive, got {dpi}")
        for name, value in (("max_side", max_side), ("max_pixels", max_pixels), ("max_bytes", max_bytes)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive or None, got {value}")
        self.dpi, self.max_side, self.max_pixels, self.max_bytes = dpi, max_side, max_pixels, max_bytes
        self._source = source
        self._pages_rows = pages
        self._texts: dict[str, dict[int, str]] | None = None
        self._catalog: dict[str, Path | Mapping[str, Any]] | None = None
        self._cache: OrderedDict[tuple[str, int], Image.Image] = OrderedDict()
        self._cache_bytes = 0
        self._cache_limit = int(cache_mb * 1024 * 1024)
        self._open: OrderedDict[Path, Any] = OrderedDict()
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0

    @classmethod
    def from_folder(cls, folder: str | os.PathLike[str], **kwargs: Any) -> PageRenderer:
        """A renderer for a folder of PDFs named by document (``<folder>/<document>``)."""
        root = Path(folder)
        return cls({p.name: p for p in sorted(root.glob("*.pdf"))}, **kwargs)

    @property
    def mime_type(self) -> str:
        """MIME type of :meth:`encode`'s output."""
        return MIME_TYPE

    # -- documents ---------------------------------------------------------------------------------------------

    def _path(self, document: str) -> Path:
        source = self._source
        if callable(source) and not isinstance(source, (str, os.PathLike, Mapping)):
            try:
                return Path(source(document))
            except (LookupError, OSError) as exc:
                raise PageNotFoundError(f"document {document!r} is not in the collection ({exc})") from exc
        if self._catalog is None:
            self._catalog = _catalog(source)
        entry = self._catalog.get(document)
        if entry is None:
            names = sorted(self._catalog)
            example = f", e.g. {names[0]!r}" if names else ""
            raise PageNotFoundError(
                f"document {document!r} is not in the collection ({len(names)} documents{example}); "
                "use the exact file name from a search result"
            )
        if isinstance(entry, Path):
            return entry
        from madqa.loading_script.load import DatasetUnavailableError, document_file

        try:
            path = document_file(entry, source)  # type: ignore[arg-type]
        except DatasetUnavailableError as exc:
            raise PageNotFoundError(f"the PDF of {document!r} is unavailable: {exc}") from exc
        self._catalog[document] = path
        return path

    def _document(self, path: Path) -> Any:
        import pymupdf

        doc = self._open.get(path)
        if doc is not None:
            self._open.move_to_end(path)
            return doc
        try:
            doc = pymupdf.open(str(path))
        except Exception as exc:  # pymupdf raises its own error types for missing or broken files
            raise PageNotFoundError(f"cannot open the PDF {path}: {exc}") from exc
        self._open[path] = doc
        while len(self._open) > OPEN_DOCUMENTS:
            _, old = self._open.popitem(last=False)
            old.close()
        return doc

    # -- images ------------------------------------------------------------------------------------------------

    def zoom_for(self, width_pt: float, height_pt: float) -> float:
        """The rendering zoom for a page of this size in points, after the size cap (the one size policy).

        >>> r = PageRenderer({}, dpi=150, max_side=2000)
        >>> round(r.zoom_for(612, 792) * 72)  # US Letter fits: 150 dpi
        150
        >>> round(r.zoom_for(2592, 1728) * 2592)  # a 36 x 24 in poster: the long side is capped
        1999
        """
        zoom = self.dpi / 72.0
        w, h = width_pt * zoom, height_pt * zoom
        scale = 1.0
        if self.max_side is not None and max(w, h) > self.max_side - 1:
            scale = min(scale, (self.max_side - 1) / max(w, h))  # one pixel of slack: pixmaps round outwards
        if self.max_pixels is not None and w * h > self.max_pixels:
            scale = min(scale, math.sqrt(self.max_pixels / (w * h)) * (1 - 1e-6))
        return zoom * scale

    def image(self, document: str, page: int) -> Image.Image:
        """The page as an RGB image, within the size cap (cached).

        Raises:
            PageNotFoundError: unknown document, or ``page`` outside ``1..page_count``.
        """
        key = (str(document), _page_number(page))
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return cached
            self.misses += 1
            img = self._render(*key)
            self._remember(key, img)
            return img

    def _render(self, document: str, page: int) -> Image.Image:
        import pymupdf
        from PIL import Image

        doc = self._document(self._path(document))
        if not 1 <= page <= doc.page_count:
            raise PageNotFoundError(
                f"page {page} is out of range: {document!r} has {doc.page_count} page(s), numbered from 1"
            )
        pdf_page = doc[page - 1]
        zoom = self.zoom_for(pdf_page.rect.width, pdf_page.rect.height)
        pix = pdf_page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)
        img = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
        return self._fit(img)

    def _fit(self, img: Image.Image) -> Image.Image:
        """Safety net for rounding: shrink an image that still exceeds the pixel caps."""
        from PIL import Image

        w, h = img.size
        scale = 1.0
        if self.max_side is not None and max(w, h) > self.max_side:
            scale = self.max_side / max(w, h)
        if self.max_pixels is not None and w * h > self.max_pixels:
            scale = min(scale, math.sqrt(self.max_pixels / (w * h)))
        if scale < 1.0:
            size = (max(1, math.floor(w * scale)), max(1, math.floor(h * scale)))
            img = img.resize(size, Image.Resampling.LANCZOS)
        return img

    def _remember(self, key: tuple[str, int], img: Image.Image) -> None:
        size = img.width * img.height * len(img.getbands())
        if size > self._cache_limit:
            return
        self._cache[key] = img
        self._cache_bytes += size
        while self._cache_bytes > self._cache_limit:
            _, old = self._cache.popitem(last=False)
            self._cache_bytes -= old.width * old.height * len(old.getbands())

    def encode(self, image: Image.Image) -> bytes:
        """Encode an image for a provider (:data:`ENCODER`), shrinking it until it fits ``max_bytes``."""
        from PIL import Image

        data = _encode(image)
        while self.max_bytes is not None and len(data) > self.max_bytes and min(image.size) > 16:
            factor = max(0.5, min(0.95, math.sqrt(self.max_bytes / len(data)) * 0.95))
            size = (max(1, int(image.width * factor)), max(1, int(image.height * factor)))
            logger.debug("encoded page is %d bytes (cap %d): shrinking to %s", len(data), self.max_bytes, size)
            image = image.resize(size, Image.Resampling.LANCZOS)
            data = _encode(image)
        return data

    # -- text --------------------------------------------------------------------------------------------------

    def text(self, document: str, page: int) -> str:
        """The page's text from the pages corpus (for text-only models).

        Raises:
            PageNotFoundError: unknown document, or a page the corpus does not hold.
        """
        page = _page_number(page)
        texts = self._page_texts()
        doc = texts.get(str(document))
        if doc is None:
            raise PageNotFoundError(
                f"document {document!r} is not in the pages corpus ({len(texts)} documents); "
                "use the exact file name from a search result"
            )
        if page not in doc:
            raise PageNotFoundError(
                f"page {page} is out of range: {document!r} has pages {min(doc)}-{max(doc)}, numbered from 1"
            )
        return doc[page]

    def _page_texts(self) -> dict[str, dict[int, str]]:
        with self._lock:
            if self._texts is None:
                rows = self._pages_rows
                if rows is None:
                    if isinstance(self._source, Mapping) or callable(self._source):
                        raise PageNotFoundError("no pages corpus was given: pass pages=load_pages(dataset)")
                    from madqa.loading_script.load import load_pages

                    rows = load_pages(self._source)
                texts: dict[str, dict[int, str]] = {}
                for row in rows:
                    texts.setdefault(str(row["document"]), {})[int(row["page"])] = str(row.get("text") or "")
                self._texts = texts
            return self._texts

    def close(self) -> None:
        """Close open PDF files and drop the cache."""
        with self._lock:
            for doc in self._open.values():
                doc.close()
            self._open.clear()
            self._cache.clear()
            self._cache_bytes = 0


def _catalog(source: Any) -> dict[str, Path | Mapping[str, Any]]:
    """Document name → PDF path (given) or documents record (resolved, maybe downloaded, on first use)."""
    if isinstance(source, Mapping):
        return {str(k): Path(v) for k, v in source.items()}
    from madqa.loading_script.load import load_documents

    return {str(r["document"]): r for r in load_documents(source)}


def _page_number(page: Any) -> int:
    if isinstance(page, bool) or not isinstance(page, int):
        try:
            page = int(page)
        except (TypeError, ValueError):
            raise PageNotFoundError(f"page must be a whole number (1-based), got {page!r}") from None
    return page


def _encode(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format=ENCODER, quality=JPEG_QUALITY)
    return out.getvalue()
