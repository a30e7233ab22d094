"""Pictures of layouts with matplotlib (Agg; no pyplot, so no global figure state).

A picture is a stack of panels (``Grid``): a grid of coloured cells with labels on
runs of cells, heavy outlines between regions (warps, tiles, phases), optional
marks (a highlighted thread), a title and a legend. Every size is in pixels at
``BASE_DPI``, so that a picture's size and its text size are decided here, not
by matplotlib: the builders choose the cell size from the shape, and
``figure_size`` says how large the picture will be before it is drawn.
"""

from __future__ import annotations

import colorsys
import functools
import io
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Rectangle
from matplotlib.path import Path as MplPath
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D

FORMATS = ("png", "svg")
BASE_DPI = 100  # sizes below are pixels at this resolution
MAX_SIDE = 2400  # no picture is larger than this, in pixels, either way

# Text sizes, pixels (the em size of the font).
TITLE_PX = 14.0
TEXT_PX = 12.0  # legends, axis labels
TICK_PX = 11.0
LABEL_PX = 11.0  # cell labels
MIN_LABEL_PX = 10.0

# Layout, pixels.
MARGIN_LEFT = 78
MARGIN_RIGHT = 24
MARGIN_TOP = 16
MARGIN_BOTTOM = 16
PANEL_GAP = 34
TITLE_LINE = 19
TICKS_HEIGHT = 36  # column ticks and the column axis label, above a grid
LEGEND_ROW = 22
LEGEND_SWATCH = 14
MIN_WIDTH = 640

# Labels: DejaVu Sans Mono ships with matplotlib; its advance and cap height, in ems.
LABEL_FONT = FontProperties(family="DejaVu Sans Mono", size=1)
GLYPH_ADVANCE = 0.602
CAP_HEIGHT = 0.73
LINE_SPACING = 1.25


@dataclass
class Grid:
    """One panel: colours per cell, labels on runs of cells, outlines, title, legend."""

    colors: np.ndarray  # (rows, cols, 3) floats in [0, 1]
    spans: list[tuple[int, int, int, str]]  # (row, first col, last col + 1, text)
    title: str
    legend: list[tuple[object, str]] = field(default_factory=list)  # (colour, text)
    row_lines: list[int] = field(default_factory=list)  # heavy lines above these rows
    col_lines: list[int] = field(default_factory=list)  # heavy lines left of these columns
    row_label: str = "row"
    col_label: str = "column"
    row_scale: int = 1  # a row stands for index row * row_scale (wrapped 1D arrays)
    regions: np.ndarray | None = None  # heavy outlines between cells of different ids (< 0: none)
    marks: np.ndarray | None = None  # bool: cells outlined as highlighted
    groups: np.ndarray | None = None  # thin lines between cells of different ids; None: spans
    label_halo: bool = False  # labels over a colour map: outlined in white to stay legible
    cell_px: tuple[float, float] = (24.0, 16.0)  # (width, height)
    label_px: float = LABEL_PX
    row_ticks: list[tuple[int, str]] | None = None  # custom ticks (row, text); None: numbers
    col_ticks: list[tuple[int, str]] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.colors.shape[0]), int(self.colors.shape[1])

    @property
    def grid_px(self) -> tuple[float, float]:
        rows, cols = self.shape
        return cols * self.cell_px[0], rows * self.cell_px[1]


# --- colours -------------------------------------------------------------------------------


def rgb(color: object) -> tuple[float, float, float]:
    r, g, b = to_rgb(color)  # type: ignore[arg-type]
    return r, g, b


def shade(color: object, amount: float) -> tuple[float, float, float]:
    """``color`` darkened (amount < 0) or lightened (> 0) towards black or white."""
    r, g, b = rgb(color)
    target = 1.0 if amount > 0 else 0.0
    k = abs(amount)
    return (r + (target - r) * k, g + (target - g) * k, b + (target - b) * k)


@functools.cache
def lane_color(lane: int, lanes: int = 32) -> tuple[float, float, float]:
    """Lane ``lane`` of ``lanes``: the hue goes once round the colour wheel over the
    lanes, and even lanes are deeper than odd ones, so neighbours stand apart."""
    hue = (lane % lanes) / lanes
    lightness, floor = (0.56, 0.30) if lane % 2 == 0 else (0.78, 0.55)
    while True:  # blue and violet are dark at a given lightness: raise it for black text
        r, g, b = colorsys.hls_to_rgb(hue, lightness, 0.80)
        if _luminance(r, g, b) >= floor or lightness >= 0.9:
            return float(r), float(g), float(b)
        lightness += 0.02


