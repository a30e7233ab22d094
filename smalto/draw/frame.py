"""Which part of an array a picture shows, and how large its cells are.

Arrays are drawn as 2D grids: the last two dimensions (the ``[0, .., :, :]``
slice for rank 3 and more), 1D arrays wrapped into rows. A panel with labels
gets cells large enough for its labels at ``LABEL_PX``; a panel too large for
that is a colour map without labels, with square-ish cells sized to fit the
budget; and a colour map larger than the budget even at ``MIN_CELL_PX`` shows its
top-left part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_CELL_PX = 1.0  # a colour map's cells may be as small as a pixel, and fractional
MAX_MAP_CELL_PX = 26.0


@dataclass(frozen=True)
class Window:
    """Which part of an array a picture shows, as a 2D grid of ``rows`` x ``cols``."""

    shape: tuple[int, ...]
    rows: int
    cols: int
    wrap: int | None  # rank 1: elements per grid row
    note: str  # "" when the whole array is shown

    def take(self, array: np.ndarray) -> np.ndarray:
        """The (rows, cols, ...) window of an array indexed like the shape (extra dims kept)."""
        rank = len(self.shape)
        if self.wrap is not None:
            flat = array[: self.rows * self.wrap]
            return flat.reshape(self.rows, self.wrap, *array.shape[1:])
        lead = (0,) * (rank - 2)
        return array[lead][: self.rows, : self.cols]

    @property
    def row_scale(self) -> int:
        return self.wrap or 1

    @property
    def row_label(self) -> str:
        return "element" if self.wrap is not None else "row"

    @property
    def col_label(self) -> str:
        return "+ element" if self.wrap is not None else "column"


def wrap_width(n: int) -> int:
    """Elements per grid row for a 1D array of ``n`` elements."""
    return min(n, 16 if n <= 512 else 64)


def window(shape: tuple[int, ...], max_rows: int, max_cols: int) -> Window:
    """The part of an array of ``shape`` to draw: at most ``max_rows`` x ``max_cols`` cells."""
    if len(shape) == 1:
        (n,) = shape
        wrap = min(wrap_width(n), max_cols)
        rows = min(math.ceil(n / wrap), max_rows)
        if n % wrap:
            rows = min(rows, n // wrap) or 1
        shown = rows * wrap
        note = "" if shown == n else f"showing elements 0..{shown - 1} of {n}"
        if rows > 1 and not note:
            note = f"{wrap} elements per row"
        return Window(shape, rows, wrap, wrap, note)
    rows, cols = min(shape[-2], max_rows), min(shape[-1], max_cols)
    notes = []
    if len(shape) > 2:
        notes.append("[" + ", ".join("0" for _ in shape[:-2]) + ", :, :]")
    if rows < shape[-2] or cols < shape[-1]:
        notes.append(f"rows 0..{rows - 1} of {shape[-2]}, columns 0..{cols - 1} of {shape[-1]}")
    note = "showing " + ", ".join(notes) if notes else ""
    return Window(shape, rows, cols, None, note)


def grid_extent(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, cols) of the grid that shows all of an array of ``shape``."""
    whole = window(shape, 1 << 30, 1 << 30)
    return whole.rows, whole.cols


def map_cell_px(rows: int, cols: int, budget: tuple[float, float]) -> float:
    """The side of square cells for a colour map of rows x cols within ``budget`` (w, h)."""
    side = min(budget[0] / cols, budget[1] / rows, MAX_MAP_CELL_PX)
    if side >= 4:
        side = math.floor(side)  # whole pixels where cells are large enough to see edges
    return max(side, MIN_CELL_PX)


def map_window(shape: tuple[int, ...], budget: tuple[float, float]) -> tuple[Window, float]:
    """The window of a colour map of an array and its cell side: all of it if it fits
    the budget at ``MIN_CELL_PX``, else the top-left part that does."""
    rows, cols = grid_extent(shape)
    side = map_cell_px(rows, cols, budget)
    max_rows = int(budget[1] // side)
    max_cols = int(budget[0] // side)
    return window(shape, max_rows, max_cols), side
