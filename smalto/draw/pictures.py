"""Pictures of register layouts: which thread and register hold each element.

Two panels, after CuTe's ``print_latex`` and Triton's layout plots:

- the whole array as a colour map: each element coloured by the lane (thread
  within its warp) that holds it, warps outlined heavily. The lane pattern is
  what tells layouts apart (WGMMA's 8 rows x 4 lanes of pairs, a strided
  layout's runs of vectors), so it is what the colours show;
- the layout's atom (its first tile; a strided layout's first register), large,
  each register labelled ``T<thread>:R<register>`` (``.<k>`` for one element of a
  vector that is not drawn in one run; ``T0-3``, ``T0,4..124`` where several
  threads hold copies).

A small array is drawn once, labelled; a splat, whose every element is the one
value all threads hold, carries one label. ``--thread``/``--warp`` fade everything
else and outline the chosen thread's (warp's) elements in red.

SMEM and TMEM pictures live in ``smem_pictures`` and ``tmem_pictures``; the grids
the report draws are re-exported here.
"""

from __future__ import annotations

import math

import numpy as np
from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.draw.colors import (
    HIGHLIGHT_COLOR,
    SHARED_COLOR,
    Color,
    faded,
    lane_colors,
    rgb,
)
from smalto.draw.frame import Window, map_window, window
from smalto.draw.lanes import lane_key, threads_text
from smalto.draw.ownership import THREADS, WARP_SIZE, Ownership
from smalto.draw.render import (
    LABEL_PX,
    MARGIN_LEFT,
    MARGIN_RIGHT,
    MAX_SIDE,
    Grid,
    figure_size,
    label_cell_px,
    outlines_fit,
    text_width,
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

OVERVIEW_BUDGET = (1400.0, 1000.0)  # pixels (width, height) of a colour map, when it fits
GOOD_MAP_CELL_PX = 3.0  # below this, a map may take all the picture's room
ATOM_BUDGET = (1100.0, 1100.0)
MIN_LABELLED_CELL = (8.0, 17.0)  # no labelled cell is smaller (label_cell_px's floor)
SPLAT_CELL_PX = 16.0
ROOM = 300.0  # what a picture needs besides its map and atom: the lane key, titles, legends


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def _cells(held: Ownership, view: Window) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per grid cell: the holders (rows, cols, copies), register, slot and warp (-1: several)."""
    threads = view.take(held.threads)
    registers = view.take(held.register)
    slots = view.take(held.slot)
    warps = threads // WARP_SIZE
    single = np.all(warps == warps[..., :1], axis=-1)
    warp = np.where(single, warps[..., 0], -1)
    return threads, registers, slots, warp


def _colors(held: Ownership, threads: np.ndarray) -> np.ndarray:
    if held.copies == THREADS:  # a splat: one value, every thread
        return np.broadcast_to(np.array(rgb(SHARED_COLOR)), (*threads.shape[:2], 3)).copy()
    return lane_colors(threads[..., 0] % WARP_SIZE)


def register_spans(
    held: Ownership, view: Window, threads: np.ndarray, registers: np.ndarray, slots: np.ndarray
) -> list[tuple[int, int, int, str]]:
    """Labels: one per run of cells holding a whole register vector in order
    (``T5:R3``), else one per cell (``T5:R3.1``); a splat's one label."""
    rows, cols = registers.shape
    if held.copies == THREADS:
        return [(rows // 2, 0, cols, f"{threads_text(threads[0, 0])}:R0")]
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
    threads: np.ndarray, thread: int | None, warp_choice: int | None
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
    colors = _colors(held, threads)
    keep = _highlight(threads, thread, warp_choice)
    if keep is not None:
        colors = faded(colors, keep)
    groups = None
    if labels:
        spans = register_spans(held, view, threads, registers, slots)
        cell = label_cell_px(spans)
        if held.copies == THREADS:
            cell = (max(cell[0], SPLAT_CELL_PX), max(cell[1], SPLAT_CELL_PX))
    else:
        side = map_side or 12.0
        cell = (side, side)
        # The cells of one register vector share their lowest holder and register.
        groups = threads[..., 0].astype(np.int64) * (held.registers_per_thread + 1) + registers
        spans = []
    outlined = bool(np.any(warp >= 0)) and outlines_fit(warp, cell)
    if not labels and outlined:
        spans = _warp_names(warp, cell)
    title = heading or _title(held, name, dtype)
    if view.note:
        title += f"\n{view.note}"
    if labels:
        title += _labels_note(spans)
    return Grid(
        colors,
        spans,
        title,
        _legend(held, warp, outlined, thread, warp_choice),
        regions=warp if outlined else None,
        marks=keep,
        cell_px=cell,
        groups=groups,
        label_halo=not labels,
        **view.grid_fields(),
    )


def _labels_note(spans: list[tuple[int, int, int, str]]) -> str:
    texts = [text for *_, text in spans]
    note = "\nlabels: T<thread>:R<register>"
    if any("." in text.partition(":")[2] for text in texts):  # some vector not drawn in one run
        note += " (.<k>: element k of the register's vector)"
    holders = [text.partition(":")[0] for text in texts]
    if any(".." in h for h in holders):
        example = next(h for h in holders if ".." in h)
        first, _, last = example[1:].partition("..")
        a, b = first.split(",")
        note += f"; {example}: threads {a}, {b}, ... {last} (each holds a copy)"
    elif any("-" in h for h in holders):
        example = next(h for h in holders if "-" in h)
        note += f"; {example}: threads {example[1:].replace('-', ' to ')} (each holds a copy)"
    if any("(+" in h for h in holders):
        note += "; T<t>(+n): thread t and n more hold copies"
    return note


def _warp_names(warp: np.ndarray, cell: tuple[float, float]) -> list[tuple[int, int, int, str]]:
    """On a colour map, ``w<k>`` in the middle of the first block of cells warp k holds
    (from its first cell, as far right and then down as the warp goes), when the text
    fits there. Blocks of different warps are disjoint, so the names never overlap."""
    rows, cols = warp.shape
    spans = []
    for w in range(4):
        where = np.argwhere(warp == w)
        if where.size == 0:
            continue
        r0, c0 = (int(i) for i in where[0])
        c1 = c0
        while c1 < cols and warp[r0, c1] == w:
            c1 += 1
        r1 = r0
        while r1 < rows and np.all(warp[r1, c0:c1] == w):
            r1 += 1
        text = f"w{w}"
        need = math.ceil((text_width(text, LABEL_PX) + 8) / cell[0])
        if (r1 - r0) * cell[1] >= 1.6 * LABEL_PX and need <= c1 - c0:
            start = c0 + (c1 - c0 - need) // 2
            spans.append(((r0 + r1 - 1) // 2, start, start + need, text))
    return spans


def _title(held: Ownership, name: str, dtype: str) -> str:
    facts = f"{held.registers_per_thread} register(s) of {held.vector_length} element(s) per thread"
    if held.copies == THREADS:
        facts = "every thread holds the one value"
    elif held.copies > 1:
        facts += f"; each element held by {held.copies} threads"
    return f"{name}: {_dims(held.shape)} {dtype} in registers; {facts}"


def _legend(
    held: Ownership,
    warp: np.ndarray,
    outlined: bool,
    thread: int | None,
    warp_choice: int | None,
) -> list[tuple[Color, str]]:
    legend: list[tuple[Color, str]] = []
    if held.copies == THREADS:
        return [(SHARED_COLOR, "all 128 threads")]
    if outlined:
        legend.append(("black", "heavy outline: a warp"))
    elif np.any(warp >= 0):
        legend.append(("white", "warps not outlined: too fine at this size (see the atom)"))
    if np.any(warp < 0):
        legend.append(("white", "no outline: held by threads of several warps"))
    if thread is not None:
        legend.append((HIGHLIGHT_COLOR, f"red outline: thread {thread}'s elements"))
    elif warp_choice is not None:
        legend.append((HIGHLIGHT_COLOR, f"red outline: warp {warp_choice}'s elements"))
    return legend


def atom_extent(layout: object, shape: tuple[int, ...]) -> tuple[int, int, str] | None:
    """(rows, cols) of the grid cells that make a layout's repeating unit, and what it is:
    a tiled layout's first tile, a strided layout's first register (all 128 threads'
    first vectors); None for a splat. A 1D array's atom is one row of its elements
    (``_atom_panel`` wraps it)."""
    if isinstance(layout, fa.TiledLayout):
        tile = layout.base_tile_shape
        if len(shape) == 1:
            return 1, min(tile[-1], shape[0]), "its first tile"
        rows = min(tile[-2] if len(tile) > 1 else 1, shape[-2])
        return rows, min(tile[-1], shape[-1]), "its first tile"
    if isinstance(layout, fa.WGStridedFragLayout):
        elements = THREADS * layout.vec_size
        what = "its first register (every thread's first vector)"
        if len(shape) == 1:
            return 1, min(elements, shape[0]), what
        cols = min(shape[-1], elements)
        return max(1, min(elements // cols, shape[-2])), cols, what
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
    rows, cols = full.grid_shape
    if rows * MIN_LABELLED_CELL[1] <= OVERVIEW_BUDGET[1] * 1.3 and (
        cols * MIN_LABELLED_CELL[0] <= OVERVIEW_BUDGET[0]
    ):
        labelled = _register_panel(held, full, name, dtype, True, None, thread, warp)
        width, height = labelled.grid_px
        if width <= OVERVIEW_BUDGET[0] and height <= OVERVIEW_BUDGET[1] * 1.3:
            return [lane_key(), labelled]
    extent = atom_extent(layout, held.shape)
    atom = None if extent is None else _atom_panel(held, extent, thread, warp)
    unit = extent[1] if extent is not None and len(held.shape) == 1 else 1
    view, side, together = _map_plan(held, name, dtype, atom, unit)
    overview = _register_panel(held, view, name, dtype, False, side, thread, warp)
    overview.title += "\nthe whole array: colour = lane, heavy outline = warp"
    if atom is None:
        return [lane_key(), overview]
    if together:
        return [lane_key(), (overview, atom)]
    return [lane_key(), overview, atom]


def _map_plan(
    held: Ownership, name: str, dtype: str, atom: Grid | None, unit: int
) -> tuple[Window, float, bool]:
    """The colour map's window and cell side, and whether the atom goes beside it: the
    usual budget when the whole array shows there at a good size, else as large as the
    picture allows (side by side or stacked, whichever gives larger cells)."""
    plans = []
    for together in (True, False) if atom is not None else (False,):
        view, side = map_window(held.shape, OVERVIEW_BUDGET, unit)
        usual = not view.note.startswith("showing") and side >= GOOD_MAP_CELL_PX
        if not (usual and _fits(held, view, side, name, dtype, atom, together)):
            budget = _room(atom, together)
            while True:
                view, side = map_window(held.shape, budget, unit)
                if _fits(held, view, side, name, dtype, atom, together) or budget[1] < 200:
                    break
                budget = (budget[0] * 0.92, budget[1] * 0.92)
        plans.append((math.prod(view.grid_shape), side, together, view))
    _, side, together, view = max(plans, key=lambda p: (p[0], p[1], p[2]))
    return view, side, together


def _room(atom: Grid | None, together: bool) -> tuple[float, float]:
    """The (width, height) a colour map may take in a picture of at most ``MAX_SIDE``."""
    frame = MARGIN_LEFT + MARGIN_RIGHT
    if atom is None:
        return MAX_SIDE - frame, MAX_SIDE - ROOM
    width, height = atom.grid_px
    if together:
        return MAX_SIDE - 2 * frame - max(width, 300), MAX_SIDE - ROOM
    return MAX_SIDE - frame, MAX_SIDE - 2 * ROOM - height


def _fits(
    held: Ownership,
    view: Window,
    side: float,
    name: str,
    dtype: str,
    atom: Grid | None,
    together: bool,
) -> bool:
    """Whether the picture with this map stays within ``MAX_SIDE`` pixels (sized with a
    stand-in map: the sizes need only its shape, title and legend)."""
    rows, cols = view.grid_shape
    title = _title(held, name, dtype) + (f"\n{view.note}" if view.note else "")
    title += "\nthe whole array: colour = lane, heavy outline = warp"
    stand_in = Grid(np.empty((rows, cols, 0)), [], title, [("black", "heavy outline: a warp")])
    stand_in.cell_px = (side, side)
    panels: list[Grid | tuple[Grid, ...]] = [lane_key()]
    if atom is None:
        panels.append(stand_in)
    elif together:
        panels.append((stand_in, atom))
    else:
        panels += [stand_in, atom]
    width, height = figure_size(panels)
    return width <= MAX_SIDE and height <= MAX_SIDE


def _atom_panel(
    held: Ownership, extent: tuple[int, int, str], thread: int | None, warp: int | None
) -> Grid:
    rows, cols, what = extent
    if len(held.shape) == 1:
        return _wrapped_atom(held, cols, what, thread, warp)
    for _ in range(8):
        view = window(held.shape, rows, cols)
        heading = f"the layout's atom, labelled: {what}"
        if view.rows < extent[0] or view.cols < extent[1]:
            heading += f"; its first {view.rows} x {view.cols} of {extent[0]} x {extent[1]} cells"
        panel = _register_panel(held, _unnoted(view), "", "", True, None, thread, warp, heading)
        width, height = panel.grid_px
        if width <= ATOM_BUDGET[0] and height <= ATOM_BUDGET[1]:
            return panel
        cell_w, cell_h = panel.cell_px
        rows = max(1, min(rows, int(ATOM_BUDGET[1] // cell_h)))
        cols = max(1, min(cols, int(ATOM_BUDGET[0] // cell_w)))
    return panel


def _unnoted(view: Window) -> Window:
    return Window(view.shape, view.rows, view.cols, view.wrap, "")


def _wrapped_atom(
    held: Ownership, elements: int, what: str, thread: int | None, warp: int | None
) -> Grid:
    """A 1D atom of ``elements``, wrapped into rows of a width that divides it (the widest
    whose labels fit the budget), so that the picture holds all of it."""
    wrap = elements
    while True:
        view = window(held.shape, elements // wrap, wrap, wrap=wrap)
        heading = f"the layout's atom, labelled: {what}: elements 0..{elements - 1}" + (
            f", {wrap} per row" if wrap < elements else ""
        )
        panel = _register_panel(held, _unnoted(view), "", "", True, None, thread, warp, heading)
        width, height = panel.grid_px
        if (width <= ATOM_BUDGET[0] and height <= ATOM_BUDGET[1]) or wrap % 2:
            return panel
        wrap //= 2
