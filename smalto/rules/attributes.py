"""Reading op attributes with few binding calls.

Rules read a handful of attributes per op; through the bindings, iterating an
array attribute costs several times more than indexing it, so these helpers
index.
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.program.view import Program

# The marker of a dynamic size, offset or stride in static arrays (the same
# value for all three); comparing with it spares a binding call per entry.
DYNAMIC = ir.ShapedType.get_dynamic_size()


def ints(attr: ir.Attribute) -> tuple[int, ...]:
    """The integers of a dense i64/i32 array attribute (or an ``ArrayAttr`` of integers)."""
    if isinstance(attr, (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr)):
        return tuple([attr[i] for i in range(len(attr))])
    array = ir.ArrayAttr(attr)
    return tuple([ir.IntegerAttr(array[i]).value for i in range(len(array))])


def strict_cast(program: Program, op_id: int) -> bool:
    """Whether op ``op_id`` is a ``strict`` layout cast.

    Its own relayout and the one from its operand's producer into it (both
    name the cast as their origin) stay strict in the widened search: the
    user's word that no relayout happens there, although the cast's lowering
    would convert (JAX's inference enforces it, not its lowering).
    """
    op = program.ops[op_id]
    if op.name != "mosaic_gpu.layout_cast":
        return False
    attrs = op.operation.attributes
    return "strict" in attrs and bool(ir.BoolAttr(attrs["strict"]).value)
