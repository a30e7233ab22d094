"""Pictures of layouts with matplotlib (Agg; no pyplot, so no global figure state).

Every picture is a grid of cells, one per array element (or per TMEM cell),
coloured and labelled; runs of cells that share a label (a 16-byte SMEM chunk)
get one label. Arrays larger than a window are drawn in part, and the title
says which part.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PatchCollection, PathCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch, Rectangle
from matplotlib.path import Path as MplPath
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D

# One hue per warp (also per TMEM sub-partition); grey for "several warps".
WARP_COLORS = ("#8ecae6", "#ffb703", "#90be6d", "#f4978e")
SHARED_COLOR = "#c8c8c8"
# For SMEM: one colour per 16-byte chunk position in a 128-byte line (4 banks each).
BANK_GROUP_COLORS = (
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
)  # fmt: skip
TILE_COLORS = ("#e0ecf4", "#fde0dd", "#e5f5e0", "#fff7bc", "#efedf5", "#fee6ce")
FORMATS = ("png", "svg")

# Sizes in inches.
CELL_HEIGHT = 0.36
MARGIN = 0.8
MIN_WIDTH = 7.0
PAD = 0.3
GAP = 0.5
TITLE_LINE = 0.2
TICKS = 0.6
LEGEND_ROW = 0.25
LEGEND_COLUMNS = 4

# Labels: DejaVu Sans Mono ships with matplotlib; its advance and cap height, in ems.
LABEL_FONT = FontProperties(family="DejaVu Sans Mono", size=1)
GLYPH_ADVANCE = 0.602
CAP_HEIGHT = 0.73
MAX_FONT_SIZE = 7.5


@dataclass
class Grid:
    """What to draw: colours per cell, labels per run of cells, lines, a title, a legend."""

    colors: np.ndarray  # (rows, cols, 3) floats in [0, 1]
    spans: list[tuple[int, int, int, str]]  # (row, first col, last col + 1, text)
    title: str
    legend: list[tuple[str, str]] = field(default_factory=list)  # (colour, text)
    row_lines: list[int] = field(default_factory=list)  # heavy lines above these rows
    col_lines: list[int] = field(default_factory=list)
    row_label: str = "row"
    col_label: str = "column"
    row_scale: int = 1  # a row stands for index row * row_scale (wrapped 1D arrays)
    font_size: float | None = None  # None: as large as the longest label allows
    cell_width: float = 0.62  # inches

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.colors.shape[0]), int(self.colors.shape[1])


def rgb(color: str) -> tuple[float, float, float]:
    r, g, b = to_rgb(color)
    return r, g, b


def shade(color: str, amount: float) -> tuple[float, float, float]:
    """``color`` darkened (amount < 0) or lightened (> 0) towards black or white."""
    r, g, b = rgb(color)
    target = 1.0 if amount > 0 else 0.0
    k = abs(amount)
    return (r + (target - r) * k, g + (target - g) * k, b + (target - b) * k)


def _block_height(grid: Grid) -> float:
    """Inches a grid needs: title, top ticks, cells, legend."""
    title_lines = grid.title.count("\n") + 1
    legend_rows = math.ceil(len(grid.legend) / LEGEND_COLUMNS)
    return TITLE_LINE * title_lines + TICKS + grid.shape[0] * CELL_HEIGHT + LEGEND_ROW * legend_rows


def figure(grids: list[Grid]) -> Figure:
    """One figure with the grids stacked top to bottom."""
    width = max(g.shape[1] * g.cell_width for g in grids) + 2 * MARGIN
    width = max(width, MIN_WIDTH)
    grids = [_with_wrapped_title(g, width) for g in grids]
    heights = [_block_height(g) for g in grids]
    height = sum(heights) + GAP * (len(grids) - 1) + 2 * PAD
    fig = Figure(figsize=(width, height))
    top = height - PAD
    for grid, block in zip(grids, heights, strict=True):
        rows, cols = grid.shape
        title_height = TITLE_LINE * (grid.title.count("\n") + 1) + TICKS
        bottom = top - title_height - rows * CELL_HEIGHT
        ax = fig.add_axes(
            (
                MARGIN / width,
                bottom / height,
                cols * grid.cell_width / width,
                rows * CELL_HEIGHT / height,
            )
        )
        _draw(ax, grid)
        if grid.legend:
            handles = [
                Patch(facecolor=color, edgecolor="#555", label=text) for color, text in grid.legend
            ]
            ax.legend(
                handles=handles, loc="upper left", bbox_to_anchor=(0.0, 0.0), fontsize=8,
                ncol=min(LEGEND_COLUMNS, len(handles)), frameon=False, borderaxespad=0.2,
            )  # fmt: skip
        top -= block + GAP
    return fig


def _with_wrapped_title(grid: Grid, width: float) -> Grid:
    """The grid with its title wrapped to the figure's width (9-point text)."""
    columns = max(40, int((width - MARGIN) * 72 / (9 * 0.6)))
    lines = []
    for line in grid.title.split("\n"):
        lines.extend(textwrap.wrap(line, columns) or [""])
    return dataclasses.replace(grid, title="\n".join(lines))


