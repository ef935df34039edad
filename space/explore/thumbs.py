"""Page thumbnails as ``data:`` URIs, rendered by :class:`madqa.agents.corpus.render.PageRenderer` and cached.

The renderer draws at a low resolution straight to the thumbnail size (its size cap lowers the zoom, so a page is
never rendered large and shrunk), and the encoded URIs are kept in an LRU of :data:`CACHE_ITEMS` entries, so
switching back to a question costs no rendering. A page that cannot be rendered (documents not fetched, a cited
page that does not exist) gets ``None`` and the view shows a text placeholder; that answer is cached too.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections import OrderedDict
from typing import Any

logger = logging.getLogger(__name__)

#: Longest side of a thumbnail in pixels, and the rendering resolution (the cap lowers it further).
THUMB_SIDE = 200
THUMB_DPI = 40
#: Thumbnails kept (a 200-px JPEG is about 8 KB: 2,000 entries are about 16 MB).
CACHE_ITEMS = 2000
#: The page opened large (a click on a thumbnail): longest side, resolution, and how many are kept (about 150 KB
#: each). Rendered only when asked for, so a question's detail never waits for them.
LARGE_SIDE = 1400
LARGE_DPI = 130
LARGE_ITEMS = 64


class Thumbnails:
    """Thumbnails of one document collection.

    Args:
        source: what :class:`~madqa.agents.corpus.render.PageRenderer` takes (a dataset spec, ``None`` = default
            dataset), or an object with ``image(document, page)`` and ``encode(image)`` (tests).
        enabled: ``False`` gives placeholders only (no rendering at all).
    """

    def __init__(self, source: Any = None, *, enabled: bool = True) -> None:
        self._source = source
        self._renderer: Any = None
        self.enabled = enabled
        self._cache: OrderedDict[tuple[str, int], str | None] = OrderedDict()
        self._large: OrderedDict[tuple[str, int], str | None] = OrderedDict()
        self._large_renderer: Any = None
        self._lock = threading.Lock()
        self.rendered = 0

    def _get_renderer(self) -> Any:
        if self._renderer is None:
            if hasattr(self._source, "image"):
                self._renderer = self._source
            else:
                from madqa.agents.corpus.render import PageRenderer

                self._renderer = PageRenderer(self._source, dpi=THUMB_DPI, max_side=THUMB_SIDE, cache_mb=0)
        return self._renderer

    def _get_large_renderer(self) -> Any:
        if self._large_renderer is None:
            if hasattr(self._source, "image"):
                self._large_renderer = self._source
            else:
                from madqa.agents.corpus.render import PageRenderer

                self._large_renderer = PageRenderer(
                    self._source, dpi=LARGE_DPI, max_side=LARGE_SIDE, cache_mb=0, max_bytes=None
                )
        return self._large_renderer

    def uri(self, document: str, page: int | None) -> str | None:
        """A ``data:image/jpeg;base64,…`` URI of the page, or ``None`` when it cannot be rendered."""
        return self._cached(self._cache, CACHE_ITEMS, document, page, large=False)

    def large_uri(self, document: str, page: Any) -> str | None:
        """The page at up to :data:`LARGE_SIDE` pixels (what a click on its thumbnail opens), or ``None``."""
        try:
            number = int(page)
        except (TypeError, ValueError):
            return None
        return self._cached(self._large, LARGE_ITEMS, str(document or ""), number, large=True)

    def _cached(
        self,
        cache: OrderedDict[tuple[str, int], str | None],
        limit: int,
        document: str,
        page: int | None,
        *,
        large: bool,
    ) -> str | None:
        if not self.enabled or page is None or not document:
            return None
        key = (document, int(page))
        with self._lock:
            if key in cache:
                cache.move_to_end(key)
                return cache[key]
        value = self._render(document, int(page), large=large)
        with self._lock:
            cache[key] = value
            while len(cache) > limit:
                cache.popitem(last=False)
        return value

    def _render(self, document: str, page: int, *, large: bool = False) -> str | None:
        side = LARGE_SIDE if large else THUMB_SIDE
        try:
            renderer = self._get_large_renderer() if large else self._get_renderer()
            image = renderer.image(document, page)
            if max(image.size) > side:
                image = image.copy()
                image.thumbnail((side, side))  # keeps the page's proportions: the whole page, never cropped
            data = renderer.encode(image)
        except Exception as exc:  # noqa: BLE001 - a page that cannot be shown becomes a placeholder
            logger.debug("no image for %s p. %s: %s", document, page, exc)
            return None
        self.rendered += 1
        mime = getattr(renderer, "mime_type", "image/jpeg")
        return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
