"""Pictures of TMEM layouts: which TMEM lane and column hold each element.

- the array, each element coloured by its TMEM lane (within the lane's quarter,
  with the lane palette of register pictures: a warp's thread ``t`` reads lane
  ``t`` of its quarter), quarters outlined heavily: which warp of the warpgroup
  can reach which elements;
- TMEM itself, 128 lanes by 32-bit columns, each cell coloured by the array row
  of the element it holds (a ramp from the first row to the last), so that
  layouts that spread rows differently over lanes (``default``, ``half_lane``,
  ``m64_collective``) look different;
- the first lanes and columns of TMEM labelled ``row,col`` (``+n``: more packed
  elements in the column).
"""

from __future__ import annotations

import numpy as np

from smalto.draw.colors import faded, lane_colors, ramp
from smalto.draw.frame import map_cell_px, map_window
from smalto.draw.lanes import lane_key
from smalto.draw.ownership import WARP_SIZE, TmemPlacement
from smalto.draw.render import Grid, label_cell_px

TMEM_LANES = 128
MAP_BUDGET = (900.0, 900.0)
LABELLED_LANES = 32
LABELLED_COLUMNS = 16
# Array rows, first to last: light colours (black labels stay legible) in hue order.
ROW_RAMP = ("#f6d55c", "#9bd88f", "#7cc6e6", "#a9a0ea", "#eb9bc9")


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def _holdings(
    placed: TmemPlacement, columns: int, lanes: int = TMEM_LANES
) -> dict[tuple[int, int], list[tuple[int, ...]]]:
    """(lane, column) -> the elements held there, for the first ``lanes`` x ``columns``."""
    copies = placed.lane.shape[-1]
    lane = placed.lane.reshape(-1, copies).reshape(-1)
    column = np.repeat(placed.column.reshape(-1), copies)
    flat = np.repeat(np.arange(placed.column.size), copies)
    kept = np.flatnonzero((column < columns) & (lane < lanes))
    held: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    indices = np.stack(np.unravel_index(flat[kept], placed.shape), axis=-1).tolist()
    for where, index in zip(kept.tolist(), indices, strict=True):
        held.setdefault((int(lane[where]), int(column[where])), []).append(tuple(index))
    return held


def _first_rows(placed: TmemPlacement, columns: int) -> np.ndarray:
    """(lanes, columns): the array row of the first element each TMEM cell holds (-1: none)."""
    copies = placed.lane.shape[-1]
    lane = placed.lane.reshape(-1)
    column = np.repeat(placed.column.reshape(-1), copies)
    row = np.repeat(np.indices(placed.shape)[0].reshape(-1), copies)
    kept = column < columns
    first = np.full((TMEM_LANES, columns), np.iinfo(np.int64).max)
    np.minimum.at(first, (lane[kept], column[kept]), row[kept])
    return np.where(first == np.iinfo(np.int64).max, -1, first)


def _row_color(row: int, rows: int) -> np.ndarray:
    return np.array(ramp(ROW_RAMP, row / max(rows - 1, 1)))


