"""Pictures of register layouts: which thread and register hold each element.

Two panels, after CuTe's ``print_latex`` and Triton's layout plots:

- the whole array as a colour map: each element coloured by the lane (thread
  within its warp) that holds it, warps outlined heavily. The lane pattern is
  what tells layouts apart (WGMMA's 8 rows x 4 lanes of pairs, a strided
  layout's runs of vectors), so it is what the colours show;
- the layout's atom (its first tile; a strided layout's first register), large,
  each register labelled ``T<thread>:R<register>`` (``.<k>`` for one element of a
  vector that is not drawn in one run).

A small array is drawn once, labelled. ``--thread``/``--warp`` fade everything
else and outline the chosen thread's (warp's) elements in red.

SMEM and TMEM pictures live in ``smem_pictures`` and ``tmem_pictures``; this
module re-exports their builders for callers of the old single module.
"""

from __future__ import annotations

import numpy as np
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.draw.frame import Window, map_window, window
from smalto.draw.ownership import THREADS, WARP_SIZE, Ownership
from smalto.draw.render import (
    MAX_SIDE,
    SHARED_COLOR,
    Grid,
    faded,
    figure_size,
    label_cell_px,
    lane_colors,
    rgb,
)
from smalto.draw.smem_pictures import smem_grid, smem_memory_grid
from smalto.draw.tmem_pictures import tmem_grid

__all__ = [
    "atom_extent",
    "lane_key",
    "register_grid",
    "register_pictures",
    "smem_grid",
    "smem_memory_grid",
    "tmem_grid",
]

OVERVIEW_BUDGET = (1400.0, 1000.0)  # pixels (width, height) of a grid
ATOM_BUDGET = (1100.0, 1100.0)
SIDE_BY_SIDE_WIDTH = 2000  # panels go side by side when the picture stays this narrow


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def threads_text(threads: np.ndarray) -> str:
    """``T5``, ``T0-3`` (a run) or ``T0x32`` (the lowest of 32 holders)."""
    first, count = int(threads[0]), len(threads)
    if count == 1:
        return f"T{first}"
    if int(threads[-1]) - first == count - 1:
        return f"T{first}-{int(threads[-1])}"
    return f"T{first}x{count}"


