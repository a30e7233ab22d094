"""Rules for `memref` views of SMEM refs: they keep, slice or permute the tiling.

Restated by the checker in ``smalto.check.memref`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

import math

from jax._src.lib.mlir import ir

from smalto.constraints.language import Collapse, Divides, Equal, Role, Site, Transpose, Var
from smalto.hw import layouts as hl
from smalto.hw.strides import row_major
from smalto.program.view import Op
from smalto.rules.attributes import DYNAMIC
from smalto.rules.context import RuleContext, rule


@rule("memref.subview")
def subview(ctx: RuleContext, op: Op) -> None:
    """A window keeps the tiling, which must divide its sizes and (known) offsets."""
    attributes = op.operation.attributes
    strides = ctx.ints(attributes["static_strides"])
    if strides.count(1) != len(strides):
        raise NotImplementedError(f"`memref.subview` with non-unit strides at {op.where}")
    op_id, operands = op.id, op.operands
    source = ctx.ref(op, 0)
    result = ctx.new_var(Site(op_id, Role.RESULT, 0))
    source_shape = ctx.program.values[operands[0]].shape
    # Dynamic offsets are operands 1.. of the subview, in order (dynamic sizes
    # and strides follow them, and are never reached here).
    dynamic = iter(operands[1:])
    sizes, offsets = ctx.ints(attributes["static_sizes"]), ctx.ints(attributes["static_offsets"])
    multiple: list[int] = []
    for dim, (size, offset) in enumerate(zip(sizes, offsets, strict=True)):
        offset_value = next(dynamic) if offset == DYNAMIC else offset
        if size == DYNAMIC:
            multiple = []  # dims up to a dynamic size cannot be tiled
            continue
        divisor = math.gcd(size, source_shape[dim])
        if offset == DYNAMIC:
            divisor = ctx.divisibility.known_divisor(divisor, offset_value)
        else:
            divisor = math.gcd(divisor, offset_value)
        multiple.append(divisor)
    source_expr = Var(source)  # shared: records are never changed
    ctx.require(
        Divides(source_expr, tuple(multiple), op_id), Equal(source_expr, Var(result), op_id)
    )
    ctx.add_sites(source, Site(op_id, Role.OPERAND, 0))
    # The result's site was registered with its new variable above.


@rule("memref.cast")
def cast(ctx: RuleContext, op: Op) -> None:
    """A cast is the same ref."""
    ctx.add_sites(ctx.ref(op, 0), ctx.operand(op, 0), ctx.result(op, 0))


@rule("memref.transpose")
def transpose(ctx: RuleContext, op: Op) -> None:
    """A transposed ref's tiling is the source's, permuted (stated both ways)."""
    source = ctx.ref(op, 0)
    ctx.add_sites(source, ctx.operand(op, 0))
    dest = ctx.new_var(ctx.result(op, 0))
    permutation = tuple(
        ir.AffineDimExpr(e).position
        for e in ir.AffineMapAttr(op.operation.attributes["permutation"]).value.results
    )
    inverse = tuple(permutation.index(i) for i in range(len(permutation)))
    ctx.require(
        Equal(Transpose(Var(source), permutation), Var(dest), op.id),
        Equal(Var(source), Transpose(Var(dest), inverse), op.id),
    )


@rule("memref.expand_shape")
def expand_shape(ctx: RuleContext, op: Op) -> None:
    """Splitting dims keeps the tiling of the trailing dims that are not split."""
    source_value = ctx.program.values[op.operands[0]]
    if source_value.strides is not None and hl.is_transposed(source_value.strides):
        raise NotImplementedError(f"`memref.expand_shape` of a transposed ref at {op.where}")
    source = ctx.ref(op, 0)
    ctx.add_sites(source, ctx.operand(op, 0))
    dest = ctx.new_var(ctx.result(op, 0))
    groups = [len(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.operation.attributes["reassociation"])]
    output_shape = ctx.ints(op.operation.attributes["static_output_shape"])
    trailing: list[int] = []
    for dim, group in zip(reversed(output_shape), reversed(groups), strict=False):
        if dim == DYNAMIC or group > 1:
            break
        trailing.append(dim)
    ctx.require(
        Divides(Var(source), tuple(reversed(trailing)), op.id), Equal(Var(source), Var(dest), op.id)
    )


@rule("memref.collapse_shape")
def collapse_shape(ctx: RuleContext, op: Op) -> None:
    """Merging contiguous dims: the tiling must survive the merge."""
    groups = tuple(
        len(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.operation.attributes["reassociation"])
    )
    if not groups:
        raise NotImplementedError(f"`memref.collapse_shape` to rank 0 at {op.where}")
    source_value = ctx.program.values[op.operands[0]]
    contiguous = row_major(source_value.shape)
    if source_value.strides != contiguous:
        raise NotImplementedError(f"`memref.collapse_shape` of a non-contiguous ref at {op.where}")
    source = ctx.ref(op, 0)
    ctx.add_sites(source, ctx.operand(op, 0))
    dest = ctx.new_var(ctx.result(op, 0))
    ctx.require(Equal(Var(dest), Collapse(Var(source), source_value.shape, groups), op.id))


@rule("memref.load", "memref.store")
def scalar_access(ctx: RuleContext, op: Op) -> None:
    """Scalar loads/stores (barrier phases, flags) use an untiled ref."""
    index = 0 if op.name == "memref.load" else 1
    shape = ctx.program.values[op.operands[index]].shape
    if shape and shape != (1,):
        raise NotImplementedError(f"`{op.name}` of a non-scalar SMEM ref {shape} at {op.where}")
    var = ctx.new_var(ctx.operand(op, index))
    ctx.fix(var, hl.UNTILED, op, "the ref")
