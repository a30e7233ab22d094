"""Whether a kernel's SMEM slices fit its dynamic SMEM, and that within what a block may have.

A kernel's SMEM is one dynamic block, its size the ``dynamic_shared_memory_size``
operand of its ``gpu.launch`` (an ``arith.constant``): JAX's lowering slices it at
each ``mosaic_gpu.slice_smem`` and raises "Ran out of shared memory." where a
slice ends past it; the runtime refuses a size past the per-block limit
(``smalto.hw.memory``). JAX checks the limit before its pass; a pass that grows
SMEM (staging through SMEM, ``smalto.rewrite.staging``) must keep to it, and the
checker restates both, for every module.
"""

from __future__ import annotations

import math

from jax._src.lib.mlir import ir

from smalto.basics.launch import dynamic_smem, enclosing_launch
from smalto.check.core import Checker
from smalto.hw.memory import STAGED, smem_limit

_BARRIER_BYTES = 8  # a ``!mosaic_gpu.barrier`` is an mbarrier: 8 bytes


def check_smem_budget(c: Checker) -> None:
    """Every ``slice_smem`` inside the launch's dynamic SMEM, and the launch within the
    per-block limit (where the size is a constant)."""
    limit = smem_limit(c.arch)
    for op in c.annotated:
        if op.name == "gpu.launch":
            size = dynamic_smem(op.operation)
            if size is not None and size > limit:
                c.report(
                    op,
                    f"asks for {size} bytes of dynamic SMEM per block, over the {limit} a "
                    "block may have",
                )
        elif op.name == "mosaic_gpu.slice_smem":
            launch = enclosing_launch(op.operation)
            size = dynamic_smem(launch) if launch is not None else None
            end = _slice_end(op.operation)
            if size is not None and end is not None and end > size:
                c.report(
                    op,
                    f"slices SMEM up to byte {end}, past the end of the kernel's dynamic SMEM "
                    f"({size} bytes): JAX's lowering runs out of shared memory",
                )


def _slice_end(op: ir.Operation) -> int | None:
    """The byte after the slice's last (None where its offset or element size is unknown)."""
    if "offset" not in op.attributes or not op.results:
        return None
    offset = int(ir.IntegerAttr(op.attributes["offset"]).value)
    ref = ir.MemRefType(op.results[0].type)
    element = ref.element_type
    if isinstance(element, ir.IntegerType):
        bits = ir.IntegerType(element).width
    elif isinstance(element, ir.FloatType):
        bits = ir.FloatType(element).width
    elif "barrier" in str(element):
        bits = _BARRIER_BYTES * 8
    else:
        return None
    if any(d < 0 for d in ref.shape):
        return None
    return offset + -(-math.prod(ref.shape) * bits // 8)


def staged_round_trips(module: ir.Module) -> tuple[int, int | None]:
    """How many transfers smalto staged through SMEM in ``module`` (the staging slices, one
    per round trip), and the dynamic SMEM of its launch then (None without a constant
    one, or without staging)."""
    count = 0
    size: int | None = None

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal count, size
        if op.name == "mosaic_gpu.slice_smem" and STAGED in op.attributes:
            count += 1
            launch = enclosing_launch(op)
            size = dynamic_smem(launch) if launch is not None else None
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return count, size