def _cells(held: Ownership, view: Window) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per grid cell: the holders (rows, cols, copies), register, slot and warp (-1: several)."""
    threads = view.take(held.threads)
    registers = view.take(held.register)
    slots = view.take(held.slot)
    warps = threads // WARP_SIZE
    single = np.all(warps == warps[..., :1], axis=-1)
    warp = np.where(single, warps[..., 0], -1)
    return threads, registers, slots, warp


def _colors(threads: np.ndarray, warp: np.ndarray) -> np.ndarray:
    colors = lane_colors(threads[..., 0] % WARP_SIZE)
    everyone = threads.shape[-1] == THREADS
    if everyone:  # a splat: one value, every thread
        colors[...] = rgb(SHARED_COLOR)
    return colors


def register_spans(
    held: Ownership, view: Window, threads: np.ndarray, registers: np.ndarray, slots: np.ndarray
) -> list[tuple[int, int, int, str]]:
    """Labels: one per run of cells holding a whole register vector in order
    (``T5:R3``), else one per cell (``T5:R3.1``)."""
    rows, cols = registers.shape
    vector = held.vector_length
    spans = []
    for r in range(rows):
        c = 0
        while c < cols:
            holders = threads[r, c]
            text = f"{threads_text(holders)}:R{int(registers[r, c])}"
            run = 1
            if vector > 1 and int(slots[r, c]) == 0:
                while (
                    run < vector
                    and c + run < cols
                    and int(registers[r, c + run]) == int(registers[r, c])
                    and int(slots[r, c + run]) == run
                    and np.array_equal(threads[r, c + run], holders)
                ):
                    run += 1
            if run == vector:
                spans.append((r, c, c + run, text))
            else:
                run = 1
                suffix = f".{int(slots[r, c])}" if vector > 1 else ""
                spans.append((r, c, c + 1, text + suffix))
            c += run
    return spans


def _highlight(
    threads: np.ndarray, warp: np.ndarray, thread: int | None, warp_choice: int | None
) -> np.ndarray | None:
    if thread is not None:
        return np.any(threads == thread, axis=-1)
    if warp_choice is not None:
        return np.any(threads // WARP_SIZE == warp_choice, axis=-1)
    return None


def register_grid(
    held: Ownership,
    name: str,
    dtype: str,
    max_rows: int = 64,
    max_cols: int = 64,
    *,
    thread: int | None = None,
    warp: int | None = None,
    labels: bool = True,
) -> Grid:
    """The top-left ``max_rows`` x ``max_cols`` of the array, cells coloured by lane, warps
    outlined, each register labelled (``labels``) with its thread and index."""
    view = window(held.shape, max_rows, max_cols)
    return _register_panel(held, view, name, dtype, labels, None, thread, warp)


def _register_panel(
    held: Ownership,
    view: Window,
    name: str,
    dtype: str,
    labels: bool,
    map_side: float | None,
    thread: int | None,
    warp_choice: int | None,
    heading: str = "",
) -> Grid:
    threads, registers, slots, warp = _cells(held, view)
    colors = _colors(threads, warp)
    keep = _highlight(threads, warp, thread, warp_choice)
    if keep is not None:
        colors = faded(colors, keep)
    groups = None
    if labels:
        spans = register_spans(held, view, threads, registers, slots)
        cell = label_cell_px(spans)
    else:
        side = map_side or 12.0
        cell = (side, side)
        if side >= 7:  # thin lines between register vectors: only where cells are large
            spans = register_spans(held, view, threads, registers, slots)
            groups = _span_groups(spans, warp.shape)
        spans = _warp_names(warp, cell)
    title = heading or _title(held, name, dtype)
    if view.note:
        title += f"\n{view.note}"
    if labels:
        split = any("." in text for *_, text in spans)  # some vector not drawn in one run
        title += "\nlabels: T<thread>:R<register>" + (
            " (.<k>: element k of the register's vector)" if split else ""
        )
    return Grid(
        colors,
        spans,
        title,
        _legend(held, warp, thread, warp_choice),
        row_label=view.row_label,
        col_label=view.col_label,
        row_scale=view.row_scale,
        regions=warp if np.any(warp >= 0) else None,
        marks=keep,
        cell_px=cell,
        groups=groups,
        label_halo=not labels,
    )


def _span_groups(spans: list[tuple[int, int, int, str]], shape: tuple[int, ...]) -> np.ndarray:
    """Cell group ids: the cells of one register vector share one (thin lines go between)."""
    groups = np.arange(int(np.prod(shape))).reshape(shape)
    for row, start, stop, _ in spans:
        groups[row, start:stop] = groups[row, start]
    return groups


def _warp_names(warp: np.ndarray, cell: tuple[float, float]) -> list[tuple[int, int, int, str]]:
    """On a colour map, ``w<k>`` at the middle of each warp's region (when it is big
    enough to hold the text and the middle is its own)."""
    spans = []
    for w in range(4):
        rows, cols = np.nonzero(warp == w)
        if rows.size == 0:
            continue
        r, c = int(np.median(rows)), int(np.median(cols))
        height = (rows.max() - rows.min() + 1) * cell[1]
        width = (cols.max() - cols.min() + 1) * cell[0]
        if warp[r, c] == w and height >= 18 and width >= 40:
            span = max(1, int(np.ceil(28 / cell[0])))
            start = max(0, min(c - span // 2, warp.shape[1] - span))
            spans.append((r, start, start + span, f"w{w}"))
    return spans


def _title(held: Ownership, name: str, dtype: str) -> str:
    facts = f"{held.registers_per_thread} register(s) of {held.vector_length} element(s) per thread"
    if held.copies == THREADS:
        facts = "every thread holds the one value"
    elif held.copies > 1:
        facts += f"; each element held by {held.copies} threads"
    return f"{name}: {_dims(held.shape)} {dtype} in registers; {facts}"


def _legend(
    held: Ownership, warp: np.ndarray, thread: int | None, warp_choice: int | None
) -> list[tuple[object, str]]:
    legend: list[tuple[object, str]] = []
    if held.copies == THREADS:
        return [(SHARED_COLOR, "all 128 threads")]
    if np.any(warp >= 0):
        legend.append(("black", "heavy outline: a warp"))
    if np.any(warp < 0):
        legend.append(("white", "no outline: held by threads of several warps"))
    if thread is not None:
        legend.append(("#d00000", f"red outline: thread {thread}'s elements"))
    elif warp_choice is not None:
        legend.append(("#d00000", f"red outline: warp {warp_choice}'s elements"))
    return legend


def lane_key() -> Grid:
    """A strip of the 32 lane colours, numbered: the key to every lane-coloured panel."""
    lanes = np.arange(WARP_SIZE)
    spans = [(0, lane, lane + 1, str(lane)) for lane in lanes]
    return Grid(
        lane_colors(lanes)[None, :, :],
        spans,
        "lane key (thread % 32): hue runs once round the wheel over a warp; even lanes deeper",
        row_label="",
        col_label="lane",
        cell_px=(24.0, 18.0),
        row_ticks=[],
        col_ticks=[],
    )


def atom_extent(layout: object, shape: tuple[int, ...]) -> tuple[int, int, str] | None:
    """(rows, cols) of the grid cells that make a layout's repeating unit, and what it is:
    a tiled layout's first tile, a strided layout's first register (all 128 threads'
    first vectors); None for a splat."""
    whole = window(shape, 1 << 30, 1 << 30)
    if isinstance(layout, fa.TiledLayout):
        tile = layout.base_tile_shape
        if len(shape) == 1:
            return max(1, tile[-1] // whole.cols), min(tile[-1], whole.cols), "its first tile"
        rows = min(tile[-2] if len(tile) > 1 else 1, shape[-2])
        return rows, min(tile[-1], shape[-1]), "its first tile"
    if isinstance(layout, fa.WGStridedFragLayout):
        elements = THREADS * layout.vec_size
        rows = max(1, min(elements // whole.cols, whole.rows))
        return rows, whole.cols, "its first register (every thread's first vector)"
    return None


def register_pictures(
    held: Ownership,
    layout: object,
    name: str,
    dtype: str,
    *,
    thread: int | None = None,
    warp: int | None = None,
) -> list[Grid | tuple[Grid, ...]]:
    """The panels of ``smalto draw LAYOUT``: a lane key, the array as a colour map, and
    the atom labelled (or, for a small array, the whole array labelled)."""
    full = window(held.shape, 1 << 30, 1 << 30)
    labelled = _register_panel(held, full, name, dtype, True, None, thread, warp)
    width, height = labelled.grid_px
    if width <= OVERVIEW_BUDGET[0] and height <= OVERVIEW_BUDGET[1] * 1.3:
        return [lane_key(), labelled]
    extent = atom_extent(layout, held.shape)
    budget = OVERVIEW_BUDGET
    while True:
        view, side = map_window(held.shape, budget)
        overview = _register_panel(held, view, name, dtype, False, side, thread, warp)
        overview.title += "\nthe whole array: colour = lane, heavy outline = warp"
        if extent is None:
            return [lane_key(), overview]
        atom = _atom_panel(held, extent, thread, warp)
        panels: list[Grid | tuple[Grid, ...]] = [lane_key(), (overview, atom)]
        if figure_size(panels)[0] > SIDE_BY_SIDE_WIDTH:
            panels = [lane_key(), overview, atom]
        if max(figure_size(panels)) <= MAX_SIDE or budget[1] < 200:
            return panels
        budget = (budget[0] * 0.8, budget[1] * 0.8)


def _atom_panel(
    held: Ownership, extent: tuple[int, int, str], thread: int | None, warp: int | None
) -> Grid:
    rows, cols, what = extent
    for _ in range(8):
        view = window(held.shape, rows, cols)
        heading = f"the layout's atom, labelled: {what}"
        if view.rows < extent[0] or view.cols < extent[1]:
            heading += f"; its first {view.rows} x {view.cols} of {extent[0]} x {extent[1]} cells"
        panel = _register_panel(held, view, "", "", True, None, thread, warp, heading)
        lines = panel.title.split("\n")
        panel.title = "\n".join(line for line in lines if not line.startswith("showing"))
        width, height = panel.grid_px
        if width <= ATOM_BUDGET[0] and height <= ATOM_BUDGET[1]:
            return panel
        cell_w, cell_h = panel.cell_px
        rows = max(1, min(rows, int(ATOM_BUDGET[1] // cell_h)))
        cols = max(1, min(cols, int(ATOM_BUDGET[0] // cell_w)))
    return panel
