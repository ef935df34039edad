"""Page images as files in Gradio's cache, encoded once per page and resolution.

Handing Gradio a PIL image makes it encode the image, hash the bytes and write a file on every response: that was
about half of a search's server time (``madqa bench human``). A path that is already inside Gradio's cache folder is
served as it is, so each (document, page) is rendered, encoded and written once, and later responses only name the
file. Gradio's ``delete_cache`` may remove old files (the Space sweeps its cache hourly), so a path is touched before
it is handed out again (which restarts its age) and re-made when it is gone. At most ``max_entries`` paths are
remembered per resolution, and a forgotten one is deleted: walking a whole corpus cannot fill the disk.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image

#: Paths remembered per resolution (only names: the bytes are on disk, in Gradio's cache).
MAX_ENTRIES = 8192


class ImageFiles:
    """``path(document, page)``: a JPEG of the page inside ``cache_dir``, made on first use."""

    def __init__(
        self, render: Callable[[str, int], Image.Image], cache_dir: str, *, max_entries: int = MAX_ENTRIES
    ) -> None:
        """Wrap ``render`` (document, page → PIL image); files go to ``cache_dir`` (a component's ``GRADIO_CACHE``)."""
        self.render, self.cache_dir, self.max_entries = render, str(cache_dir), max_entries
        self._paths: OrderedDict[tuple[str, int], str] = OrderedDict()
        self._lock = threading.Lock()

    def path(self, document: str, page: int) -> str:
        """The file of ``document`` page ``page`` (rendered and written now unless a previous one still exists)."""
        key = (document, int(page))
        with self._lock:
            known = self._paths.get(key)
            if known is not None:
                self._paths.move_to_end(key)
        if known is not None:
            try:  # touched as Gradio touches a cached copy it hands out again: the sweep ages files by ctime
                os.utime(known)
                return known
            except OSError:  # swept since: make it again
                pass
        from gradio import processing_utils

        made = str(
            processing_utils.save_pil_to_cache(
                self.render(document, int(page)), cache_dir=self.cache_dir, format="jpeg"
            )
        )
        with self._lock:
            self._paths[key] = made
            self._paths.move_to_end(key)
            forgotten = []
            while len(self._paths) > self.max_entries:
                forgotten.append(self._paths.popitem(last=False)[1])
            kept = set(self._paths.values()) if forgotten else set()  # identical pages share a file (its hash)
        for old in forgotten:
            if old not in kept:
                _remove(old)
        return made


def _remove(path: str) -> None:
    """Delete a forgotten file and its folder, so that disk use stays bounded by ``max_entries`` files even where
    Gradio's cache is never swept (``madqa human``). A browser still showing it keeps its decoded copy."""
    try:
        os.remove(path)
        os.rmdir(os.path.dirname(path))  # save_pil_to_cache writes <cache>/<hash>/image.jpeg
    except OSError:
        pass
