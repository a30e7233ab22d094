"""A picture of a kernel's SMEM over time (``smalto smem --picture``): program order across,
bytes up; each allocation a box from its first op to its last, at its offset, as tall as
its bytes (its alignment padding paler above), coloured by kind; the launch's size, the
limit a block may have and the peak marked.

Painted by the same painters as every other picture (``smalto.draw.png``,
``smalto.draw.svg``), from a ``Scene``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from smalto.basics.writing import write_file
from smalto.draw.colors import Color
from smalto.draw.png import png
from smalto.draw.render import image_format, sans_width
from smalto.draw.scene import Box, Lines, Scene, Text
from smalto.draw.svg import svg
from smalto.smem.allocations import KINDS, Allocation, SmemMap

WIDTH = 960
PLOT_HEIGHT = 420
LEFT, RIGHT, TOP = 86, 24, 44
LEGEND_ROW = 20
FONT = 12.0

KIND_COLORS: dict[str, str] = {
    "pipeline buffer": "#4e79a7",
    "scratch": "#59a14f",
    "reduction scratch": "#f28e2b",
    "staged buffer": "#b07aa1",
    "kernel scratch": "#76b7b2",
    "barriers": "#e15759",
    "TMEM address": "#9c755f",
}
_PADDING_COLOR = "#e6e6e6"
_LIMIT_COLOR = "#d00000"
_SIZE_COLOR = "#333333"
_PEAK_COLOR = "#7f7f7f"

Scale = Callable[[float], float]


def smem_map_scene(smem: SmemMap) -> Scene:
    """The picture of ``smem`` as a scene."""
    top_bytes = max(smem.total, smem.limit, smem.peak[0], 1) * 1.04
    ops = max(len(smem.ops), 1)
    plot_width = WIDTH - LEFT - RIGHT
    kinds = [k for k in KINDS if any(a.kind == k for a in smem.allocations)]
    legend_rows = max(1, -(-len(kinds) // 4))
    height = TOP + PLOT_HEIGHT + 40 + legend_rows * LEGEND_ROW + 10
    picture = Scene(WIDTH, int(height))

    def x(op: float) -> float:
        return LEFT + op / ops * plot_width

    def y(byte: float) -> float:
        return TOP + PLOT_HEIGHT - byte / top_bytes * PLOT_HEIGHT

    over = f", {smem.over} bytes over the limit" if smem.over else ""
    picture.items.append(Text(LEFT, 22, f"SMEM of {smem.kernel}: {smem.total} bytes{over}", 15.0))
    picture.items.append(Box(LEFT, TOP, plot_width, PLOT_HEIGHT, None, "#000000", 1.0))
    for allocation in sorted(smem.allocations, key=lambda a: -a.footprint):
        _allocation_box(picture, allocation, x, y)
    _level(picture, smem.total, f"launch: {smem.total}", _SIZE_COLOR, x(ops) - 4, "end", x, y, ops)
    _level(picture, smem.limit, f"limit: {smem.limit}", _LIMIT_COLOR, x(0) + 4, "start", x, y, ops)
    peak, where = smem.peak
    if where is not None:
        segment = np.array([[x(where + 0.5), TOP, x(where + 0.5), TOP + PLOT_HEIGHT]])
        picture.items.append(Lines(segment, _PEAK_COLOR, 1.0))
        line = _short(smem.line_at(where)) or f"at op {where}"
        picture.items.append(
            Text(
                x(where + 0.5) + 3,
                TOP + PLOT_HEIGHT - 6,
                f"peak {peak} {line}",
                FONT - 1,
                color=_PEAK_COLOR,
            )
        )
    for byte in _ticks(top_bytes):
        picture.items.append(Text(LEFT - 6, y(byte) + 4, _kib(byte), FONT - 1, anchor="end"))
        picture.items.append(Lines(np.array([[LEFT - 3, y(byte), LEFT, y(byte)]]), "#000000", 1.0))
    bottom = TOP + PLOT_HEIGHT
    picture.items.append(Text(LEFT, bottom + 16, "op 0", FONT - 1))
    picture.items.append(
        Text(LEFT + plot_width, bottom + 16, f"op {ops - 1}", FONT - 1, anchor="end")
    )
    picture.items.append(
        Text(LEFT + plot_width / 2, bottom + 16, "program order", FONT - 1, anchor="middle")
    )
    for n, kind in enumerate(kinds):
        row, col = divmod(n, 4)
        left = LEFT + col * plot_width / 4
        top = bottom + 30 + row * LEGEND_ROW
        picture.items.append(Box(left, top, 14, 12, KIND_COLORS[kind], "#000000", 0.5))
        picture.items.append(Text(left + 20, top + 11, kind, FONT))
    return picture


def _allocation_box(picture: Scene, allocation: Allocation, x: Scale, y: Scale) -> None:
    left, right = x(allocation.start), x(allocation.end + 1)
    width = max(right - left, 1.0)
    top, base = y(allocation.offset + allocation.bytes), y(allocation.offset)
    padded_top = y(allocation.stop)
    if allocation.padding:
        picture.items.append(
            Box(left, padded_top, width, max(top - padded_top, 0.5), _PADDING_COLOR)
        )
    color: Color = KIND_COLORS.get(allocation.kind, "#999999")
    height = max(base - top, 2.0)  # a barrier's bytes, visible
    picture.items.append(Box(left, base - height, width, height, color, "#ffffff", 0.5))
    label = allocation.what
    if base - top >= FONT + 2 and sans_width(label, FONT - 1) + 6 <= width:
        picture.items.append(Text(left + 3, top + FONT, label, FONT - 1, color="white", halo=0.0))


def _level(
    picture: Scene,
    byte: int,
    label: str,
    color: str,
    at: float,
    anchor: str,
    x: Scale,
    y: Scale,
    ops: int,
) -> None:
    level = y(byte)
    picture.items.append(Lines(np.array([[x(0), level, x(ops), level]]), color, 1.5))
    picture.items.append(Text(at, level - 4, label, FONT - 1, anchor=anchor, color=color))


def _short(line: str | None) -> str | None:
    """``near kernel.py:34:12`` or ``at kernel.py:34:12``: the file's name without its folder."""
    if line is None:
        return None
    where = line.removeprefix("near ")
    parts = where.rsplit(":", 2)
    if len(parts) == 3:
        parts[0] = Path(parts[0]).name
    return ("near " if line.startswith("near ") else "at ") + ":".join(parts)


def _ticks(top: float) -> list[int]:
    step = 16 * 1024
    while top / step > 8:
        step *= 2
    while top / step < 3 and step > 1024:
        step //= 2
    return list(range(0, int(top) + 1, step))


def _kib(byte: int) -> str:
    return f"{byte // 1024} KiB" if byte % 1024 == 0 else f"{byte} B"


def smem_map_image(smem: SmemMap, fmt: str) -> bytes:
    """The picture as PNG or SVG bytes."""
    picture = smem_map_scene(smem)
    return svg(picture) if fmt == "svg" else png(picture)


def save_smem_map(smem: SmemMap, path: str | Path) -> None:
    """Writes the picture to ``path`` (``.png`` or ``.svg``)."""
    write_file(path, smem_map_image(smem, image_format(path)))
