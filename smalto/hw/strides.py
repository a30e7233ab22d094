"""The strides of a dense row-major ref: what a ref with no layout of its own has, and
what every other stride is told apart from (a column, a window, a transposed view)."""

from __future__ import annotations

import math


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides, in elements, of a dense row-major ref of this shape."""
    return tuple(math.prod(shape[d + 1 :]) for d in range(len(shape)))
