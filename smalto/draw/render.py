"""Pictures of layouts, laid out in pixels and painted without a plotting library.

A picture is a stack of panels (``Grid``): a grid of coloured cells with labels on
runs of cells, heavy outlines between regions (warps, tiles, phases), optional
marks (a highlighted thread), a title and a legend. Every size is in pixels at
``BASE_DPI``, so that a picture's size and its text size are decided here: the
builders choose the cell size from the shape, and ``figure_size`` says how large
the picture will be before it is drawn. ``scene`` lays the panels out as marks
to paint (``smalto.draw.scene``); ``png`` and ``svg`` paint them. (matplotlib
drew them until it cost a second and a half of every ``smalto draw``: its import
alone takes a second, and the pictures use nothing of it but rectangles, lines
and text.)
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from smalto.basics.writing import write_file
from smalto.draw.colors import Color
from smalto.draw.png import png
from smalto.draw.scene import Box, Cells, Lines, Scene, Text
from smalto.draw.svg import svg

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
SANS_ADVANCE = 0.56  # DejaVu Sans: a generous average advance, in ems

# Labels: DejaVu Sans Mono, its advance and cap height, in ems.
GLYPH_ADVANCE = 0.602
CAP_HEIGHT = 0.73
LINE_SPACING = 1.25

# Lines, pixels.
HEAVY_LINE = 2.4
THIN_HEAVY_LINE = 1.4  # heavy lines on cells smaller than 6 px
MARK_LINE = 2.2
CELL_LINE = 0.8  # the white lines between groups of cells, on cells of 7 px or more
LABEL_HALO = 2.5
BAND_GAP = 10  # between the bands of a folded array


@dataclass
class Grid:
    """One panel: colours per cell, labels on runs of cells, outlines, title, legend."""

    colors: np.ndarray  # (rows, cols, 3) floats in [0, 1]
    spans: list[tuple[int, int, int, str]]  # (row, first col, last col + 1, text)
    title: str
    legend: list[tuple[Color, str]] = field(default_factory=list)  # (colour, text)
    row_lines: list[int] = field(default_factory=list)  # heavy lines above these rows
    col_lines: list[int] = field(default_factory=list)  # heavy lines left of these columns
    row_label: str = "row"
    col_label: str = "column"
    row_scale: int = 1  # a row stands for index row * row_scale (wrapped 1D arrays)
    row_period: int = 0  # a folded array's bands: row numbers restart every this many rows
    col_period: int = 0  # ... column numbers, every this many columns
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
    def bands(self) -> tuple[int, int]:
        """(bands down, bands across) of a folded array (1, 1: not folded)."""
        rows, cols = self.shape
        down = rows // self.row_period if self.row_period else 1
        across = cols // self.col_period if self.col_period else 1
        return down, across

    @property
    def grid_px(self) -> tuple[float, float]:
        """(width, height) of the cells, with the gaps between a folded array's bands."""
        rows, cols = self.shape
        down, across = self.bands
        width = cols * self.cell_px[0] + (across - 1) * BAND_GAP
        return width, rows * self.cell_px[1] + (down - 1) * BAND_GAP


# --- sizes ---------------------------------------------------------------------------------


def text_width(text: str, px: float) -> float:
    """Pixel width of the widest line of ``text`` in the label font."""
    return max((len(line) for line in text.split("\n")), default=0) * GLYPH_ADVANCE * px


def sans_width(text: str, px: float) -> float:
    """About the pixel width of ``text`` in the text font (at most this)."""
    return len(text) * SANS_ADVANCE * px


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


def heavy_line_px(cell_px: tuple[float, float]) -> float:
    return HEAVY_LINE if min(cell_px) >= 6 else THIN_HEAVY_LINE


def outlines_fit(regions: np.ndarray, cell_px: tuple[float, float]) -> bool:
    """Whether outlining ``regions`` leaves the cells visible: the heavy lines may cover
    at most a quarter of the grid (on a map of 1-pixel cells whose warps change every
    cell they would cover all of it: a black bar)."""
    rows, cols = regions.shape
    vertical = int(np.count_nonzero(regions[:, 1:] != regions[:, :-1]))
    horizontal = int(np.count_nonzero(regions[1:, :] != regions[:-1, :]))
    line = heavy_line_px(cell_px)
    covered = vertical * cell_px[1] * line + horizontal * cell_px[0] * line
    return covered <= 0.25 * rows * cols * cell_px[0] * cell_px[1]


def _wrap(text: str, width_px: float, px: float) -> list[str]:
    columns = max(30, int(width_px / (SANS_ADVANCE * px)))
    lines: list[str] = []
    for line in text.split("\n"):
        lines.extend(textwrap.wrap(line, columns) or [""])
    return lines


def _legend_entry_px(text: str) -> float:
    return LEGEND_SWATCH + 8 + sans_width(text, TEXT_PX) + 22


