"""A scene painted into a PNG: cells, lines and boxes straight into a numpy image, text
with Pillow (FreeType, antialiased). Nothing is antialiased but text: every other mark
is axis-aligned, so it is painted to whole pixels."""

from __future__ import annotations

import io
import math

import numpy as np
from PIL import Image, ImageDraw

from smalto.draw.colors import Color, rgb
from smalto.draw.fonts import font
from smalto.draw.scene import Box, Cells, Lines, Scene, Text


def png(scene: Scene, scale: float = 1.0) -> bytes:
    """The scene as PNG bytes, every length multiplied by ``scale``."""
    width, height = math.ceil(scene.width * scale), math.ceil(scene.height * scale)
    canvas = np.full((height, width, 3), 255, dtype=np.uint8)
    texts: list[Text] = []
    for item in scene.items:
        match item:
            case Cells():
                _cells(canvas, item, scale)
            case Lines():
                _lines(canvas, item, scale)
            case Box():
                _box(canvas, item, scale)
            case Text():
                texts.append(item)
    image = Image.fromarray(canvas, "RGB")
    draw = ImageDraw.Draw(image)
    for text in texts:
        _text(image, draw, text, scale)
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=6)
    return buffer.getvalue()


def _byte_color(color: Color) -> np.ndarray:
    return np.round(np.array(rgb(color)) * 255).astype(np.uint8)


def _cells(canvas: np.ndarray, cells: Cells, scale: float) -> None:
    xs, ys = cells.col_edges(scale), cells.row_edges(scale)
    colors = np.round(np.clip(cells.colors, 0, 1) * 255).astype(np.uint8)
    widths, heights = np.diff(xs), np.diff(ys)
    # Cells thinner than a pixel take none; the picture's builder keeps them at 1+.
    block = np.repeat(np.repeat(colors, heights, axis=0), widths, axis=1)
    canvas[ys[0] : ys[0] + block.shape[0], xs[0] : xs[0] + block.shape[1]] = block


def _lines(canvas: np.ndarray, lines: Lines, scale: float) -> None:
    if len(lines.segments) == 0:
        return
    color = _byte_color(lines.color)
    thick = max(1, round(lines.width * scale))
    before = thick // 2
    height, width = canvas.shape[:2]
    for x0, y0, x1, y1 in np.round(np.asarray(lines.segments) * scale).astype(int):
        if x0 == x1:  # vertical: the line's width straddles x
            left, right = x0 - before, x0 - before + thick
            top, bottom = min(y0, y1) - before, max(y0, y1) - before + thick
        else:
            top, bottom = y0 - before, y0 - before + thick
            left, right = min(x0, x1) - before, max(x0, x1) - before + thick
        canvas[max(top, 0) : min(bottom, height), max(left, 0) : min(right, width)] = color


def _box(canvas: np.ndarray, box: Box, scale: float) -> None:
    left, top = round(box.x * scale), round(box.y * scale)
    right, bottom = round((box.x + box.width) * scale), round((box.y + box.height) * scale)
    if box.fill is not None:
        canvas[top:bottom, left:right] = _byte_color(box.fill)
    if box.edge is not None and box.edge_width > 0:
        edge = _byte_color(box.edge)
        t = max(1, round(box.edge_width * scale))
        canvas[top : top + t, left:right] = edge
        canvas[bottom - t : bottom, left:right] = edge
        canvas[top:bottom, left : left + t] = edge
        canvas[top:bottom, right - t : right] = edge


_ANCHORS = {"start": "ls", "middle": "ms", "end": "rs"}


def _text(image: Image.Image, draw: ImageDraw.ImageDraw, text: Text, scale: float) -> None:
    face = font(text.px * scale, text.mono)
    fill = tuple(int(c) for c in _byte_color(text.color))
    halo = round(text.halo * scale / 2)  # Pillow's stroke goes out from the glyph's edge
    if not text.vertical:
        draw.text(
            (text.x * scale, text.y * scale),
            text.text,
            font=face,
            fill=fill,
            anchor=_ANCHORS[text.anchor],
            stroke_width=halo,
            stroke_fill=(255, 255, 255) if halo else None,
        )
        return
    # Turned a quarter left: drawn on its own, turned, pasted through its own mask.
    left, top, right, bottom = face.getbbox(text.text, anchor="ls")
    # int: FreeType's boxes are whole pixels, though Pillow's stubs type them float.
    mask = Image.new("L", (int(right - left + 2), int(bottom - top + 2)), 0)
    ImageDraw.Draw(mask).text((1 - left, 1 - top), text.text, font=face, fill=255, anchor="ls")
    turned = mask.transpose(Image.Transpose.ROTATE_90)
    # (x, y): the baseline's middle after turning, the text running upwards.
    x = round(text.x * scale + top - 1)
    y = round(text.y * scale - turned.height / 2)
    image.paste(Image.new("RGB", turned.size, fill), (x, y), turned)
