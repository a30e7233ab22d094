"""What a thread, a warp or a TMEM lane holds, as text (``--thread``, ``--warp``)."""

from __future__ import annotations

import numpy as np

from smalto.draw.ownership import WARP_SIZE, Ownership, TmemPlacement

MAX_RUNS = 12  # index runs listed before "..."


def thread_holdings(held: Ownership, thread: int) -> str:
    """What ``thread`` holds, register by register: ``R3: (8, 0), (8, 1)``."""
    mine = np.any(held.threads == thread, axis=-1)
    header = f"thread {thread} (warp {thread // WARP_SIZE}, lane {thread % WARP_SIZE}) holds"
    if mine.all():
        # A splat (or any layout that gives every thread everything): listing each element
        # would bury that in coordinates.
        registers = ", ".join(f"R{r}" for r in sorted({int(r) for r in held.register.flat}))
        dims = "x".join(map(str, held.shape))
        every = (
            " (as every thread does: one value, broadcast)" if held.copies == 4 * WARP_SIZE else ""
        )
        return f"{header} every element of the {dims} array{every}, in {registers}"
    lines = [f"{header}:"]
    by_register: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for index in zip(*np.nonzero(mine), strict=True):
        key = tuple(int(i) for i in index)
        by_register.setdefault(int(held.register[key]), []).append((int(held.slot[key]), key))
    for register in sorted(by_register):
        elements = ", ".join(_index(key) for _, key in sorted(by_register[register]))
        lines.append(f"  R{register}: {elements}")
    if len(lines) == 1:
        lines.append("  nothing")
    return "\n".join(lines)


def warp_holdings(held: Ownership, warp: int) -> str:
    """What warp ``warp`` holds: how many elements, and which rows and columns (the index
    runs along each dimension that its elements use)."""
    first = warp * WARP_SIZE
    mine = np.any(held.threads // WARP_SIZE == warp, axis=-1)
    count, total = int(mine.sum()), int(mine.size)
    lines = [
        f"warp {warp} (threads {first}-{first + WARP_SIZE - 1}) holds {count} of {total} "
        f"elements: {held.registers_per_thread} register(s) of {held.vector_length} "
        "element(s) per thread"
    ]
    if held.copies > 1:
        lines[0] += f"; each element held by {held.copies} threads"
    if count == 0:
        return lines[0] + "\n  nothing"
    names = ["elements"] if len(held.shape) == 1 else ["rows", "columns"]
    names = [f"dim {d}" for d in range(len(held.shape) - len(names))] + names
    for axis, (name, size) in enumerate(zip(names, held.shape, strict=True)):
        others = tuple(a for a in range(len(held.shape)) if a != axis)
        used = np.flatnonzero(np.any(mine, axis=others) if others else mine)
        lines.append(f"  {name}: {_runs(used, size)}")
    return "\n".join(lines)


def lane_holdings(placed: TmemPlacement, lane: int) -> str:
    """What TMEM lane ``lane`` holds, column by column (runs of columns that hold a run of
    one row's elements on one line)."""
    quarter = lane // WARP_SIZE
    header = (
        f"TMEM lane {lane} (lane quarter {quarter}: warp {quarter} reads it, as its thread "
        f"{lane}) holds:"
    )
    mine = np.any(placed.lane == lane, axis=-1)
    by_column: dict[int, list[tuple[int, ...]]] = {}
    for index in zip(*np.nonzero(mine), strict=True):
        key = tuple(int(i) for i in index)
        by_column.setdefault(int(placed.column[key]), []).append(key)
    if not by_column:
        return header + "\n  nothing"
    lines = [header]
    runs: list[tuple[int, int, tuple[int, ...], tuple[int, ...]]] = []
    for column in sorted(by_column):
        elements = sorted(by_column[column])
        start, end = elements[0], elements[-1]
        last = runs[-1] if runs else None
        if (
            last is not None
            and last[1] == column - 1
            and last[3][:-1] == start[:-1]
            and last[3][-1] + 1 == start[-1]
            and len(elements) == end[-1] - start[-1] + 1
        ):
            runs[-1] = (last[0], column, last[2], end)
        else:
            runs.append((column, column, start, end))
    for first_column, last_column, start, end in runs[:MAX_RUNS]:
        columns = (
            f"column {first_column}"
            if first_column == last_column
            else f"columns {first_column}-{last_column}"
        )
        run = _index(start) if start == end else f"{_index(start)}..{_index(end)}"
        lines.append(f"  {columns}: {run}")
    if len(runs) > MAX_RUNS:
        lines.append(f"  ... {len(runs) - MAX_RUNS} more runs of columns")
    return "\n".join(lines)


def _index(key: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, key)) + ")"


def _runs(indices: np.ndarray, size: int) -> str:
    """``16-31, 80-95 (of 256)``, ``0-63 (all)``: sorted indices as runs."""
    if len(indices) == size:
        return f"0-{size - 1} (all)"
    runs: list[tuple[int, int]] = []
    for i in indices.tolist():
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:MAX_RUNS])
    if len(runs) > MAX_RUNS:
        text += f", ... ({len(runs)} runs)"
    return f"{text} (of {size})"
