"""Page images handed to Gradio as files already in its cache: rendered and encoded once per page, touched when
handed out again, made again when Gradio's cache sweep removed them; the remembered paths are bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("gradio")


def test_each_page_is_rendered_once_and_remade_when_swept(tmp_path: Path) -> None:
    from PIL import Image

    from madqa.agents.human.images import ImageFiles

    calls: list[tuple[str, int]] = []

    def render(document: str, page: int) -> Image.Image:
        calls.append((document, page))
        return Image.new("RGB", (40, 60), (page * 40 % 256, 10, 10))

    files = ImageFiles(render, str(tmp_path), max_entries=2)
    first = files.path("a.pdf", 1)
    assert Path(first).is_file() and Path(first).resolve().is_relative_to(tmp_path.resolve())
    assert Image.open(first).format == "JPEG"
    os.utime(first, (1, 1))
    assert files.path("a.pdf", 1) == first and calls == [("a.pdf", 1)]  # handed out again, not re-encoded
    assert os.stat(first).st_mtime > 1  # touched, so the cache sweep counts its age from now
    assert files.path("a.pdf", 2) != first and len(calls) == 2
    os.remove(first)  # what gradio's delete_cache does to old files
    again = files.path("a.pdf", 1)
    assert Path(again).is_file() and calls[-1] == ("a.pdf", 1) and len(calls) == 3
    files.path("b.pdf", 1)  # a third page: the oldest remembered path (a.pdf p. 2) is forgotten
    files.path("a.pdf", 2)
    assert calls[-1] == ("a.pdf", 2) and len(calls) == 5