def tmem_grid(
    placed: TmemPlacement,
    name: str,
    dtype: str,
    max_cols: int = LABELLED_COLUMNS,
    max_lanes: int = 64,
    *,
    thread: int | None = None,
) -> Grid:
    """TMEM lanes x columns (the first ``max_lanes`` x ``max_cols``; by default two lane
    quarters, enough to see how a layout spreads rows), coloured by the row of the
    element held, labelled ``row,col``."""
    columns = min(placed.columns, max_cols)
    lanes = min(TMEM_LANES, max_lanes)
    held = _holdings(placed, columns, lanes)
    rows = placed.shape[0]
    colors = np.ones((lanes, columns, 3))
    spans = []
    for (lane, column), elements in held.items():
        elements.sort()
        start = elements[0]
        colors[lane, column] = _row_color(start[0], rows)
        text = f"{start[0]},{start[1]}"
        if len(elements) > 1:
            text += f"+{len(elements) - 1}"
        spans.append((lane, column, column + 1, text))
    keep = None
    if thread is not None:
        keep = np.zeros((lanes, columns), dtype=bool)
        if thread < lanes:
            keep[thread] = True
        colors = faded(colors, keep)
    shown = []
    if lanes < TMEM_LANES:
        shown.append(f"lanes 0..{lanes - 1}")
    if columns < placed.columns:
        shown.append(f"columns 0..{columns - 1} of {placed.columns}")
    note = f"\nshowing {', '.join(shown)}" if shown else ""
    title = (
        f"{name}: TMEM for {_dims(placed.shape)} {dtype}, labelled with the element each cell "
        f"holds (row,col; +n: more packed in the 32-bit column){note}"
    )
    quarters = np.repeat(np.arange(lanes) // WARP_SIZE, columns).reshape(lanes, columns)
    return Grid(
        colors,
        spans,
        title,
        [
            (
                "black",
                "heavy outline: a lane quarter (warp w of the warpgroup reaches lanes 32w..32w+31)",
            )
        ],
        row_label="TMEM lane",
        col_label="TMEM column (32 bits)",
        regions=quarters,
        marks=keep,
        cell_px=label_cell_px(spans) if spans else (24.0, 16.0),
    )


def _array_panel(placed: TmemPlacement, name: str, dtype: str, thread: int | None) -> Grid:
    view, side = map_window(placed.shape, MAP_BUDGET)
    lane = view.take(placed.lane[..., 0])
    colors = lane_colors(lane % WARP_SIZE)
    keep = None
    if thread is not None:
        keep = np.any(view.take(placed.lane) == thread, axis=-1)
        colors = faded(colors, keep)
    title = (
        f"{name}: {_dims(placed.shape)} {dtype} in TMEM, {placed.columns} columns"
        + (f", {placed.packing} elements per column" if placed.packing > 1 else "")
        + "\neach element coloured by its TMEM lane (lane key above: lane % 32); heavy "
        "outlines: lane quarters, i.e. which warp can reach it"
    )
    if view.note:
        title += f"\n{view.note}"
    return Grid(
        colors,
        [],
        title,
        **view.grid_fields(),
        regions=lane // WARP_SIZE,
        marks=keep,
        cell_px=(side, side),
        groups=np.arange(lane.size).reshape(lane.shape),
    )


def _memory_map(placed: TmemPlacement, thread: int | None) -> Grid:
    side = map_cell_px(TMEM_LANES, placed.columns, MAP_BUDGET)
    columns = min(placed.columns, int(MAP_BUDGET[0] // side))
    first = _first_rows(placed, columns)
    ramp_colors = np.array([_row_color(r, placed.shape[0]) for r in range(placed.shape[0])])
    colors = np.where((first >= 0)[..., None], ramp_colors[np.maximum(first, 0)], 1.0)
    keep = None
    if thread is not None:
        keep = np.zeros((TMEM_LANES, columns), dtype=bool)
        keep[thread % TMEM_LANES] = True
        colors = faded(colors, keep)
    quarters = np.repeat(np.arange(TMEM_LANES) // WARP_SIZE, columns).reshape(TMEM_LANES, columns)
    note = "" if columns == placed.columns else f" (columns 0..{columns - 1} of {placed.columns})"
    rows = placed.shape[0]
    return Grid(
        colors,
        [],
        f"TMEM{note}: each cell coloured by the array row of the element it holds "
        f"(legend: first and last row); white: unused",
        [
            (tuple(_row_color(0, rows)), "row 0"),
            (tuple(_row_color(rows - 1, rows)), f"row {rows - 1}"),
        ],
        row_label="TMEM lane",
        col_label="TMEM column",
        regions=quarters,
        marks=keep,
        cell_px=(side, side),
        groups=np.arange(colors.shape[0] * columns).reshape(colors.shape[0], columns),
    )


def tmem_pictures(
    placed: TmemPlacement, name: str, dtype: str, *, thread: int | None = None
) -> list[Grid | tuple[Grid, ...]]:
    """The panels of ``smalto draw --tmem``: the array and TMEM as colour maps side by
    side, then the first lanes and columns of TMEM labelled."""
    labelled = tmem_grid(placed, name, dtype, LABELLED_COLUMNS, LABELLED_LANES, thread=thread)
    return [
        lane_key(),
        (_array_panel(placed, name, dtype, thread), _memory_map(placed, thread)),
        labelled,
    ]


__all__ = ["tmem_grid", "tmem_pictures"]