def _legend_rows(grid: Grid, width_px: float) -> list[list[tuple[Color, str]]]:
    rows: list[list[tuple[Color, str]]] = []
    used = width_px
    for entry in grid.legend:
        need = _legend_entry_px(entry[1])
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
    legend: list[list[tuple[Color, str]]]

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
    height: float = MARGIN_TOP + MARGIN_BOTTOM + PANEL_GAP * (len(rows) - 1)
    height += sum(max(b.height for b in row) for row in rows)
    return width, height, rows


def figure_size(panels: Panels) -> tuple[int, int]:
    """(width, height) in pixels at ``BASE_DPI`` of the picture of ``panels``."""
    width, height, _ = _rows(panels)
    return math.ceil(width), math.ceil(height)


# --- the scene -----------------------------------------------------------------------------


def scene(panels: Panels) -> Scene:
    """The picture of ``panels``: the rows of panels top to bottom, each row's panels
    left to right, as marks to paint."""
    width, height, rows = _rows(panels)
    picture = Scene(math.ceil(width), math.ceil(height))
    top = float(MARGIN_TOP)
    for row in rows:
        left = 0.0
        for block in row:
            _place(picture, block, left, top)
            left += block.width
        top += max(b.height for b in row) + PANEL_GAP
    return picture


def _place(picture: Scene, block: _Block, left: float, top: float) -> None:
    grid = block.grid
    items = picture.items
    for line in block.title:
        top += TITLE_LINE
        items.append(Text(left + 14, top - 7, line, TITLE_PX))
    top += TICKS_HEIGHT
    x0 = left + MARGIN_LEFT
    _grid(picture, grid, x0, top)
    top += grid.grid_px[1] + 8
    for legend_row in block.legend:
        top += LEGEND_ROW
        x = x0
        for color, text in legend_row:
            items.append(
                Box(x, top - 4 - LEGEND_SWATCH, LEGEND_SWATCH, LEGEND_SWATCH, color, "#444444", 0.6)
            )
            items.append(Text(x + LEGEND_SWATCH + 6, top - 7, text, TEXT_PX))
            x += _legend_entry_px(text)


def _grid(picture: Scene, grid: Grid, x0: float, y0: float) -> None:
    """The grid, band by band where it is folded (column ticks over the first row of
    bands, row ticks beside the first column; the axis labels once)."""
    rows, cols = grid.shape
    down, across = grid.bands
    band_rows, band_cols = rows // down, cols // across
    cell_w, cell_h = grid.cell_px
    for b in range(down):
        for a in range(across):
            part = _band(grid, b * band_rows, band_rows, a * band_cols, band_cols)
            x = x0 + a * (band_cols * cell_w + BAND_GAP)
            y = y0 + b * (band_rows * cell_h + BAND_GAP)
            _cells_panel(picture, part, x, y)
            _ticks(picture, part, x, y, columns=b == 0, rows_=a == 0)
    grid_w, grid_h = grid.grid_px
    _axis_labels(picture, grid, x0, y0, grid_w, grid_h)


def _band(grid: Grid, row: int, rows: int, col: int, cols: int) -> Grid:
    """The part of a folded grid that is one band (the grid itself when not folded)."""
    if grid.bands == (1, 1):
        return grid

    def band(array: np.ndarray) -> np.ndarray:
        return array[row : row + rows, col : col + cols]

    def part(array: np.ndarray | None) -> np.ndarray | None:
        return None if array is None else band(array)

    spans = [
        (r - row, start - col, stop - col, text)
        for r, start, stop, text in grid.spans
        if row <= r < row + rows and col <= start and stop <= col + cols
    ]
    return replace(
        grid,
        colors=band(grid.colors),
        spans=spans,
        regions=part(grid.regions),
        marks=part(grid.marks),
        groups=part(grid.groups),
        row_lines=[y - row for y in grid.row_lines if row < y < row + rows],
        col_lines=[x - col for x in grid.col_lines if col < x < col + cols],
        row_period=0,
        col_period=0,
    )


def _cells_panel(picture: Scene, grid: Grid, x0: float, y0: float) -> None:
    rows, cols = grid.shape
    cell_w, cell_h = grid.cell_px
    grid_w, grid_h = grid.grid_px
    items = picture.items
    items.append(Cells(x0, y0, grid_w, grid_h, grid.colors))

    def placed(segments: list[list[tuple[int, int]]]) -> np.ndarray:
        if not segments:
            return np.zeros((0, 4))
        cells = np.array(segments, dtype=float).reshape(-1, 4)
        return cells * [cell_w, cell_h, cell_w, cell_h] + [x0, y0, x0, y0]

    if min(cell_w, cell_h) >= 7:
        thin = [s for s in outline_segments(_groups(grid)) if _inside(s, rows, cols)]
        items.append(Lines(placed(thin), "white", CELL_LINE))
    heavy = [[(x, 0), (x, rows)] for x in grid.col_lines]
    heavy += [[(0, y), (cols, y)] for y in grid.row_lines]
    if grid.regions is not None:
        heavy += outline_segments(grid.regions)
    if heavy:
        items.append(Lines(placed(heavy), "black", heavy_line_px(grid.cell_px)))
    if grid.marks is not None and grid.marks.any():
        marked = outline_segments(np.where(grid.marks, 1, -1))
        items.append(Lines(placed(marked), "#d00000", MARK_LINE))
    items.append(Box(x0, y0, grid_w, grid_h, None, "black", 0.6))
    if grid.label_px and grid.spans:
        _labels(picture, grid, x0, y0)


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
    for x, a, b in _runs(vertical.T):
        segments.append([(x, a), (x, b)])
    up, down = padded[:-1, 1:-1], padded[1:, 1:-1]
    horizontal = (up != down) & ((up >= 0) | (down >= 0))  # (rows + 1, cols)
    for y, a, b in _runs(horizontal):
        segments.append([(a, y), (b, y)])
    return segments


