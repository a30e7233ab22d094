"""MMA operands in SMEM: the exact (tiling, swizzle) pairs the MMA instructions read.

The solver's statement: ``smalto.rules.mosaic_gpu.mma_operand`` (policy:
docs/rules_and_checks.md).
"""

from __future__ import annotations

from smalto.check.core import IN, Checker
from smalto.check.names import describe
from smalto.check.semantics import transposed
from smalto.check.smem import mma_options
from smalto.program.view import Op


def mma_operand(
    c: Checker, op: Op, index: int, bitwidth: int, *, unswizzled: bool, operand: str
) -> None:
    """An SMEM operand of ``bitwidth``-bit elements has one of the MMA transforms.

    Each swizzle s (128, 64, 32 bytes) goes with the tile (8, 8·s/bitwidth),
    transposed for a transposed ref; ``unswizzled`` (SMEM -> TMEM copies) also
    allows the 16-byte tile with no swizzle. A tile-only (unswizzled) ref does
    not fit the other MMAs in jax 0.12.0.1.
    """
    layout = c.smem(op, IN, index)
    if layout is None or not bitwidth:
        return
    value = c.value(op, IN, index)
    is_transposed = transposed(value)
    options = mma_options(value.shape, bitwidth, is_transposed, unswizzled)
    if layout in options:
        return
    shape = f"{'transposed ' if is_transposed else ''}{bitwidth}-bit operand of shape {value.shape}"
    if not options:
        c.report(op, f"{operand} (operand #{index}): no MMA tiling divides a {shape}")
        return
    c.report(
        op,
        f"{operand} (operand #{index}) is {describe(layout)}; an MMA reads a {shape} "
        f"only as one of: {'; '.join(describe(o) for o in options)}",
    )
