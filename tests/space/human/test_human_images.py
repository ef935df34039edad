"""Page images handed to Gradio as files already in its cache: rendered and encoded once per page, touched when
handed out again, made again when Gradio's cache sweep removed them; the remembered paths are bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("gradio")


def test_each_page_is_rendered_once_and_remade_when_swept(tmp_path: Path) -> None:
    from PIL import Image

    from madqa.space.human.images import ImageFiles

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


def test_a_forgotten_page_file_is_deleted_unless_another_page_shares_it(tmp_path: Path) -> None:
    """Attack: walking every page of a large corpus. Files on disk stay bounded by the paths remembered."""
    from PIL import Image

    from madqa.space.human.images import ImageFiles

    def render(document: str, page: int) -> Image.Image:  # page 9 looks like page 8: the same file
        return Image.new("RGB", (40, 60), ((8 if page == 9 else page) * 20, 10, 10))

    files = ImageFiles(render, str(tmp_path), max_entries=3)
    made = [files.path("a.pdf", n) for n in range(1, 8)]
    on_disk = sorted(str(p) for p in tmp_path.rglob("*.jpeg"))
    assert on_disk == sorted(made[-3:]) and not [d for d in tmp_path.iterdir() if not any(d.iterdir())]
    blank = files.path("a.pdf", 8)
    assert files.path("a.pdf", 9) == blank  # identical content, one file
    files.path("a.pdf", 10)  # forgets page 7, then page 8: its file is still page 9's
    files.path("a.pdf", 11)
    assert Path(blank).is_file() and len(list(tmp_path.rglob("*.jpeg"))) == 3
