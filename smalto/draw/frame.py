"""Which part of an array a picture shows, how it is folded into a grid, and how large
its cells are.

Arrays are drawn as 2D grids: the last two dimensions (the ``[0, .., :, :]``
slice for rank 3 and more), 1D arrays wrapped into rows. A panel with labels
gets cells large enough for its labels at ``LABEL_PX``; a panel too large for
that is a colour map without labels, with square cells of whole pixels sized to
fit the budget. A colour map of a very wide (tall) array is folded: cut into
bands of columns (rows) stacked top to bottom (side by side), so that its cells
stay visible; and an array larger than the budget even at 1-pixel cells shows
its top-left part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

MIN_CELL_PX = 1.0  # a colour map's cells are whole pixels, at least one
MAX_MAP_CELL_PX = 26.0
FOLD_BELOW_PX = 4.0  # fold a map whose cells would be smaller than this...
FOLD_GAIN = 1.5  # ...when folding makes them at least this much larger


class GridFields(TypedDict):
    """The ``Grid`` fields that say how the grid maps to the array."""

    row_label: str
    col_label: str
    row_scale: int
    row_period: int
    col_period: int


@dataclass(frozen=True)
class Window:
    """Which part of an array a picture shows: its top-left ``rows`` x ``cols`` (a 1D
    array: ``rows`` rows of ``wrap`` elements), cut into ``bands`` bands: of columns
    stacked top to bottom (``bands_down``), or of rows side by side."""

    shape: tuple[int, ...]
    rows: int
    cols: int
    wrap: int | None  # rank 1: elements per grid row
    note: str  # "" when the whole array is shown as it is
    bands: int = 1
    bands_down: bool = True

    @property
    def grid_shape(self) -> tuple[int, int]:
        if self.bands == 1:
            return self.rows, self.cols
        if self.bands_down:
            return self.rows * self.bands, self.cols // self.bands
        return self.rows // self.bands, self.cols * self.bands

    def take(self, array: np.ndarray) -> np.ndarray:
        """The grid of an array indexed like the shape (extra trailing dims kept)."""
        rank = len(self.shape)
        extra = array.shape[rank:]
        if self.wrap is not None:
            flat = array[: self.rows * self.wrap]
            part = flat.reshape(self.rows, self.wrap, *extra)
        else:
            lead = (0,) * (rank - 2)
            part = array[lead][: self.rows, : self.cols]
        k = self.bands
        if k == 1:
            return part
        if self.bands_down:  # (rows, k, cols/k) -> (k, rows, cols/k)
            split = part.reshape(self.rows, k, self.cols // k, *extra)
            return np.moveaxis(split, 1, 0).reshape(self.rows * k, self.cols // k, *extra)
        split = part.reshape(k, self.rows // k, self.cols, *extra)  # -> (rows/k, k, cols)
        return np.moveaxis(split, 0, 1).reshape(self.rows // k, self.cols * k, *extra)

    @property
    def row_scale(self) -> int:
        return self.wrap or 1

    @property
    def row_period(self) -> int:
        """Grid rows per band (0: not folded so): row numbers restart in each band."""
        return self.rows if self.bands > 1 and self.bands_down else 0

    @property
    def col_period(self) -> int:
        return self.cols if self.bands > 1 and not self.bands_down else 0

    @property
    def row_label(self) -> str:
        if self.wrap is not None:
            return "element"
        if self.bands > 1 and not self.bands_down:
            return f"row (band b: + {self.rows // self.bands}b)"
        return "row"

    @property
    def col_label(self) -> str:
        if self.wrap is not None:
            return "+ element"
        if self.bands > 1 and self.bands_down:
            return f"column (band b: + {self.cols // self.bands}b)"
        return "column"

    def grid_fields(self) -> GridFields:
        """The ``Grid`` fields that say how the grid maps to the array."""
        return {
            "row_label": self.row_label,
            "col_label": self.col_label,
            "row_scale": self.row_scale,
            "row_period": self.row_period,
            "col_period": self.col_period,
        }


def wrap_width(n: int) -> int:
    """Elements per grid row for a labelled 1D array of ``n`` elements."""
    return min(n, 16 if n <= 512 else 64)


def window(
    shape: tuple[int, ...], max_rows: int, max_cols: int, *, wrap: int | None = None
) -> Window:
    """The part of an array of ``shape`` to draw: at most ``max_rows`` x ``max_cols``
    cells (a 1D array: rows of ``wrap`` elements, by default ``wrap_width``)."""
    if len(shape) == 1:
        (n,) = shape
        wrap = min(wrap or wrap_width(n), max_cols, n)
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


def map_cell_px(rows: int, cols: int, budget: tuple[float, float]) -> float:
    """The side of square cells, whole pixels, for a colour map of rows x cols within
    ``budget`` (w, h); at least ``MIN_CELL_PX`` (the map may then need a window)."""
    side = min(budget[0] / cols, budget[1] / rows, MAX_MAP_CELL_PX)
    return max(float(math.floor(side)), MIN_CELL_PX)


def _fits(rows: int, cols: int, budget: tuple[float, float]) -> float:
    """The cell side (unfloored) at which rows x cols fill ``budget``."""
    return min(budget[0] / cols, budget[1] / rows, MAX_MAP_CELL_PX)


def map_window(
    shape: tuple[int, ...], budget: tuple[float, float], unit: int = 1
) -> tuple[Window, float]:
    """The window of a colour map of an array and its cell side: all of it, folded if
    that makes its cells much larger, if it fits the budget at ``MIN_CELL_PX``; else
    the top-left part that does. ``unit``: for a 1D array, a count of elements the
    wrap should be a multiple of where it can (the layout's tile, so that the
    layout's pattern lines up down the rows)."""
    if len(shape) == 1:
        return _wrapped_map(shape[0], budget, unit)
    rows, cols = shape[-2], shape[-1]
    best = (_fits(rows, cols, budget), 1, True)
    if best[0] < FOLD_BELOW_PX:
        wide = cols >= rows
        length = cols if wide else rows
        other = rows if wide else cols
        for k in _divisors(length):
            if k == 1 or length // k < other:  # no more folding than makes it square-ish
                continue
            if wide:
                side = _fits(other * k, length // k, budget)
            else:
                side = _fits(length // k, other * k, budget)
            if side > best[0] * FOLD_GAIN and side > best[0]:
                best = (side, k, wide)
    side, bands, down = best
    side = max(float(math.floor(side)), MIN_CELL_PX)
    if bands > 1 and math.floor(best[0]) >= MIN_CELL_PX:
        base = window(shape, rows, cols)
        fold = "rows" if not down else "columns"
        per = (cols if down else rows) // bands
        where = "top to bottom" if down else "left to right"
        note = (
            f"folded into {bands} bands of {per} {fold}, {where} (band b holds {fold} "
            f"{per}b..{per}b+{per - 1})"
        )
        if base.note:
            note = f"{base.note}; {note}"
        folded = Window(shape, rows, cols, None, note, bands, down)
        return folded, side
    max_rows = int(budget[1] // side)
    max_cols = int(budget[0] // side)
    return window(shape, max_rows, max_cols), side


def _wrapped_map(n: int, budget: tuple[float, float], unit: int) -> tuple[Window, float]:
    """A 1D array wrapped into the rows that give the largest cells within the budget."""
    widths = _divisors(n)
    aligned = [w for w in widths if w % unit == 0] if unit > 1 else []
    best_side, best_wrap = 0.0, n
    for wrap in aligned or widths:
        side = _fits(math.ceil(n / wrap), wrap, budget)
        if side > best_side:
            best_side, best_wrap = side, wrap
    side = max(float(math.floor(best_side)), MIN_CELL_PX)
    max_rows = int(budget[1] // side)
    max_cols = max(int(budget[0] // side), 1)
    return window((n,), max_rows, max_cols, wrap=min(best_wrap, max_cols)), side


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})
