"""How the checker's messages name layouts: as ``smalto infer`` and its diagnosis do
(``smalto.hw.names.describe_value``: ``WGMMA``, ``strided ×2``, ``splat``, ``TMEM
half_lane``, ``tiled 8×64 + swizzle 128``), never a repr or a page of tiling.

A splat or strided layout is made for one shape, which its name leaves out; where
that shape is what is wrong (two splats of different shapes, a layout of another
shape than its value's), ``with_shape`` says it too: ``splat of 128x64``.
"""

from __future__ import annotations

from smalto.check.semantics import Layout
from smalto.check.smem import Transforms
from smalto.hw.names import describe_value
from smalto.hw.values import Reg, Tmem


def describe(layout: Layout | None, *, with_shape: bool = False) -> str:
    """``layout`` by its name in smalto's messages (``nothing`` for no layout)."""
    match layout:
        case None:
            return "nothing"
        case Reg():
            name = describe_value(layout)
            shape = getattr(layout.layout, "shape", None)
            if with_shape and (layout.is_splat or layout.is_strided) and shape is not None:
                return f"{name} of {'x'.join(map(str, shape))}"
            return name
        case Tmem():
            return describe_value(layout)  # TMEM default, TMEM half_lane, ...
        case Transforms(tiling=tiling, swizzle=swizzle):
            # As ``smem_name`` words them; the checker keeps whatever swizzle is written.
            tiled = "untiled" if tiling is None else "tiled " + "×".join(map(str, tiling))
            if swizzle is None:
                return tiled if tiling is None else f"{tiled}, no swizzle"
            return f"{tiled} + swizzle {swizzle}"
    return str(layout)


def describe_apart(first: Layout | None, second: Layout | None) -> tuple[str, str]:
    """Both layouts by name, with their shapes where the names alone are the same (two
    splats of different shapes)."""
    a, b = describe(first), describe(second)
    if a == b and first != second:
        return describe(first, with_shape=True), describe(second, with_shape=True)
    return a, b