def _runs(flags: np.ndarray) -> list[tuple[int, int, int]]:
    """(line, start, stop) of each run of True along each line (row) of ``flags``."""
    lines, length = flags.shape
    padded = np.zeros((lines, length + 2), dtype=np.int8)
    padded[:, 1:-1] = flags
    change = np.diff(padded, axis=1)
    line_of_start, starts = np.nonzero(change == 1)
    _, stops = np.nonzero(change == -1)
    return list(zip(line_of_start.tolist(), starts.tolist(), stops.tolist(), strict=True))


def _labels(picture: Scene, grid: Grid, x0: float, y0: float) -> None:
    """Each span's text, centred on its cells."""
    px = grid.label_px
    cell_w, cell_h = grid.cell_px
    halo = LABEL_HALO if grid.label_halo else 0.0
    for row, start, stop, text in grid.spans:
        lines = text.split("\n")
        middle = y0 + (row + 0.5) * cell_h
        for index, line in enumerate(lines):
            baseline = middle + CAP_HEIGHT * px / 2
            baseline += (index - (len(lines) - 1) / 2) * LINE_SPACING * px
            x = x0 + (start + stop) / 2 * cell_w
            picture.items.append(Text(x, baseline, line, px, mono=True, anchor="middle", halo=halo))


def _step(cell: float, need: float, count: int) -> int:
    step = 1
    while step * cell < need and step < count:
        step *= 2
    return step


def _ticks(
    picture: Scene, grid: Grid, x0: float, y0: float, *, columns: bool = True, rows_: bool = True
) -> None:
    """Column ticks above the grid (``columns``), row ticks left of it (``rows_``)."""
    rows, cols = grid.shape
    cell_w, cell_h = grid.cell_px
    xs: list[tuple[int, str]] = []
    ys: list[tuple[int, str]] = []
    if columns:
        if grid.col_ticks is not None:
            xs = grid.col_ticks
        else:
            step = _step(cell_w, 3.5 * TICK_PX, cols)
            xs = [(x, str(x)) for x in range(0, cols, step)]
    if rows_:
        if grid.row_ticks is not None:
            ys = grid.row_ticks
        else:
            step = _step(cell_h, 1.6 * TICK_PX, rows)
            ys = [(y, str(y * grid.row_scale)) for y in range(0, rows, step)]
    items = picture.items
    marks = []
    for x, text in xs:
        centre = x0 + (x + 0.5) * cell_w
        marks.append((centre, y0 - 2, centre, y0))
        items.append(Text(centre, y0 - 5, text, TICK_PX, anchor="middle"))
    for y, text in ys:
        centre = y0 + (y + 0.5) * cell_h
        marks.append((x0 - 2, centre, x0, centre))
        items.append(Text(x0 - 5, centre + CAP_HEIGHT * TICK_PX / 2, text, TICK_PX, anchor="end"))
    if marks:
        items.append(Lines(np.array(marks, dtype=float), "black", 0.8))


def _axis_labels(
    picture: Scene, grid: Grid, x0: float, y0: float, grid_w: float, grid_h: float
) -> None:
    rows = grid.row_period or grid.shape[0]
    if grid.row_ticks is not None:
        widest = max((sans_width(text, TICK_PX) for _, text in grid.row_ticks), default=0.0)
    else:
        widest = sans_width(str((rows - 1) * grid.row_scale), TICK_PX)
    if grid.col_label:
        y = y0 - 8 - TICK_PX - 3 if grid.col_ticks != [] else y0 - 5
        picture.items.append(Text(x0 + grid_w / 2, y, grid.col_label, TEXT_PX, anchor="middle"))
    if grid.row_label:
        x = max(x0 - 8 - widest - 4, TEXT_PX)
        picture.items.append(
            Text(x, y0 + grid_h / 2, grid.row_label, TEXT_PX, anchor="middle", vertical=True)
        )


# --- files ---------------------------------------------------------------------------------


def image_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ValueError(f"cannot tell the image format of {str(path)!r}: use .png or .svg")
    return suffix


def render(panels: Panels, fmt: str, dpi: int = BASE_DPI) -> bytes:
    """The picture as PNG or SVG bytes (PNG at ``dpi``: lengths scale with it)."""
    picture = scene(panels)
    if fmt == "svg":
        return svg(picture)
    return png(picture, dpi / BASE_DPI)


def save(panels: Panels, path: str | Path, dpi: int = BASE_DPI) -> None:
    write_file(path, render(panels, image_format(path), dpi))