def _luminance(r: float, g: float, b: float) -> float:
    """Relative luminance (WCAG): how light a colour looks."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def lane_colors(lanes: np.ndarray, count: int = 32) -> np.ndarray:
    """``lane_color`` of every entry of an int array: (..., 3)."""
    table = np.array([lane_color(i, count) for i in range(count)])
    return table[np.asarray(lanes) % count]


FADED = 0.82  # how far cells outside a highlight fade towards white
SHARED_COLOR = "#c8c8c8"


def faded(colors: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``colors`` with the cells outside ``keep`` faded towards white."""
    out = colors.copy()
    out[~keep] = out[~keep] + (1.0 - out[~keep]) * FADED
    return out


# --- sizes ---------------------------------------------------------------------------------


def text_width(text: str, px: float) -> float:
    """Pixel width of the widest line of ``text`` in the label font."""
    return max((len(line) for line in text.split("\n")), default=0) * GLYPH_ADVANCE * px


def label_cell_px(
    spans: list[tuple[int, int, int, str]], px: float = LABEL_PX
) -> tuple[float, float]:
    """The smallest (width, height) of a cell that fits every span's label at ``px``."""
    width, lines = 8.0, 1
    for _, start, stop, text in spans:
        width = max(width, (text_width(text, px) + 0.5 * px) / (stop - start))
        lines = max(lines, text.count("\n") + 1)
    height = lines * LINE_SPACING * px + 0.25 * px
    return math.ceil(width), math.ceil(height)


def _wrap(text: str, width_px: float, px: float) -> list[str]:
    columns = max(30, int(width_px / (0.56 * px)))
    lines: list[str] = []
    for line in text.split("\n"):
        lines.extend(textwrap.wrap(line, columns) or [""])
    return lines


def _legend_rows(grid: Grid, width_px: float) -> list[list[tuple[object, str]]]:
    rows: list[list[tuple[object, str]]] = []
    used = width_px
    for entry in grid.legend:
        need = LEGEND_SWATCH + 8 + len(entry[1]) * 0.56 * TEXT_PX + 22
        if not rows or used + need > width_px:
            rows.append([])
            used = 0.0
        rows[-1].append(entry)
        used += need
    return rows


Panels = list["Grid | tuple[Grid, ...]"]  # top to bottom; a tuple: panels side by side
MIN_PANEL_WIDTH = 300


@dataclass(frozen=True)
class _Block:
    grid: Grid
    width: float
    title: list[str]
    legend: list[list[tuple[object, str]]]

    @property
    def height(self) -> float:
        return (
            len(self.title) * TITLE_LINE
            + TICKS_HEIGHT
            + self.grid.grid_px[1]
            + 8
            + len(self.legend) * LEGEND_ROW
        )


def _block(grid: Grid, width: float | None = None) -> _Block:
    width = width or max(grid.grid_px[0], MIN_PANEL_WIDTH) + MARGIN_LEFT + MARGIN_RIGHT
    inner = width - MARGIN_LEFT - MARGIN_RIGHT
    return _Block(grid, width, _wrap(grid.title, width - 30, TITLE_PX), _legend_rows(grid, inner))


def _rows(panels: Panels) -> tuple[float, float, list[list[_Block]]]:
    rows = [[_block(g) for g in (item if isinstance(item, tuple) else (item,))] for item in panels]
    width = max(max(sum(b.width for b in row) for row in rows), MIN_WIDTH)
    # A lone panel spans the figure, so its title and legend wrap to all of it.
    rows = [[_block(row[0].grid, width)] if len(row) == 1 else row for row in rows]
    height = MARGIN_TOP + MARGIN_BOTTOM + PANEL_GAP * (len(rows) - 1)
    height += sum(max(b.height for b in row) for row in rows)
    return width, height, rows


def figure_size(panels: Panels) -> tuple[int, int]:
    """(width, height) in pixels at ``BASE_DPI`` of the picture of ``panels``."""
    width, height, _ = _rows(panels)
    return math.ceil(width), math.ceil(height)


# --- drawing -------------------------------------------------------------------------------


def _pt(px: float) -> float:
    return px * 72 / BASE_DPI


