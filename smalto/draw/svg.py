"""A scene written as SVG: cells as runs of rectangles (or, for large grids, one embedded
PNG drawn without smoothing), lines as paths, text as text (searchable, small).

The same scene gives the same bytes: no dates, no ids from counters that vary.
"""

from __future__ import annotations

import base64
import io
from html import escape

import numpy as np

from smalto.draw.colors import hex_color
from smalto.draw.fonts import MONO_FAMILY, SANS_FAMILY
from smalto.draw.scene import Box, Cells, Lines, Scene, Text

MAX_RECTANGLES = 20_000  # more runs of cells than this: the grid is embedded as a PNG


def svg(scene: Scene) -> bytes:
    parts = [
        '<?xml version="1.0" encoding="utf-8"?>\n',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{scene.width}" height="{scene.height}" '
        f'viewBox="0 0 {scene.width} {scene.height}">\n',
        "<!-- drawn by smalto -->\n",
        '<rect width="100%" height="100%" fill="#ffffff"/>\n',
    ]
    for item in scene.items:
        match item:
            case Cells():
                parts.append(_cells(item))
            case Lines():
                parts.append(_lines(item))
            case Box():
                parts.append(_box(item))
            case Text():
                parts.append(_text(item))
    parts.append("</svg>\n")
    return "".join(parts).encode("utf-8")


def _n(value: float) -> str:
    """A coordinate, short: ``12``, ``12.5``."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _cells(cells: Cells) -> str:
    colors = np.round(np.clip(cells.colors, 0, 1) * 255).astype(np.uint8)
    rows, cols = colors.shape[:2]
    packed = (
        colors[..., 0].astype(np.int64) << 16 | colors[..., 1].astype(np.int64) << 8
    ) | colors[..., 2]
    starts = np.ones((rows, cols), dtype=bool)
    starts[:, 1:] = packed[:, 1:] != packed[:, :-1]
    if int(starts.sum()) > MAX_RECTANGLES:
        return _embedded(cells, colors)
    xs, ys = cells.col_edges(), cells.row_edges()
    runs: dict[int, list[str]] = {}
    for r in range(rows):
        begins = np.flatnonzero(starts[r])
        ends = [*begins[1:], cols]
        for begin, end in zip(begins, ends, strict=True):
            width, height = xs[end] - xs[begin], ys[r + 1] - ys[r]
            runs.setdefault(int(packed[r, begin]), []).append(
                f"M{xs[begin]} {ys[r]}h{width}v{height}h{-width}z"
            )
    return "".join(
        f'<path fill="#{color:06x}" d="{"".join(paths)}"/>\n' for color, paths in runs.items()
    )


def _embedded(cells: Cells, colors: np.ndarray) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(colors, "RGB").save(buffer, format="png")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (
        f'<image x="{_n(cells.x)}" y="{_n(cells.y)}" width="{_n(cells.width)}" '
        f'height="{_n(cells.height)}" preserveAspectRatio="none" '
        f'style="image-rendering:pixelated;image-rendering:crisp-edges" '
        f'href="data:image/png;base64,{data}"/>\n'
    )


def _lines(lines: Lines) -> str:
    if len(lines.segments) == 0:
        return ""
    d = "".join(
        f"M{_n(x0)} {_n(y0)}L{_n(x1)} {_n(y1)}" for x0, y0, x1, y1 in np.asarray(lines.segments)
    )
    return (
        f'<path fill="none" stroke="{hex_color(lines.color)}" stroke-width="{_n(lines.width)}" '
        f'stroke-linecap="square" d="{d}"/>\n'
    )


def _box(box: Box) -> str:
    fill = "none" if box.fill is None else hex_color(box.fill)
    edge = ""
    if box.edge is not None and box.edge_width > 0:
        edge = f' stroke="{hex_color(box.edge)}" stroke-width="{_n(box.edge_width)}"'
    return (
        f'<rect x="{_n(box.x)}" y="{_n(box.y)}" width="{_n(box.width)}" '
        f'height="{_n(box.height)}" fill="{fill}"{edge}/>\n'
    )


def _text(text: Text) -> str:
    family = MONO_FAMILY if text.mono else SANS_FAMILY
    attributes = [
        f'x="{_n(text.x)}" y="{_n(text.y)}"',
        f'font-family="{family}" font-size="{_n(text.px)}"',
        f'fill="{hex_color(text.color)}"',
    ]
    if text.anchor != "start":
        attributes.append(f'text-anchor="{text.anchor}"')
    if text.halo:
        attributes.append(
            f'stroke="#ffffff" stroke-width="{_n(text.halo)}" paint-order="stroke" '
            'stroke-linejoin="round"'
        )
    if text.vertical:
        attributes.append(f'transform="rotate(-90 {_n(text.x)} {_n(text.y)})"')
    return f"<text {' '.join(attributes)}>{escape(text.text, quote=False)}</text>\n"
