"""MMA operands in SMEM: the tilings the MMA instructions read."""

from __future__ import annotations

from smalto.check.core import IN, Checker
from smalto.check.semantics import swap, transposed
from smalto.program import Op


def mma_tiling(
    c: Checker, op: Op, index: int, bitwidth: int, *, unswizzled: bool, operand: str
) -> None:
    layout = c.smem(op, IN, index)
    if layout is None:
        return
    tiling = layout.tiling
    if transposed(c.value(op, IN, index)):
        tiling = swap(tiling)
    swizzles = (16, 32, 64, 128) if unswizzled else (32, 64, 128)
    valid = {(8, 8 * s // bitwidth) for s in swizzles}
    if tiling not in valid:
        c.report(
            op,
            f"{operand} (operand #{index}) is tiled {layout.tiling}; an MMA operand of "
            f"{bitwidth}-bit elements needs one of {sorted(valid)}"
            + (" (logically, it is transposed)" if tiling != layout.tiling else ""),
        )