def figure(panels: Panels) -> Figure:
    """One figure: the rows of panels top to bottom, each row's panels left to right."""
    width, height, rows = _rows(panels)
    fig = Figure(figsize=(width / BASE_DPI, height / BASE_DPI), dpi=BASE_DPI)
    top = height - MARGIN_TOP
    for row in rows:
        left = 0.0
        for block in row:
            _place(fig, block, left, top, width, height)
            left += block.width
        top -= max(b.height for b in row) + PANEL_GAP
    return fig


def _place(
    fig: Figure, block: _Block, left: float, top: float, width: float, height: float
) -> None:
    grid = block.grid
    for line in block.title:
        top -= TITLE_LINE
        fig.text((left + 14) / width, (top + 4) / height, line, fontsize=_pt(TITLE_PX), va="bottom")
    top -= TICKS_HEIGHT
    grid_w, grid_h = grid.grid_px
    bottom = top - grid_h
    x0 = left + MARGIN_LEFT
    ax = fig.add_axes((x0 / width, bottom / height, grid_w / width, grid_h / height))
    _draw(ax, grid)
    top = bottom - 8
    for legend_row in block.legend:
        top -= LEGEND_ROW
        x = x0
        for color, text in legend_row:
            fig.patches.append(
                Rectangle(
                    (x / width, (top + 4) / height),
                    LEGEND_SWATCH / width,
                    LEGEND_SWATCH / height,
                    transform=fig.transFigure,
                    facecolor=color,  # type: ignore[arg-type]
                    edgecolor="#444",
                    linewidth=0.6,
                )
            )
            fig.text((x + LEGEND_SWATCH + 6) / width, (top + 5) / height, text,
                     fontsize=_pt(TEXT_PX), va="bottom")  # fmt: skip
            x += LEGEND_SWATCH + 8 + len(text) * 0.56 * TEXT_PX + 22


def _draw(ax: Axes, grid: Grid) -> None:
    rows, cols = grid.shape
    ax.imshow(
        np.clip(grid.colors, 0, 1),
        extent=(0, cols, rows, 0),
        interpolation="nearest",
        aspect="auto",
    )
    cell_w, cell_h = grid.cell_px
    if min(cell_w, cell_h) >= 7:
        thin = [s for s in outline_segments(_groups(grid)) if _inside(s, rows, cols)]
        ax.add_collection(LineCollection(thin, colors="white", linewidths=0.8))
    heavy = [[(x, 0), (x, rows)] for x in grid.col_lines]
    heavy += [[(0, y), (cols, y)] for y in grid.row_lines]
    if grid.regions is not None:
        heavy += outline_segments(grid.regions)
    if heavy:
        width = 2.4 if min(cell_w, cell_h) >= 6 else 1.4
        ax.add_collection(
            LineCollection(heavy, colors="black", linewidths=width, capstyle="projecting")
        )
    if grid.marks is not None and grid.marks.any():
        marked = outline_segments(np.where(grid.marks, 1, -1))
        ax.add_collection(LineCollection(marked, colors="#d00000", linewidths=2.2))
    if grid.label_px and grid.spans:
        _draw_labels(ax, grid)
    _ticks(ax, grid)


def _groups(grid: Grid) -> np.ndarray:
    """Thin lines go between cells of different groups: each span is one group."""
    if grid.groups is not None:
        return grid.groups
    rows, cols = grid.shape
    groups = np.arange(rows * cols).reshape(rows, cols)
    for row, start, stop, _ in grid.spans:
        groups[row, start:stop] = groups[row, start]
    return groups


def _inside(segment: list[tuple[int, int]], rows: int, cols: int) -> bool:
    (x0, y0), (x1, y1) = segment
    on_border = (x0 == x1 and x0 in (0, cols)) or (y0 == y1 and y0 in (0, rows))
    return not on_border


