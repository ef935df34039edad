"""The page renderer: resolution, the size cap, the cache, text lookup, encoding and errors."""

from __future__ import annotations

import doctest
import threading
from pathlib import Path

import pytest

from madqa.agents.corpus import render as render_mod
from madqa.agents.corpus.render import PageNotFoundError, PageRenderer

LETTER = (612, 792)  # points
POSTER = (2592, 1728)  # 36 x 24 in


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import pymupdf

    folder = tmp_path_factory.mktemp("pdfs")
    out = {}
    for name, size, pages in (("letter.pdf", LETTER, 3), ("poster.pdf", POSTER, 1)):
        doc = pymupdf.open()
        for i in range(pages):
            page = doc.new_page(width=size[0], height=size[1])
            page.insert_text((72, 72), f"{name} page {i + 1}: Hillcrest standby generator", fontsize=14)
            page.draw_rect(pymupdf.Rect(72, 100, 300, 200), color=(0.8, 0.1, 0.1), fill=(0.9, 0.9, 0.2))
        doc.save(str(folder / name))
        doc.close()
        out[name] = folder / name
    return out


PAGES = [
    {"document": "letter.pdf", "page": 1, "text": "letter page 1"},
    {"document": "letter.pdf", "page": 2, "text": "letter page 2"},
    {"document": "letter.pdf", "page": 3, "text": ""},
    {"document": "poster.pdf", "page": 1, "text": "poster"},
]


def test_default_resolution_is_150_dpi(pdfs: dict[str, Path]) -> None:
    renderer = PageRenderer(pdfs)
    image = renderer.image("letter.pdf", 1)
    assert image.mode == "RGB" and image.size == (1275, 1650)


def test_long_side_cap(pdfs: dict[str, Path]) -> None:
    renderer = PageRenderer(pdfs, max_side=2000)
    width, height = renderer.image("poster.pdf", 1).size
    assert max(width, height) <= 2000 and max(width, height) >= 1990
    assert abs(width / height - 1.5) < 0.01
    assert PageRenderer(pdfs, max_side=None).image("poster.pdf", 1).size == (5400, 3600)


def test_pixel_cap(pdfs: dict[str, Path]) -> None:
    renderer = PageRenderer(pdfs, max_pixels=1_000_000)
    width, height = renderer.image("letter.pdf", 1).size
    assert width * height <= 1_000_000 and width * height > 950_000


def test_cache_returns_the_rendered_page(pdfs: dict[str, Path]) -> None:
    renderer = PageRenderer(pdfs)
    first = renderer.image("letter.pdf", 2)
    assert renderer.image("letter.pdf", 2) is first
    assert (renderer.hits, renderer.misses) == (1, 1)
    uncached = PageRenderer(pdfs, cache_mb=0)
    assert uncached.image("letter.pdf", 2) is not uncached.image("letter.pdf", 2)


def test_cache_evicts_least_recently_used(pdfs: dict[str, Path]) -> None:
    renderer = PageRenderer(pdfs, cache_mb=13)  # two 1275 x 1650 RGB pages (6.3 MB each)
    a = renderer.image("letter.pdf", 1)
    renderer.image("letter.pdf", 2)
    assert renderer.image("letter.pdf", 1) is a  # refreshes page 1
    renderer.image("letter.pdf", 3)  # evicts page 2
    assert renderer.image("letter.pdf", 1) is a
    misses = renderer.misses
    renderer.image("letter.pdf", 2)
    assert renderer.misses == misses + 1


@pytest.mark.parametrize(
    ("document", "page", "message"),
    [
        ("missing.pdf", 1, "not in the collection"),
        ("letter.pdf", 4, "out of range"),
        ("letter.pdf", 0, "out of range"),
    ],
)
def test_image_errors(pdfs: dict[str, Path], document: str, page: int, message: str) -> None:
    with pytest.raises(PageNotFoundError, match=message):
        PageRenderer(pdfs).image(document, page)


def test_callable_resolver_and_folder(pdfs: dict[str, Path]) -> None:
    renderer = PageRenderer(lambda name: pdfs[name])
    assert renderer.image("poster.pdf", 1).size[0] <= 2000
    with pytest.raises(PageNotFoundError, match="not in the collection"):
        renderer.image("missing.pdf", 1)
    folder = PageRenderer.from_folder(pdfs["letter.pdf"].parent)
    assert folder.image("letter.pdf", 3).size == (1275, 1650)


def test_text_for_text_only_models(pdfs: dict[str, Path]) -> None:
    renderer = PageRenderer(pdfs, pages=PAGES)
    assert renderer.text("letter.pdf", 2) == "letter page 2"
    assert renderer.text("letter.pdf", 3) == ""
    with pytest.raises(PageNotFoundError, match="out of range"):
        renderer.text("letter.pdf", 9)
    with pytest.raises(PageNotFoundError, match="not in the pages corpus"):
        renderer.text("missing.pdf", 1)
    with pytest.raises(PageNotFoundError, match="no pages corpus"):
        PageRenderer(pdfs).text("letter.pdf", 1)


def test_encode_chosen_format_and_byte_cap(pdfs: dict[str, Path]) -> None:
    renderer = PageRenderer(pdfs)
    image = renderer.image("letter.pdf", 1)
    data = renderer.encode(image)
    assert data[:2] == b"\xff\xd8" and renderer.mime_type == "image/jpeg"
    small = PageRenderer(pdfs, max_bytes=20_000).encode(image)
    assert len(small) <= 20_000


def test_invalid_settings() -> None:
    with pytest.raises(ValueError):
        PageRenderer({}, dpi=0)
    with pytest.raises(ValueError):
        PageRenderer({}, max_side=0)


def test_concurrent_renders(pdfs: dict[str, Path]) -> None:
    renderer = PageRenderer(pdfs, cache_mb=0, dpi=50)
    sizes: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for page in (1, 2, 3):
                sizes.append(renderer.image("letter.pdf", page).size)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and set(sizes) == {(425, 550)}


def test_render_bench_figures(pdfs: dict[str, Path]) -> None:
    from madqa.bench.render import bench_render

    result = bench_render([pdfs["letter.pdf"]], dpi=50, per_document=2)
    assert result["pages"] == 2 and "madqa encode()" in result["encoders"]


def test_doctests() -> None:
    result = doctest.testmod(render_mod)
    assert result.attempted > 0 and result.failed == 0
