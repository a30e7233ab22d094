"""The colours of the pictures: lanes, faded cells, ramps; colours as RGB floats in [0, 1]."""

from __future__ import annotations

import colorsys
import functools

import numpy as np

Color = str | tuple[float, float, float]  # "#rrggbb", a name below, or RGB floats

_NAMED = {"black": "#000000", "white": "#ffffff", "red": "#ff0000", "none": "#ffffff"}

FADED = 0.82  # how far cells outside a highlight fade towards white
SHARED_COLOR = "#c8c8c8"  # a value every thread holds (a splat)
HIGHLIGHT_COLOR = "#d00000"


def rgb(color: Color) -> tuple[float, float, float]:
    """``color`` as RGB floats: ``#rrggbb``, ``#rgb``, ``black``/``white``, or a tuple."""
    if isinstance(color, tuple):
        r, g, b = (float(c) for c in color[:3])
        return r, g, b
    text = _NAMED.get(color.lower(), color)
    digits = text.removeprefix("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    if len(digits) != 6:
        raise ValueError(f"not a colour: {color!r}")
    value = int(digits, 16)
    return ((value >> 16) & 255) / 255, ((value >> 8) & 255) / 255, (value & 255) / 255


def hex_color(color: Color) -> str:
    """``#rrggbb``: how SVG writes a colour."""
    return "#" + "".join(f"{round(min(max(c, 0.0), 1.0) * 255):02x}" for c in rgb(color))


@functools.cache
def lane_color(lane: int, lanes: int = 32) -> tuple[float, float, float]:
    """Lane ``lane`` of ``lanes``: the hue goes once round the colour wheel over the
    lanes, and even lanes are deeper than odd ones, so neighbours stand apart."""
    hue = (lane % lanes) / lanes
    lightness, floor = (0.56, 0.30) if lane % 2 == 0 else (0.78, 0.55)
    while True:  # blue and violet are dark at a given lightness: raise it for black text
        r, g, b = colorsys.hls_to_rgb(hue, lightness, 0.80)
        if _luminance(r, g, b) >= floor or lightness >= 0.9:
            return float(r), float(g), float(b)
        lightness += 0.02


def _luminance(r: float, g: float, b: float) -> float:
    """Relative luminance (WCAG): how light a colour looks."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def lane_colors(lanes: np.ndarray, count: int = 32) -> np.ndarray:
    """``lane_color`` of every entry of an int array: (..., 3)."""
    table = np.array([lane_color(i, count) for i in range(count)])
    return table[np.asarray(lanes) % count]


def faded(colors: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``colors`` with the cells outside ``keep`` faded towards white."""
    out = colors.copy()
    out[~keep] = out[~keep] + (1.0 - out[~keep]) * FADED
    return out


def ramp(stops: tuple[str, ...], where: float) -> tuple[float, float, float]:
    """The colour at ``where`` (0 to 1) of a ramp through ``stops``, evenly spaced."""
    points = np.array([rgb(s) for s in stops])
    position = min(max(where, 0.0), 1.0) * (len(stops) - 1)
    low = min(int(position), len(stops) - 2)
    k = position - low
    r, g, b = points[low] * (1 - k) + points[low + 1] * k
    return float(r), float(g), float(b)
