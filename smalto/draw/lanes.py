"""The lane key every lane-coloured panel refers to, and how a set of threads (or lanes)
is written in a label."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smalto.draw.colors import lane_colors
from smalto.draw.render import Grid

WARP_SIZE = 32


def lane_key() -> Grid:
    """A strip of the 32 lane colours, numbered: the key to every lane-coloured panel."""
    spans = [(0, lane, lane + 1, str(lane)) for lane in range(WARP_SIZE)]
    return Grid(
        lane_colors(np.arange(WARP_SIZE))[None, :, :],
        spans,
        "lane key (thread % 32): hue runs once round the wheel over a warp; even lanes deeper",
        row_label="",
        col_label="lane",
        cell_px=(24.0, 18.0),
        row_ticks=[],
        col_ticks=[],
    )


def numbers_text(numbers: Sequence[int] | np.ndarray) -> str:
    """A set of thread (or lane) numbers, ascending, as a label writes it: ``5``; a run
    ``0-3``; a progression ``0,4..124`` (0, 4, 8, ... 124: the first two and the last);
    anything else ``0(+31)``, the first and how many more."""
    values = [int(n) for n in numbers]
    first, count = values[0], len(values)
    if count == 1:
        return str(first)
    step = values[1] - first
    if all(b - a == step for a, b in zip(values, values[1:], strict=False)):
        if step == 1:
            return f"{first}-{values[-1]}"
        if count == 2:
            return f"{first},{values[1]}"
        return f"{first},{values[1]}..{values[-1]}"
    return f"{first}(+{count - 1})"


def threads_text(threads: Sequence[int] | np.ndarray) -> str:
    """``T5``, ``T0-3``, ``T0,4..124``: the threads that hold an element."""
    return "T" + numbers_text(threads)
