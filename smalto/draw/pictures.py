"""From ownership and placement to grids: the three kinds of picture.

- register layouts: array elements, coloured by warp, labelled ``T<thread>:R<register>``;
- SMEM transforms: array elements, coloured by the banks their 16-byte chunk
  lands in, one label per chunk, heavy lines between tiles;
- TMEM layouts: TMEM lanes x columns, coloured by sub-partition (the warp that
  may access it), labelled with the element each cell holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from smalto.draw.ownership import WARP_SIZE, Ownership, TmemPlacement
from smalto.draw.render import (
    BANK_GROUP_COLORS,
    SHARED_COLOR,
    TILE_COLORS,
    WARP_COLORS,
    Grid,
    rgb,
    shade,
)
from smalto.draw.smem import CHUNK_BYTES, LINE_BYTES, SmemPlacement

MAX_ROWS = 64
MAX_COLS = 64
MAX_SMEM_COLS = 128
MAX_TMEM_COLS = 32


@dataclass(frozen=True)
class Window:
    """Which part of an array a picture shows, as a 2D grid."""

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


def window(shape: tuple[int, ...], max_rows: int, max_cols: int) -> Window:
    """The part of an array of ``shape`` to draw: at most ``max_rows`` x ``max_cols`` cells."""
    if len(shape) == 1:
        (n,) = shape
        wrap = min(n, max_cols)
        rows_needed = math.ceil(n / wrap)
        rows = min(rows_needed, max_rows)
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


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def _threads_text(threads: np.ndarray) -> str:
    first, count = int(threads[0]), len(threads)
    if count == 1:
        return f"T{first}"
    if int(threads[-1]) - first == count - 1:
        return f"T{first}-{int(threads[-1])}"
    return f"T{first}x{count}"


# --- register layouts --------------------------------------------------------------


def register_grid(
    held: Ownership, name: str, dtype: str, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS
) -> Grid:
    """Cells coloured by warp (grey: held by several warps), labelled T<thread>:R<register>."""
    view = window(held.shape, max_rows, max_cols)
    threads = view.take(held.threads)
    registers = view.take(held.register)
    slots = view.take(held.slot)
    rows, cols = registers.shape
    colors = np.zeros((rows, cols, 3))
    spans: list[tuple[int, int, int, str]] = []
    used_warps: set[int] = set()
    shared = False
    for r in range(rows):
        for c in range(cols):
            holders = threads[r, c]
            warps = np.unique(holders // WARP_SIZE)
            register = int(registers[r, c])
            if len(warps) == 1:
                warp = int(warps[0])
                used_warps.add(warp)
                # Alternate shades by register, so each register's elements stand out.
                colors[r, c] = shade(WARP_COLORS[warp], 0.35 if register % 2 else 0.0)
            else:
                shared = True
                colors[r, c] = shade(SHARED_COLOR, 0.35 if register % 2 else 0.0)
            text = f"{_threads_text(holders)}:R{register}"
            if held.vector_length > 1:
                text += f".{int(slots[r, c])}"
            spans.append((r, c, c + 1, text))
    legend = [
        (WARP_COLORS[w], f"warp {w} (T{w * WARP_SIZE}-{w * WARP_SIZE + WARP_SIZE - 1})")
        for w in sorted(used_warps)
    ]
    if shared:
        legend.append((SHARED_COLOR, "held by several warps"))
    facts = [
        f"{held.registers_per_thread} register(s) of {held.vector_length} element(s) per thread"
    ]
    if held.copies > 1:
        facts.append(f"each element held by {held.copies} threads (replicated)")
    title = f"{name}: {_dims(held.shape)} {dtype}; " + "; ".join(facts)
    if view.note:
        title += f"\n{view.note}"
    title += "\nlabel T<thread>:R<register>" + (
        ".<element in register>" if held.vector_length > 1 else ""
    )
    return Grid(
        colors,
        spans,
        title,
        legend,
        row_label=view.row_label,
        col_label="column" if view.wrap is None else "",
        row_scale=view.row_scale,
    )


# --- SMEM --------------------------------------------------------------------------


def smem_grid(
    placed: SmemPlacement, dtype: str, max_rows: int = MAX_ROWS, max_cols: int = MAX_SMEM_COLS
) -> Grid:
    """Array elements, coloured by bank group, one label per 16-byte chunk, tile borders."""
    view = window(placed.shape, max_rows, max_cols)
    chunk = view.take(placed.chunk)
    tiles = view.take(placed.tile)
    rows, cols = chunk.shape
    position = chunk % (LINE_BYTES // CHUNK_BYTES)
    colors = np.array([rgb(BANK_GROUP_COLORS[int(p)]) for p in position.reshape(-1)])
    colors = colors.reshape(rows, cols, 3)
    spans = []
    for r in range(rows):
        start = 0
        for c in range(1, cols + 1):
            if c == cols or chunk[r, c] != chunk[r, start]:
                p = int(position[r, start])
                text = f"B{4 * p}-{4 * p + 3}"
                if c - start >= 4:
                    text = f"t{int(tiles[r, start])} " + text
                spans.append((r, start, c, text))
                start = c
    row_lines = [r for r in range(1, rows) if np.any(tiles[r] != tiles[r - 1])]
    col_lines = [c for c in range(1, cols) if np.any(tiles[:, c] != tiles[:, c - 1])]
    tiling = "untiled" if placed.tiling is None else f"tile {_dims(placed.tiling)}"
    swizzle = "no swizzle" if placed.swizzle == 16 else f"{placed.swizzle}-byte swizzle"
    title = (
        f"SMEM {_dims(placed.shape)} {dtype}, {tiling}, {swizzle}: each box is a 16-byte chunk, "
        "labelled t<tile> and the 4 banks it lands in"
    )
    if view.note:
        title += f"\n{view.note}"
    legend = [
        (BANK_GROUP_COLORS[p], f"banks {4 * p}-{4 * p + 3}")
        for p in range(LINE_BYTES // CHUNK_BYTES)
    ]
    return Grid(
        colors,
        spans,
        title,
        legend,
        row_lines,
        col_lines,
        row_label=view.row_label,
        row_scale=view.row_scale,
        # A label per 16-byte chunk, not per element: narrow cells suffice.
        cell_width=min(0.62, max(0.12, 1.2 * placed.bitwidth / (8 * CHUNK_BYTES))),
    )


def smem_memory_grid(placed: SmemPlacement, dtype: str) -> Grid:
    """SMEM itself: 128-byte lines x eight 16-byte chunks, each labelled with its elements."""
    lines = min(math.ceil(placed.total_bytes / LINE_BYTES), 2 * MAX_ROWS)
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
    spans = []
    for chunk, start in first.items():
        r, c = divmod(chunk, per_line)
        colors[r, c] = rgb(TILE_COLORS[tile_of[chunk] % len(TILE_COLORS)])
        end = last[chunk]
        text = f"t{tile_of[chunk]} [{','.join(map(str, start))}]"
        if end[-1] != start[-1]:
            text += f"..{end[-1]}"
        spans.append((r, c, c + 1, text))
    shown = "" if lines * LINE_BYTES >= placed.total_bytes else f" (first {lines} lines)"
    title = (
        f"SMEM bytes of {_dims(placed.shape)} {dtype}{shown}: rows are 128-byte lines "
        "(all 32 banks), boxes are 16-byte chunks (banks 4c..4c+3), labelled "
        "t<tile> [first element]..last column"
    )
    return Grid(
        colors,
        spans,
        title,
        row_label="byte offset / 128",
        col_label="16-byte chunk in line",
        cell_width=1.6,
    )


# --- TMEM --------------------------------------------------------------------------


def tmem_grid(placed: TmemPlacement, name: str, dtype: str, max_cols: int = MAX_TMEM_COLS) -> Grid:
    """TMEM lanes x columns, coloured by sub-partition, labelled with the element held."""
    lanes = 128
    columns = min(placed.columns, max_cols)
    held: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    for flat in range(placed.column.size):
        index = np.unravel_index(flat, placed.shape)
        column = int(placed.column[index])
        if column >= columns:
            continue
        for lane in placed.lane[index]:
            held.setdefault((int(lane), column), []).append(tuple(int(i) for i in index))
    colors = np.ones((lanes, columns, 3))
    spans = []
    for lane in range(lanes):
        base = WARP_COLORS[lane // WARP_SIZE]
        for column in range(columns):
            colors[lane, column] = shade(base, 0.35 if column % 2 else 0.0)
            elements = sorted(held.get((lane, column), []))
            if not elements:
                continue
            start = elements[0]
            text = f"{start[0]},{start[1]}"
            if len(elements) > 1:
                text += f"+{len(elements) - 1}"
            spans.append((lane, column, column + 1, text))
    note = (
        ""
        if columns == placed.columns
        else f"\nshowing columns 0..{columns - 1} of {placed.columns}"
    )
    packing = f", {placed.packing} elements per 32-bit column" if placed.packing > 1 else ""
    title = (
        f"{name}: TMEM for {_dims(placed.shape)} {dtype}, {placed.columns} columns{packing}; "
        f"cell = element row,column held (+n: more packed in the column){note}"
    )
    legend = [
        (WARP_COLORS[w], f"lanes {32 * w}-{32 * w + 31} (warp {w} of the warpgroup)")
        for w in range(4)
    ]
    return Grid(colors, spans, title, legend, row_label="TMEM lane", col_label="TMEM column")
