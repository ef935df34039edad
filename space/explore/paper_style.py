"""One style for every figure of ``madqa figures``: print sizes, fonts, run colours, legends, ticks and the files.

A figure is drawn at the size it is printed: one column (:data:`COLUMN` inches wide) for one panel, the text width
(:data:`TEXT`) for two panels and Table 3, so its fonts (:data:`RC`, none under 7 pt) are the sizes a reader sees.
Each run has one colour in every figure (:func:`run_colors`: a fixed palette in the order the runs were given), and
every artist drawn for a run carries the SVG id ``run<i>-…`` (``i``: the run's index), so a test can read from the
SVG which colour a run got. Legends sit above the axes, outside the data. Titles and figure numbers are the HTML
page's, never drawn into an image. Each figure is written as PNG (:data:`PNG_DPI`), PDF (TrueType fonts, as
camera-ready checks want) and SVG (text kept as text).
"""

from __future__ import annotations

import io
import itertools
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import matplotlib
from matplotlib.ticker import MaxNLocator

#: Print widths in inches: one column, and the text width (two columns) of a two-column paper.
COLUMN = 3.4
TEXT = 7.0
#: One panel, two panels side by side.
SIZE = (COLUMN, 2.6)
WIDE = (TEXT, 2.8)
PNG_DPI = 300
#: The formats each drawn figure is written in, in the order ``figures.json`` lists them.
FORMATS = ("png", "pdf", "svg")
#: The smallest font drawn (points at print size).
MIN_FONT_PT = 7
SMALL = MIN_FONT_PT
#: matplotlib settings for every figure (a context, not the global state: the explorer draws with its own).
RC: dict[str, Any] = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": SMALL,
    "ytick.labelsize": SMALL,
    "legend.fontsize": SMALL,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "lines.linewidth": 1.4,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "none",
    "svg.hashsalt": "madqa-figures",
    "hatch.linewidth": 0.6,
    # Run names are the user's text: "$\\bad$" is drawn as written, not parsed as math (it raised and no figure
    # was written). No figure here draws math.
    "text.parse_math": False,
}
#: Run colours (Okabe–Ito, readable by colour-blind readers and in greyscale print), then tab10's beyond eight runs.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
#: Colours of the H.3 failure classes (not run colours: greys and muted tones apart from the palette).
CLASS_COLORS = {"retrieval": "#7f3b08", "navigation": "#d9a066", "comprehension": "#5e8c99", "no_answer": "#bdbdbd"}


def run_colors(names: Sequence[str]) -> dict[str, str]:
    """Each run's colour, by its place in ``names`` (the order the runs were given), the same in every figure."""
    extra = [matplotlib.colors.to_hex(c) for c in matplotlib.colormaps["tab10"].colors]
    palette = itertools.chain(PALETTE, itertools.cycle(extra))
    return dict(zip(names, palette, strict=False))  # the palette never ends: one colour per name


class Runs:
    """What drawing needs of a run: its label, colour, line and bar style, marker and SVG id."""

    def __init__(self, names: Sequence[str], human: Mapping[str, bool]) -> None:
        self.names, self.human = list(names), dict(human)
        self.colors = run_colors(self.names)
        self._ids = itertools.count()

    def label(self, name: str) -> str:
        return f"{name} (human)" if self.human.get(name) else name

    def gid(self, name: str) -> str:
        """A fresh SVG id naming the run by index (``run0-3``): ids stay unique and free of a name's characters."""
        return f"run{self.names.index(name)}-{next(self._ids)}"

    def line(self, name: str) -> dict[str, Any]:
        return {
            "label": self.label(name),
            "color": self.colors[name],
            "linestyle": "--" if self.human.get(name) else "-",
            "gid": self.gid(name),
        }

    def bar(self, name: str) -> dict[str, Any]:
        return {
            "label": self.label(name),
            "color": self.colors[name],
            "hatch": "///" if self.human.get(name) else None,
            "edgecolor": "black",
            "linewidth": 0.5,
            "gid": self.gid(name),
        }

    def point(self, name: str) -> dict[str, Any]:
        return {
            "color": self.colors[name],
            "marker": "*" if self.human.get(name) else "o",
            "s": 70 if self.human.get(name) else 36,
            "edgecolor": "black",
            "linewidth": 0.4,
            "zorder": 3,
            "clip_on": False,
            "gid": self.gid(name),
        }


def legend_above(ax: Any, ncol: int | None = None, **kwargs: Any) -> None:
    """The axes' legend in rows above it, outside the data (nothing drawn when nothing is labelled); as many
    columns as fit the axes' width at the legend's font size (at most three)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if ncol is None:
        width_pt = ax.get_position().width * ax.figure.get_figwidth() * 72
        entry_pt = (max(len(s) for s in labels) + 5) * 0.6 * SMALL  # a character is about 0.6 em wide
        ncol = max(1, min(3, len(labels), int(width_pt // entry_pt)))
    ax.legend(
        handles,
        labels,
        loc="lower left",
        bbox_to_anchor=(0.0, 1.02),
        ncol=ncol,
        borderaxespad=0.0,
        handlelength=1.6,
        columnspacing=1.0,
        **kwargs,
    )


def wrapped(ax: Any, text: str) -> str:
    """``text`` broken into lines no wider than the axes (at :data:`SMALL` points, about 0.6 em a character)."""
    width_pt = ax.get_position().width * ax.figure.get_figwidth() * 72
    chars = max(20, int(width_pt / (0.6 * SMALL)))
    return "\n".join(textwrap.fill(line, chars) for line in text.splitlines())


def note_below(ax: Any, text: str) -> None:
    """A statistic's line(s) under the axes' x label, outside the data, wrapped to the axes' width."""
    ax.annotate(
        wrapped(ax, text),
        xy=(0.5, 0.0),
        xycoords=ax.xaxis.label,
        xytext=(0, -3),
        textcoords="offset points",
        ha="center",
        va="top",
        fontsize=SMALL,
    )


def integer_ticks(axis: Any) -> None:
    """Whole-number ticks only (step budgets, iterations, counts): a budget axis up to 2 shows 0, 1, 2."""
    axis.set_major_locator(MaxNLocator(integer=True))


def correlation_text(c: Mapping[str, Any] | None, points: str = "points") -> str:
    """Pearson's r with its n, or why there is none (never a bare dash)."""
    if not c or not c.get("n"):
        return f"r: no {points} with both values"
    n = c["n"]
    if c.get("pearson") is None:
        why = f"{n} {points}, 3 needed" if n < 3 else f"a constant value over {n} {points}"
        return f"r not computed ({why})"
    return f"r = {c['pearson']:.2f} (n = {n} {points})"


@contextmanager
def style() -> Iterator[None]:
    """The settings of :data:`RC`, for drawing and saving."""
    with matplotlib.rc_context(RC):
        yield


def render(fig: Any, fmt: str) -> bytes:
    """``fig`` as ``fmt`` bytes (``png`` at :data:`PNG_DPI`, ``pdf``, ``svg``), cropped to what is drawn.

    Dates are left out of the PDF and SVG metadata so the same runs give the same files.
    """
    metadata = {"png": None, "pdf": {"CreationDate": None}, "svg": {"Date": None}}[fmt]
    buf = io.BytesIO()
    with style():
        fig.savefig(buf, format=fmt, dpi=PNG_DPI, bbox_inches="tight", pad_inches=0.03, metadata=metadata)
    return buf.getvalue()
