"""PDF drawing primitives: a page writer with a vertical cursor and a document builder.

Every primitive tags the page with the layout it produces (see :data:`model.LAYOUTS`), so the manifest can
say which pages hold running text, columns, ruled tables, forms, vector checkboxes or scans. Checkbox ticks
are drawn as line art only; the text layer holds nothing but the option labels.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pymupdf

from madqa.loading_script.sample.model import LAYOUTS, BuiltDocument
from madqa.loading_script.sample.scan import rasterise

PAGE_W, PAGE_H = 612.0, 792.0
MARGIN = 54.0
BOTTOM = PAGE_H - 62.0
REGULAR, BOLD, ITALIC = "helv", "hebo", "heit"
GRID_GRAY = (0.35, 0.35, 0.35)
HEADER_FILL = (0.88, 0.9, 0.93)


class LayoutError(RuntimeError):
    """Content did not fit where it was placed (a bug in a document template)."""


def text_width(text: str, size: float, bold: bool = False) -> float:
    """Width of ``text`` in points for the Helvetica faces used here."""
    return pymupdf.get_text_length(text, fontname=BOLD if bold else REGULAR, fontsize=size)


class PageWriter:
    """Writes content top to bottom on one page.

    Attributes:
        page: the PyMuPDF page.
        y: the cursor (top of the next element), in points from the top edge.
        scanned: whether the page will be rasterised; its tables are then open (rules above and below the
            header and at the bottom, no fill, no vertical rules): boxed cells make Tesseract's layout analysis
            drop whole rows.
    """

    def __init__(self, page: pymupdf.Page, layouts: list[str], scanned: bool = False) -> None:
        self.page = page
        self.scanned = scanned
        self.y = MARGIN
        self._layouts = layouts
        self.left = MARGIN
        self.right = PAGE_W - MARGIN

    def tag(self, layout: str) -> None:
        """Record that the page contains ``layout`` (one of :data:`model.LAYOUTS`)."""
        if layout not in LAYOUTS:
            raise LayoutError(f"unknown layout tag {layout!r}")
        if layout not in self._layouts:
            self._layouts.append(layout)

    @property
    def remaining(self) -> float:
        """Vertical space left above the footer zone."""
        return BOTTOM - self.y

    def space(self, height: float) -> None:
        """Move the cursor down by ``height`` points."""
        self.y += height

    def line(
        self,
        text: str,
        *,
        size: float = 10.5,
        bold: bool = False,
        x: float | None = None,
        center: bool = False,
        color: tuple[float, float, float] = (0, 0, 0),
        gap: float = 4.0,
    ) -> None:
        """One line of text (no wrapping)."""
        if center:
            x = (PAGE_W - text_width(text, size, bold)) / 2
        self.page.insert_text(
            (self.left if x is None else x, self.y + size),
            text,
            fontname=BOLD if bold else REGULAR,
            fontsize=size,
            color=color,
        )
        self.y += size + gap

    def title(self, text: str, subtitle: str | None = None, *, size: float = 18.0, center: bool = False) -> None:
        """Document title with an optional subtitle and a rule underneath."""
        self.line(text, size=size, bold=True, center=center, color=(0.08, 0.16, 0.32), gap=6)
        if subtitle:
            self.line(subtitle, size=11, center=center, color=(0.25, 0.25, 0.25), gap=6)
        self.page.draw_line((self.left, self.y), (self.right, self.y), color=(0.08, 0.16, 0.32), width=1.2)
        self.y += 12

    def heading(self, text: str, *, size: float = 12.5) -> None:
        """A section heading."""
        self.y += 4
        self.line(text, size=size, bold=True, color=(0.08, 0.16, 0.32), gap=6)

    def textbox(
        self, text: str, rect: pymupdf.Rect, *, size: float, font: str = REGULAR, align: int = pymupdf.TEXT_ALIGN_LEFT
    ) -> float:
        """Wrap ``text`` into ``rect``; returns the height used. Raises :class:`LayoutError` if it overflows."""
        unused = self.page.insert_textbox(rect, text, fontname=font, fontsize=size, align=align)
        if unused < 0:
            raise LayoutError(f"text overflows by {-unused:.0f}pt: {text[:60]!r}")
        return rect.height - unused

    def paragraph(
        self,
        text: str,
        *,
        size: float = 10.5,
        indent: float = 0.0,
        font: str = REGULAR,
        gap: float = 7.0,
        tag: str | None = "running_text",
    ) -> None:
        """A wrapped paragraph across the text width."""
        rect = pymupdf.Rect(self.left + indent, self.y, self.right, BOTTOM)
        self.y += self.textbox(text, rect, size=size, font=font, align=pymupdf.TEXT_ALIGN_JUSTIFY) + gap
        if tag:
            self.tag(tag)

    def try_paragraph(self, text: str, *, size: float = 10.5) -> bool:
        """Add a paragraph if it fits; returns whether it did (nothing is written otherwise)."""
        rect = pymupdf.Rect(self.left, self.y, self.right, BOTTOM)
        unused = self.page.insert_textbox(
            rect, text, fontname=REGULAR, fontsize=size, align=pymupdf.TEXT_ALIGN_JUSTIFY
        )
        if unused < 0:
            return False
        self.y += rect.height - unused + 7.0
        self.tag("running_text")
        return True

    def fill(self, make_paragraph: Callable[[], str], *, size: float = 10.5, limit: int = 12) -> None:
        """Add filler paragraphs until the page is full (at most ``limit``)."""
        for _ in range(limit):
            if self.remaining < 40 or not self.try_paragraph(make_paragraph(), size=size):
                return

    def bullets(self, items: Sequence[str], *, size: float = 10.5, gap: float = 3.0) -> None:
        """A bulleted list."""
        for item in items:
            self.page.draw_circle((self.left + 8, self.y + size * 0.62), 1.6, color=(0, 0, 0), fill=(0, 0, 0))
            rect = pymupdf.Rect(self.left + 18, self.y, self.right, BOTTOM)
            self.y += self.textbox(item, rect, size=size) + gap
        self.y += 4
        self.tag("running_text")

    def columns(self, left: str, right: str, *, size: float = 10.0, gap: float = 24.0, split: float = 0.5) -> None:
        """Two columns of wrapped text side by side; ``split`` is the left column's share of the width."""
        mid = self.left + (self.right - self.left) * split
        used_left = self.textbox(left, pymupdf.Rect(self.left, self.y, mid - gap / 2, BOTTOM), size=size)
        used_right = self.textbox(right, pymupdf.Rect(mid + gap / 2, self.y, self.right, BOTTOM), size=size)
        self.page.draw_line(
            (mid, self.y), (mid, self.y + max(used_left, used_right)), color=(0.7, 0.7, 0.7), width=0.5
        )
        self.y += max(used_left, used_right) + 18
        self.tag("multi_column")

    def fields(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        size: float = 10.0,
        per_row: int = 1,
        label_width: float | None = None,
    ) -> None:
        """Form fields: a bold ``Label:`` and its value on an underline, ``per_row`` fields per row."""
        cell = (self.right - self.left) / per_row
        shape = self.page.new_shape()
        for index, (label, value) in enumerate(pairs):
            column = index % per_row
            x = self.left + column * cell
            label_text = f"{label}:"
            offset = label_width if label_width is not None else text_width(label_text, size, True) + 6
            shape.insert_text((x, self.y + size), label_text, fontname=BOLD, fontsize=size)
            shape.insert_text((x + offset + 2, self.y + size), value, fontname=REGULAR, fontsize=size)
            shape.draw_line((x + offset, self.y + size + 3), (x + cell - 12, self.y + size + 3))
            if column == per_row - 1 or index == len(pairs) - 1:
                self.y += size + 12
        shape.finish(color=GRID_GRAY, width=0.5)
        shape.commit()
        self.y += 4
        self.tag("form")

    def table(
        self,
        headers: Sequence[str],
        rows: Sequence[Sequence[str]],
        widths: Sequence[float],
        *,
        size: float = 9.5,
        right: Sequence[int] | None = None,
        row_height: float | None = None,
        boxed: bool | None = None,
    ) -> None:
        """A ruled table; body cells of the ``right`` columns (default: all but the first) are right-aligned.

        Tables are fully boxed with a shaded header unless ``boxed`` is false (default: only on pages that stay
        vector; scans get open tables, see :attr:`scanned`).
        """
        boxed = not self.scanned if boxed is None else boxed
        right_aligned = set(range(1, len(headers)) if right is None else right)
        height = row_height or size * (2.0 if boxed else 2.4)
        x_edges = [self.left]
        for width in widths:
            x_edges.append(x_edges[-1] + width)
        if x_edges[-1] > self.right + 0.5:
            raise LayoutError("table wider than the text area")
        top = self.y
        if top + height * (len(rows) + 1) > BOTTOM:
            raise LayoutError("table taller than the page")
        if boxed:
            self.page.draw_rect(pymupdf.Rect(x_edges[0], top, x_edges[-1], top + height), color=None, fill=HEADER_FILL)
        shape = self.page.new_shape()
        for r, row in enumerate([list(headers), *[list(row) for row in rows]]):
            baseline = top + r * height + height / 2 + size * 0.35
            for c, cell in enumerate(row):
                bold = r == 0 or c == 0 and cell.startswith("Total")
                if c in right_aligned and r > 0:
                    x = x_edges[c + 1] - 5 - text_width(cell, size, bold)
                else:
                    x = x_edges[c] + 5
                shape.insert_text((x, baseline), cell, fontname=BOLD if bold else REGULAR, fontsize=size)
        bottom = top + height * (len(rows) + 1)
        for r in range(len(rows) + 2) if boxed else (0, 1, len(rows) + 1):
            shape.draw_line((x_edges[0], top + r * height), (x_edges[-1], top + r * height))
        if boxed:
            for x in x_edges:
                shape.draw_line((x, top), (x, bottom))
        shape.finish(color=GRID_GRAY, width=0.6)
        shape.commit()
        self.y = bottom + 12
        self.tag("table")

    def _box(self, shape: pymupdf.Shape, x: float, top: float, side: float, ticked: bool) -> None:
        shape.draw_rect(pymupdf.Rect(x, top, x + side, top + side))
        if ticked:
            shape.draw_polyline(
                [
                    (x + side * 0.18, top + side * 0.52),
                    (x + side * 0.42, top + side * 0.82),
                    (x + side * 0.86, top + side * 0.14),
                ]
            )

    def checkboxes(
        self,
        prompt: str,
        options: Sequence[str],
        selected: Sequence[str],
        *,
        size: float = 10.0,
        per_row: int | None = None,
    ) -> None:
        """A prompt followed by drawn boxes with option labels; boxes in ``selected`` get a drawn tick."""
        unknown = set(selected) - set(options)
        if unknown:
            raise LayoutError(f"ticked options not offered: {sorted(unknown)}")
        if prompt:
            self.line(prompt, size=size, bold=True, gap=6)
        per_row = per_row or len(options)
        cell = (self.right - self.left - 12) / per_row
        side = size * 0.95
        shape = self.page.new_shape()
        for index, option in enumerate(options):
            x = self.left + 12 + (index % per_row) * cell
            top = self.y + (index // per_row) * (size + 10)
            self._box(shape, x, top, side, option in selected)
            shape.insert_text((x + side + 5, top + side - 1), option, fontname=REGULAR, fontsize=size)
        shape.finish(color=(0, 0, 0), width=0.9)
        shape.commit()
        self.y += ((len(options) - 1) // per_row + 1) * (size + 10) + 4
        self.tag("checkbox")

    def checkbox_table(
        self, headers: Sequence[str], rows: Sequence[tuple[str, int]], widths: Sequence[float], *, size: float = 9.5
    ) -> None:
        """A ruled table whose first column labels each row and whose other columns hold one box each.

        Args:
            headers: column headers; ``headers[1:]`` are the box columns (e.g. ``IN``, ``OUT``).
            rows: ``(label, ticked column index >= 1)`` per row.
            widths: column widths.
            size: font size.
        """
        height = size * 2.0
        self.table(
            headers, [(label,) + ("",) * (len(headers) - 1) for label, _ in rows], widths, size=size, row_height=height
        )
        top = self.y - 12 - height * len(rows)
        side = size * 0.95
        shape = self.page.new_shape()
        for r, (_, ticked) in enumerate(rows):
            x0 = self.left + widths[0]
            for c in range(1, len(headers)):
                center = x0 + sum(widths[1:c]) + widths[c] / 2
                self._box(shape, center - side / 2, top + r * height + (height - side) / 2, side, c == ticked)
        shape.finish(color=(0, 0, 0), width=0.9)
        shape.commit()
        self.tag("checkbox")

    def signature(self, role: str, name: str, date: str | None = None, *, size: float = 10.0) -> None:
        """A signature line with the signer's printed name, role and optional date."""
        self.y += 18
        self.page.draw_line((self.left, self.y), (self.left + 220, self.y), color=(0, 0, 0), width=0.6)
        self.page.draw_bezier(
            (self.left + 10, self.y - 4),
            (self.left + 60, self.y - 26),
            (self.left + 90, self.y + 6),
            (self.left + 150, self.y - 12),
            width=0.9,
            color=(0.1, 0.1, 0.45),
        )
        self.y += 4
        self.line(f"{name}, {role}", size=size)
        if date:
            self.line(f"Date: {date}", size=size)


class DocBuilder:
    """Assembles one PDF page by page and finishes it into a :class:`BuiltDocument`."""

    def __init__(
        self,
        name: str,
        category: str,
        domain: str,
        *,
        title: str,
        author: str,
        rng: random.Random,
        footer: str | None = "{title} | Page {page} of {pages}",
        created: str = "D:20230301120000Z",
    ) -> None:
        self.name = name
        self.category = category
        self.domain = domain
        self._title = title
        self._author = author
        self._rng = rng
        self._footer = footer
        self._created = created
        self._doc = pymupdf.open()
        self._layouts: list[list[str]] = []
        self._scanned: list[int] = []
        self._probes: dict[int, list[str]] = {}

    @property
    def page_number(self) -> int:
        """1-based number of the most recently added page."""
        return len(self._layouts)

    def page(self, *, scanned: bool = False) -> PageWriter:
        """Start a new page; a ``scanned`` page is rasterised when the document is built."""
        page = self._doc.new_page(width=PAGE_W, height=PAGE_H)
        layouts: list[str] = []
        self._layouts.append(layouts)
        if scanned:
            self._scanned.append(self.page_number)
            self._probes[self.page_number] = []
        return PageWriter(page, layouts, scanned=scanned)

    def probe(self, *texts: str) -> None:
        """Register strings OCR must read on the current (scanned) page."""
        if self.page_number not in self._probes:
            raise LayoutError("OCR probes are only meaningful on scanned pages")
        for text in texts:
            if text not in self._probes[self.page_number]:
                self._probes[self.page_number].append(text)

    def build(self) -> BuiltDocument:
        """Add footers, rasterise scanned pages, fix metadata and serialise deterministically."""
        pages = len(self._layouts)
        if self._footer:
            for number in range(1, pages + 1):
                text = self._footer.format(title=self._title, page=number, pages=pages)
                page = self._doc[number - 1]
                page.insert_text(
                    ((PAGE_W - text_width(text, 8)) / 2, PAGE_H - 34),
                    text,
                    fontname=REGULAR,
                    fontsize=8,
                    color=(0.3, 0.3, 0.3),
                )
        for number in self._scanned:
            image = rasterise(self._doc[number - 1], self._rng)
            self._doc.delete_page(number - 1)
            blank = self._doc.new_page(pno=number - 1, width=PAGE_W, height=PAGE_H)
            blank.insert_image(blank.rect, stream=image)
            self._layouts[number - 1] = ["scanned", *self._layouts[number - 1]]
            if not self._probes[number]:
                raise LayoutError(f"{self.name}: scanned page {number} has no OCR probes")
        self._doc.set_metadata(
            {
                "title": self._title,
                "author": self._author,
                "subject": self.category,
                "keywords": "",
                "creator": "MADQA sample generator",
                "producer": "PyMuPDF",
                "creationDate": self._created,
                "modDate": self._created,
            }
        )
        pdf = self._doc.tobytes(garbage=3, deflate=True, no_new_id=True)
        self._doc.close()
        return BuiltDocument(
            name=self.name,
            category=self.category,
            domain=self.domain,
            pdf=pdf,
            num_pages=pages,
            scanned_pages=tuple(self._scanned),
            layouts={i + 1: tuple(tags) for i, tags in enumerate(self._layouts)},
            ocr_probes={page: tuple(texts) for page, texts in self._probes.items()},
        )