def outline_segments(regions: np.ndarray) -> list[list[tuple[int, int]]]:
    """Segments along every edge between cells of different region ids, and around
    regions (ids >= 0) at the border; runs along a line are merged into one."""
    rows, cols = regions.shape
    padded = np.full((rows + 2, cols + 2), -1, dtype=np.int64)
    padded[1:-1, 1:-1] = regions
    segments: list[list[tuple[int, int]]] = []
    # Vertical edges at x = c (between padded columns c and c+1), for each row.
    left, right = padded[1:-1, :-1], padded[1:-1, 1:]
    vertical = (left != right) & ((left >= 0) | (right >= 0))  # (rows, cols + 1)
    for x in range(cols + 1):
        segments += [[(x, a), (x, b)] for a, b in _runs(vertical[:, x])]
    up, down = padded[:-1, 1:-1], padded[1:, 1:-1]
    horizontal = (up != down) & ((up >= 0) | (down >= 0))  # (rows + 1, cols)
    for y in range(rows + 1):
        segments += [[(a, y), (b, y)] for a, b in _runs(horizontal[y])]
    return segments


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    runs = []
    start = None
    for i, flag in enumerate(list(flags) + [False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _draw_labels(ax: Axes, grid: Grid) -> None:
    """Each span's text, centred, as glyph outlines: one collection per character.

    Thousands of ``ax.text`` artists take seconds to lay out and draw; stamping
    each glyph's outline with a collection takes milliseconds, in PNG and SVG
    alike (SVG defines each glyph once and reuses it).
    """
    px = grid.label_px
    cell_w, cell_h = grid.cell_px
    dx = px * GLYPH_ADVANCE / cell_w  # data units per character
    dy = px * CAP_HEIGHT / 2 / cell_h
    line_step = px * LINE_SPACING / cell_h
    offsets: dict[str, list[tuple[float, float]]] = {}
    for row, start, stop, text in grid.spans:
        lines = text.split("\n")
        for index, line in enumerate(lines):
            baseline = row + 0.5 + dy + (index - (len(lines) - 1) / 2) * line_step
            left = (start + stop) / 2 - len(line) * dx / 2
            for k, char in enumerate(line):
                if not char.isspace():
                    offsets.setdefault(char, []).append((left + k * dx, baseline))
    to_pixels = Affine2D().scale(px / BASE_DPI) + ax.figure.dpi_scale_trans
    layers = [("white", 2.5), ("black", 0.0)] if grid.label_halo else [("black", 0.0)]
    for color, halo in layers:
        for char, where in offsets.items():
            ax.add_collection(
                PathCollection(
                    [_glyph(char)],
                    offsets=where,
                    offset_transform=ax.transData,
                    transform=to_pixels,
                    facecolor=color,
                    edgecolor=color if halo else "none",
                    linewidths=halo,
                )
            )


@functools.cache
def _glyph(char: str) -> MplPath:
    """A character's outline, 1 unit = 1 em, origin at its baseline."""
    return TextPath((0, 0), char, size=1, prop=LABEL_FONT)


def _step(cell: float, need: float, count: int) -> int:
    step = 1
    while step * cell < need and step < count:
        step *= 2
    return step


def _ticks(ax: Axes, grid: Grid) -> None:
    rows, cols = grid.shape
    cell_w, cell_h = grid.cell_px
    if grid.col_ticks is not None:
        xs = grid.col_ticks
    else:
        step = _step(cell_w, 3.5 * TICK_PX, cols)
        xs = [(x, str(x)) for x in range(0, cols, step)]
    if grid.row_ticks is not None:
        ys = grid.row_ticks
    else:
        step = _step(cell_h, 1.6 * TICK_PX, rows)
        ys = [(y, str(y * grid.row_scale)) for y in range(0, rows, step)]
    ax.set_xticks([x + 0.5 for x, _ in xs], [t for _, t in xs], fontsize=_pt(TICK_PX))
    ax.set_yticks([y + 0.5 for y, _ in ys], [t for _, t in ys], fontsize=_pt(TICK_PX))
    ax.tick_params(length=2, pad=2)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(grid.col_label, fontsize=_pt(TEXT_PX), labelpad=3)
    ax.set_ylabel(grid.row_label, fontsize=_pt(TEXT_PX), labelpad=3)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    for spine in ax.spines.values():
        spine.set_linewidth(0.6)


# --- files ---------------------------------------------------------------------------------


def image_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ValueError(f"cannot tell the image format of {str(path)!r}: use .png or .svg")
    return suffix


def render(panels: Panels, fmt: str, dpi: int = BASE_DPI) -> bytes:
    """The picture as PNG or SVG bytes."""
    fig = figure(panels)
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "smalto"}):
        fig.savefig(buffer, format=fmt, dpi=dpi, metadata=_metadata(fmt))
    return buffer.getvalue()


def _metadata(fmt: str) -> dict[str, str | None]:
    # No dates or tool versions: the same layout gives the same file.
    if fmt == "svg":
        return {"Date": None, "Creator": "smalto"}
    return {"Software": "smalto"}


def save(panels: Panels, path: str | Path, dpi: int = BASE_DPI) -> None:
    Path(path).write_bytes(render(panels, image_format(path), dpi))