def _draw(ax: Axes, grid: Grid) -> None:
    rows, cols = grid.shape
    ax.pcolormesh(
        np.arange(cols + 1), np.arange(rows + 1), np.clip(grid.colors, 0, 1), shading="flat"
    )
    _draw_labels(ax, grid)
    boxes = [
        Rectangle((start, row), stop - start, 1)
        for row, start, stop, _ in grid.spans
        if stop - start > 1
    ]
    if boxes:
        ax.add_collection(PatchCollection(boxes, facecolor="none", edgecolor="#555", linewidth=0.5))
    thin = [[(x, 0), (x, rows)] for x in range(cols + 1)]
    thin += [[(0, y), (cols, y)] for y in range(rows + 1)]
    ax.add_collection(LineCollection(thin, colors="white", linewidths=0.3))
    heavy = [[(x, 0), (x, rows)] for x in grid.col_lines]
    heavy += [[(0, y), (cols, y)] for y in grid.row_lines]
    if heavy:
        ax.add_collection(LineCollection(heavy, colors="black", linewidths=1.2))
    _ticks(ax, grid)
    ax.set_title(grid.title, fontsize=9, loc="left", pad=26)


def _draw_labels(ax: Axes, grid: Grid) -> None:
    """Each span's text, centred, as glyph outlines: one collection per character.

    Thousands of ``ax.text`` artists take seconds to lay out and draw; stamping
    each glyph's outline with a collection takes milliseconds, in PNG and SVG
    alike (SVG defines each glyph once and reuses it).
    """
    size = grid.font_size or _fitting_font_size(grid)
    # From points to data units: a cell is cell_width x CELL_HEIGHT inches, rows go down.
    dx = size * GLYPH_ADVANCE / 72 / grid.cell_width
    dy = size * CAP_HEIGHT / 2 / 72 / CELL_HEIGHT
    offsets: dict[str, list[tuple[float, float]]] = {}
    for row, start, stop, text in grid.spans:
        for line_index, line in enumerate(text.split("\n")):
            lines = text.count("\n") + 1
            baseline = row + 0.5 + dy + (line_index - (lines - 1) / 2) * 2.6 * dy
            left = (start + stop) / 2 - len(line) * dx / 2
            for k, char in enumerate(line):
                if not char.isspace():
                    offsets.setdefault(char, []).append((left + k * dx, baseline))
    to_pixels = Affine2D().scale(size / 72) + ax.figure.dpi_scale_trans
    for char, where in offsets.items():
        ax.add_collection(
            PathCollection(
                [_glyph(char)],
                offsets=where,
                offset_transform=ax.transData,
                transform=to_pixels,
                facecolor="black",
                edgecolor="none",
            )
        )


def _fitting_font_size(grid: Grid) -> float:
    longest = max((len(line) for *_, t in grid.spans for line in t.split("\n")), default=1)
    narrowest = min((stop - start for _, start, stop, _ in grid.spans), default=1)
    width_points = narrowest * grid.cell_width * 72 * 0.88
    return max(3.0, min(MAX_FONT_SIZE, width_points / (longest * GLYPH_ADVANCE)))


@functools.cache
def _glyph(char: str) -> MplPath:
    """A character's outline, 1 unit = 1 point at font size 1, origin at its baseline."""
    return TextPath((0, 0), char, size=1, prop=LABEL_FONT)


def _ticks(ax: Axes, grid: Grid) -> None:
    rows, cols = grid.shape
    col_step = 8 if cols > 16 else 1
    row_step = 8 if rows > 16 else 1
    xs = list(range(0, cols, col_step))
    ys = list(range(0, rows, row_step))
    ax.set_xticks([x + 0.5 for x in xs], [str(x) for x in xs], fontsize=7)
    ax.set_yticks([y + 0.5 for y in ys], [str(y * grid.row_scale) for y in ys], fontsize=7)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(grid.col_label, fontsize=8)
    ax.set_ylabel(grid.row_label, fontsize=8)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)


def image_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ValueError(f"cannot tell the image format of {str(path)!r}: use .png or .svg")
    return suffix


def render(grids: list[Grid], fmt: str, dpi: int = 150) -> bytes:
    """The picture as PNG or SVG bytes (SVG keeps its text as text)."""
    fig = figure(grids)
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "smalto"}):
        fig.savefig(buffer, format=fmt, dpi=dpi, metadata=_metadata(fmt))
    return buffer.getvalue()


def _metadata(fmt: str) -> dict[str, str | None]:
    # No dates or tool versions: the same layout gives the same file.
    if fmt == "svg":
        return {"Date": None, "Creator": "smalto"}
    return {"Software": "smalto"}


def save(grids: list[Grid], path: str | Path, dpi: int = 150) -> None:
    Path(path).write_bytes(render(grids, image_format(path), dpi))
