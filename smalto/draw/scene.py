"""A picture as a list of things to paint, in pixels (origin top left, y down).

``render`` lays panels out into a ``Scene``; ``png`` and ``svg`` paint it. The
pictures need few kinds of marks: grids of coloured cells, axis-aligned lines,
boxes and text; so a scene holds only those, and each painter is a page of code
that imports nothing heavy (PIL for PNG, nothing for SVG). Tests read a scene
directly: its text, sizes and positions are the picture's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from smalto.draw.colors import Color


@dataclass(frozen=True)
class Cells:
    """A grid of ``colors`` (rows, cols, 3) filling the box at (x, y) of width x height."""

    x: float
    y: float
    width: float
    height: float
    colors: np.ndarray

    def col_edges(self, scale: float = 1.0) -> np.ndarray:
        """Pixel x of each column's left edge, and of the grid's right edge, rounded."""
        cols = self.colors.shape[1]
        return np.round((self.x + np.arange(cols + 1) * self.width / cols) * scale).astype(int)

    def row_edges(self, scale: float = 1.0) -> np.ndarray:
        rows = self.colors.shape[0]
        return np.round((self.y + np.arange(rows + 1) * self.height / rows) * scale).astype(int)


@dataclass(frozen=True)
class Lines:
    """Axis-aligned lines: ``segments`` (n, 4) of x0, y0, x1, y1 (x0 == x1 or y0 == y1)."""

    segments: np.ndarray
    color: Color
    width: float


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float
    fill: Color | None
    edge: Color | None = None
    edge_width: float = 0.0


@dataclass(frozen=True)
class Text:
    """One line of text; ``y`` is its baseline, ``anchor`` says what ``x`` is: its start,
    middle or end. ``vertical``: read bottom to top (turned a quarter left)."""

    x: float
    y: float
    text: str
    px: float  # em size
    mono: bool = False
    anchor: str = "start"  # start, middle, end
    color: Color = "black"
    halo: float = 0.0  # width of a white outline around the glyphs (labels on colour maps)
    vertical: bool = False


@dataclass
class Scene:
    width: int
    height: int
    items: list[Cells | Lines | Box | Text] = field(default_factory=list)

    @property
    def texts(self) -> list[Text]:
        return [item for item in self.items if isinstance(item, Text)]
