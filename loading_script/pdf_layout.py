"""Reading order of a page's lines (pure geometry on MuPDF's line boxes): vertical writing and columns.

:mod:`.pdf_content` builds the :class:`Line` objects from ``page.get_text("dict")`` and applies, in turn:

* **vertical writing** (:func:`join_vertical`): CJK characters stacked top to bottom, which MuPDF returns one per
  line (placed one by one, or set in a vertical ``wmode`` 1 font such as ``/Identity-V``), are joined into one
  line per column, columns read right to left;
* **columns** (:func:`column_order`): when the lines' x-positions leave gutters that split the page into 2-4
  columns of prose (each at least :data:`MIN_COLUMN_LINES` lines whose median width is at least
  :data:`MIN_PROSE_FILL` of the column and median length :data:`MIN_PROSE_WORDS` words, each column at least
  :data:`MIN_COLUMN_SHARE` of the text's width), each column is read top to bottom before the next, whatever order the
  content stream drew them in; lines that cross a gutter (a title over both columns) separate the bands. Table
  cells (short lines) do not count as prose, so a table keeps MuPDF's row order.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

#: A column needs this many lines ...
MIN_COLUMN_LINES = 3
#: ... whose median width is at least this share of the column's width, with at least this median number of
#: words (prose, not table cells) ...
MIN_PROSE_FILL = 0.6
MIN_PROSE_WORDS = 4
#: ... and each column at least this share of the width of the page's text.
MIN_COLUMN_SHARE = 0.2
#: A line at least this share of the text's width is not a column line (it may cross a gutter).
WIDE_LINE = 0.55
_MIN_GUTTER = 6.0  # points; and at least 0.8 of the median line height
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff00-\uffef\U00020000-\U0003fffd]")


@dataclass(slots=True)
class Span:
    """A run of text and how it is hidden (``None``: it shows)."""

    text: str
    hidden: str | None = None


@dataclass(slots=True)
class Line:
    """One line of text: its box (page coordinates, y down) and spans."""

    x0: float
    y0: float
    x1: float
    y1: float
    spans: list[Span] = field(default_factory=list)
    vertical: bool = False
    _texts: tuple[str, str] | None = field(default=None, init=False, repr=False, compare=False)

    def text(self, *, hidden: bool = False) -> str:
        """The line's visible text, or with ``hidden=True`` all of it.

        Computed once (the layout steps ask for it many times): the spans and their ``hidden`` must be final by the
        first call, as :func:`.pdf_content.read_page` makes them.
        """
        if self._texts is None:
            if len(self.spans) == 1:  # most lines
                only = self.spans[0]
                self._texts = (only.text if only.hidden is None else "", only.text)
            else:
                full = "".join([s.text for s in self.spans])
                shown = "".join([s.text for s in self.spans if s.hidden is None])
                self._texts = (shown, full)
        return self._texts[hidden]

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0


def _is_cell(line: Line) -> bool:
    """A cell of vertical writing: a line of one or two characters, ``wmode`` 1 (MuPDF returns a real vertical
    font's text one character per line) or horizontal with a CJK character (characters placed one by one)."""
    text = line.text(hidden=True).strip()
    return 0 < len(text) <= 2 and (line.vertical or bool(_CJK.search(text)))


def join_vertical(lines: list[Line]) -> list[Line]:
    """Join CJK characters stacked top to bottom into vertical lines, read right to left.

    Cells (:func:`_is_cell`) whose boxes overlap horizontally by half their width form a column; a column is cut
    where the vertical gap between two cells exceeds one cell height. Columns of two or more cells become one
    vertical line each; all vertical lines (these and MuPDF's ``wmode`` 1 lines) are put, right to left, where the
    first of them was, the other lines keep their order.
    """
    cells = [line for line in lines if len(line.text(hidden=True).strip()) <= 2 and _is_cell(line)]  # cheap first
    if len(cells) < 2:
        return _vertical_right_to_left(lines)
    columns: list[list[Line]] = []
    for cell in sorted(cells, key=lambda c: (-(c.x0 + c.x1) / 2, c.y0)):
        for column in columns:
            last = column[-1]
            overlap = min(last.x1, cell.x1) - max(last.x0, cell.x0)
            if (
                overlap >= 0.5 * min(last.width, cell.width)
                and cell.y0 >= last.y0
                and cell.y0 - last.y1 <= max(last.height, cell.height)
            ):
                column.append(cell)
                break
        else:
            columns.append([cell])
    merged: dict[int, Line] = {}
    dropped: set[int] = set()
    for column in columns:
        if len(column) < 2:
            continue
        joined = Line(
            min(c.x0 for c in column),
            column[0].y0,
            max(c.x1 for c in column),
            column[-1].y1,
            [span for c in column for span in c.spans],
            vertical=True,
        )
        merged[id(column[0])] = joined
        dropped.update(id(c) for c in column[1:])
    out = [merged.get(id(line), line) for line in lines if id(line) not in dropped]
    return _vertical_right_to_left(out)


def _vertical_right_to_left(lines: list[Line]) -> list[Line]:
    vertical = [line for line in lines if line.vertical]
    if len(vertical) < 2:
        return lines
    first = next(i for i, line in enumerate(lines) if line.vertical)
    others = [line for line in lines if not line.vertical]
    ordered = sorted(vertical, key=lambda line: (-line.x1, line.y0))
    before = sum(1 for line in lines[:first] if not line.vertical)
    return others[:before] + ordered + others[before:]


def _gutters(lines: list[Line], left: float, right: float) -> list[tuple[float, float]]:
    """Gaps in the x-coverage of the narrow lines, strictly between ``left`` and ``right``."""
    limit = WIDE_LINE * (right - left)
    narrow = sorted([(line.x0, line.x1) for line in lines if line.x1 - line.x0 < limit])
    if not narrow:
        return []
    gaps, reach = [], narrow[0][1]
    for x0, x1 in narrow[1:]:
        if x0 - reach >= _MIN_GUTTER:
            gaps.append((reach, x0))
        reach = max(reach, x1)
    if not gaps:  # most pages: no median needed
        return []
    min_gap = max(_MIN_GUTTER, 0.8 * statistics.median(line.height for line in lines))
    return [(g0, g1) for g0, g1 in gaps if g1 - g0 >= min_gap]


def column_order(lines: list[Line]) -> list[Line]:
    """Lines in column order when the page is set in columns of prose (module docstring), else unchanged."""
    horizontal = [line for line in lines if not line.vertical and line.text().strip()]
    if len(horizontal) < 2 * MIN_COLUMN_LINES:
        return lines
    left, right = min(line.x0 for line in horizontal), max(line.x1 for line in horizontal)
    gaps = _gutters(horizontal, left, right)
    if not gaps or len(gaps) > 3:
        return lines
    crossing = [line for line in horizontal if any(line.x0 < g1 and line.x1 > g0 for g0, g1 in gaps)]
    crossing_ids = {id(line) for line in crossing}
    in_columns: list[list[Line]] = [[] for _ in range(len(gaps) + 1)]
    for line in horizontal:
        if id(line) not in crossing_ids:
            in_columns[sum(g1 <= line.x0 for _, g1 in gaps)].append(line)
    for column in in_columns:
        column.sort(key=lambda line: line.y0)
        if len(column) < MIN_COLUMN_LINES:
            return lines
        width = max(line.x1 for line in column) - min(line.x0 for line in column)
        if (
            width < MIN_COLUMN_SHARE * (right - left)
            or statistics.median(line.width for line in column) < MIN_PROSE_FILL * width
            or statistics.median(len(line.text().split()) for line in column) < MIN_PROSE_WORDS
        ):
            return lines
    placed = {id(line) for line in horizontal}
    rest = [line for line in lines if id(line) not in placed]  # vertical and hidden-only lines: after the text
    ordered: list[Line] = []
    for band in [*sorted(crossing, key=lambda line: line.y0), None]:
        limit = float("inf") if band is None else band.y0
        for column in in_columns:
            ordered.extend(line for line in column if (line.y0 + line.y1) / 2 < limit)
            column[:] = [line for line in column if (line.y0 + line.y1) / 2 >= limit]
        if band is not None:
            ordered.append(band)
    return ordered + rest
