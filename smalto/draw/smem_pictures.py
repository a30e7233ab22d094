"""Pictures of SMEM transforms: where each element of a tiled, swizzled ref lands.

- the array, each element coloured by the group of 4 banks its 16-byte chunk
  lands in after swizzling (so the swizzle's XOR pattern shows as a pattern of
  colours), tiles outlined heavily, one label per chunk (``B<first>-<last bank>``)
  when the array is small enough to label;
- its first tile labelled, when the array is not;
- SMEM itself: 128-byte lines (all 32 banks) by eight 16-byte chunks, each
  labelled with its tile and the elements it holds.
"""

from __future__ import annotations

import math

import numpy as np

from smalto.draw.colors import Color, rgb
from smalto.draw.frame import Window, map_window, window
from smalto.draw.render import Grid, label_cell_px
from smalto.draw.smem import CHUNK_BYTES, LINE_BYTES, SmemPlacement

# One colour per 16-byte chunk position in a 128-byte line (4 banks each).
BANK_GROUP_COLORS = (
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
)  # fmt: skip
TILE_COLORS = ("#e0ecf4", "#fde0dd", "#e5f5e0", "#fff7bc", "#efedf5", "#fee6ce")
ARRAY_BUDGET = (1400.0, 900.0)
MEMORY_LINES = 32
MIN_LABELLED_CELL_WIDTH = 10.0


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def describe(placed: SmemPlacement, dtype: str) -> str:
    tiling = "untiled" if placed.tiling is None else f"tile {_dims(placed.tiling)}"
    swizzle = "no swizzle" if placed.swizzle == 16 else f"{placed.swizzle}-byte swizzle"
    if placed.dim_order is not None:
        ref = "" if placed.ref_tiling is None else f", tiled {_dims(placed.ref_tiling)}"
        order = ", ".join(map(str, placed.dim_order))
        tiling += f" (a view with dims ({order}) of the ref{ref})"
    return f"SMEM {_dims(placed.shape)} {dtype}, {tiling}, {swizzle}"


def _chunk_spans(chunk: np.ndarray) -> list[tuple[int, int, int, str]]:
    rows, cols = chunk.shape
    position = chunk % (LINE_BYTES // CHUNK_BYTES)
    spans = []
    for r in range(rows):
        start = 0
        for c in range(1, cols + 1):
            if c == cols or chunk[r, c] != chunk[r, start]:
                p = int(position[r, start])
                spans.append((r, start, c, f"B{4 * p}-{4 * p + 3}"))
                start = c
    return spans


def _array_panel(
    placed: SmemPlacement, view: Window, title: str, labels: bool, side: float | None
) -> Grid:
    chunk = view.take(placed.chunk)
    tiles = view.take(placed.tile)
    rows, cols = chunk.shape
    position = chunk % (LINE_BYTES // CHUNK_BYTES)
    table = np.array([rgb(c) for c in BANK_GROUP_COLORS])
    colors = table[position]
    spans = _chunk_spans(chunk) if labels else []
    if labels:
        width, height = label_cell_px(spans)
        cell = (max(width, MIN_LABELLED_CELL_WIDTH), height)
    else:
        cell = (side or 12.0, side or 12.0)
    if view.note:
        title += f"\n{view.note}"
    legend: list[tuple[Color, str]] = [
        (BANK_GROUP_COLORS[p], f"banks {4 * p}-{4 * p + 3}")
        for p in range(LINE_BYTES // CHUNK_BYTES)
    ]
    legend.append(("black", "heavy outline: a tile"))
    return Grid(
        colors,
        spans,
        title,
        legend,
        **view.grid_fields(),
        regions=tiles,
        cell_px=cell,
        groups=chunk,
    )


def smem_grid(placed: SmemPlacement, dtype: str, max_rows: int = 64, max_cols: int = 128) -> Grid:
    """The top-left of the array, coloured by bank group, labelled per 16-byte chunk."""
    view = window(placed.shape, max_rows, max_cols)
    title = (
        f"{describe(placed, dtype)}: each element coloured by the 4 banks its 16-byte chunk "
        "lands in; labels: those banks, once per chunk"
    )
    return _array_panel(placed, view, title, True, None)


def smem_pictures(placed: SmemPlacement, dtype: str) -> list[Grid | tuple[Grid, ...]]:
    """The panels of ``smalto draw --smem``: the array (labelled, or as a colour map and
    its first tile labelled), then the first SMEM lines."""
    full = window(placed.shape, 1 << 30, 1 << 30)
    labelled = smem_grid(placed, dtype, full.rows, full.cols)
    width, height = labelled.grid_px
    panels: list[Grid | tuple[Grid, ...]] = []
    if width <= ARRAY_BUDGET[0] and height <= ARRAY_BUDGET[1]:
        panels.append(labelled)
    else:
        view, side = map_window(placed.shape, ARRAY_BUDGET)
        title = (
            f"{describe(placed, dtype)}: each element coloured by the 4 banks its 16-byte "
            "chunk lands in"
        )
        panels.append(_array_panel(placed, view, title, False, side))
        tile = placed.tiling or placed.shape
        rows = min(tile[-2] if len(tile) > 1 else 1, 16)
        cols = min(tile[-1], 128)
        first = window(placed.shape, rows, cols)
        panels.append(
            _array_panel(
                placed, first, "the first tile, labelled with the banks of each chunk", True, None
            )  # fmt: skip
        )
    panels.append(smem_memory_grid(placed, dtype))
    return panels


def smem_memory_grid(placed: SmemPlacement, dtype: str, max_lines: int = MEMORY_LINES) -> Grid:
    """SMEM itself: 128-byte lines x eight 16-byte chunks, each labelled with its elements."""
    lines = min(math.ceil(placed.total_bytes / LINE_BYTES), max_lines)
    per_line = LINE_BYTES // CHUNK_BYTES
    first: dict[int, tuple[int, ...]] = {}
    last: dict[int, tuple[int, ...]] = {}
    tile_of: dict[int, int] = {}
    chunks = placed.chunk.reshape(-1)
    order = np.argsort(placed.unswizzled_byte.reshape(-1), kind="stable")
    for flat in order:
        chunk = int(chunks[flat])
        if chunk >= lines * per_line:
            continue
        index = tuple(int(i) for i in np.unravel_index(flat, placed.shape))
        first.setdefault(chunk, index)
        last[chunk] = index
        tile_of[chunk] = int(placed.tile.reshape(-1)[flat])
    colors = np.ones((lines, per_line, 3))
    tiles = np.full((lines, per_line), -1)
    spans = []
    for chunk, start in first.items():
        r, c = divmod(chunk, per_line)
        colors[r, c] = rgb(TILE_COLORS[tile_of[chunk] % len(TILE_COLORS)])
        tiles[r, c] = tile_of[chunk]
        end = last[chunk]
        text = f"t{tile_of[chunk]} [{','.join(map(str, start))}]"
        if end[:-1] == start[:-1] and end[-1] != start[-1]:
            text += f"..{end[-1]}"
        elif end != start:  # a view with permuted dims: a chunk runs down a column
            text += f"..[{','.join(map(str, end))}]"
        spans.append((r, c, c + 1, text))
    total = math.ceil(placed.total_bytes / LINE_BYTES)
    shown = "" if lines >= total else f" (the first {lines} of {total} lines)"
    title = (
        f"SMEM bytes of {_dims(placed.shape)} {dtype}{shown}: rows are 128-byte lines (all 32 "
        "banks), boxes 16-byte chunks (banks 4c..4c+3), labelled t<tile> [first element]..last "
        "column"
    )
    return Grid(
        colors,
        spans,
        title,
        [("black", "heavy outline: a tile")],
        row_label="byte offset / 128",
        col_label="16-byte chunk in line (banks)",
        regions=tiles,
        cell_px=label_cell_px(spans),
        col_ticks=[(c, f"{4 * c}-{4 * c + 3}") for c in range(per_line)],
    )
