"""Rules for `vector`: broadcasts from scalars, reductions, reshapes, slices.

Restated by the checker in ``smalto.check.vector`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from jax._src.lib.mlir import ir

from smalto.constraints.language import Divides, Equal, FullyTiled, LayoutKind, Reduce, Reshape, Var
from smalto.program.view import Kind, Op
from smalto.rules.context import RuleContext, rule

_NOT_SPLAT_OR_STRIDED = (LayoutKind.SPLAT, LayoutKind.STRIDED)


def _unit_strides(ctx: RuleContext, op: Op) -> None:
    if any(s != 1 for s in ctx.ints(op.operation.attributes["strides"])):
        raise NotImplementedError(f"`{op.name}` with non-unit strides (at {op.where})")


@rule("vector.broadcast")
def broadcast(ctx: RuleContext, op: Op) -> None:
    """A scalar broadcast to a vector is a splat."""
    if ctx.program.values[op.operands[0]].kind == Kind.VECTOR or isinstance(
        ctx.program.values[op.operands[0]].type, ir.ShapedType
    ):
        raise NotImplementedError(
            f"`vector.broadcast` of a vector (at {op.where}); use `mosaic_gpu.broadcast_in_dim`"
        )
    site = ctx.result(op, 0)
    var = ctx.new_var(site)
    ctx.fix(var, ctx.splat(ctx.value(site).shape), op, "the broadcast result")


@rule("vector.reduction")
def reduction(ctx: RuleContext, op: Op) -> None:
    """A full reduction to a scalar: any layout of the input will do."""
    ctx.new_var(ctx.operand(op, 0))


@rule("vector.multi_reduction")
def multi_reduction(ctx: RuleContext, op: Op) -> None:
    """The result's layout is the input's, reduced; strided inputs cannot reduce.

    Nor splat ones, in JAX's lowering ("Unsupported layout"), though JAX's
    rules allow them: the input is tiled (a splat producer converts at the use).
    """
    source = ctx.new_var(ctx.operand(op, 0))
    out = ctx.new_var(ctx.operand(op, 1), ctx.result(op, 0), key=ctx.result(op, 0))
    rank = len(ctx.program.values[op.operands[0]].shape)
    dims = tuple(sorted(ctx.ints(op.operation.attributes["reduction_dims"])))
    ctx.not_of_kind(source, op, LayoutKind.STRIDED, LayoutKind.SPLAT)
    ctx.require(Equal(Var(out), Reduce(Var(source), dims, rank), op.id))
    ctx.require(FullyTiled(Var(source), rank, op.id, dims))


@rule("vector.shape_cast")
def shape_cast(ctx: RuleContext, op: Op) -> None:
    """Reshapes keep the layout where that moves no element (stated both ways)."""
    source = ctx.new_var(ctx.operand(op, 0))
    result = ctx.new_var(ctx.result(op, 0))
    in_shape = ctx.program.values[op.operands[0]].shape
    out_shape = ctx.program.values[op.results[0]].shape
    ctx.require(
        Equal(Var(result), Reshape(Var(source), in_shape, out_shape), op.id),
        Equal(Var(source), Reshape(Var(result), out_shape, in_shape), op.id),
    )


@rule("vector.extract_strided_slice")
def extract_strided_slice(ctx: RuleContext, op: Op) -> None:
    """A slice keeps a tiled layout; its offsets must fall on tile boundaries."""
    _unit_strides(ctx, op)
    source = ctx.new_var(ctx.operand(op, 0))
    result = ctx.new_var(ctx.result(op, 0))
    offsets = ctx.ints(op.operation.attributes["offsets"])
    ctx.require(Divides(Var(source), offsets, op.id), Equal(Var(source), Var(result), op.id))
    ctx.not_of_kind(result, op, *_NOT_SPLAT_OR_STRIDED)


@rule("vector.extract")
def extract(ctx: RuleContext, op: Op) -> None:
    """Extracting a scalar needs a splat; a sub-vector keeps a tiled layout."""
    source = ctx.new_var(ctx.operand(op, 0))
    source_shape = ctx.program.values[op.operands[0]].shape
    result_value = ctx.program.values[op.results[0]]
    if result_value.kind != Kind.VECTOR:
        ctx.fix(source, ctx.splat(source_shape), op, "the vector a scalar is extracted from")
        return
    if len(op.operands) > 1:
        raise NotImplementedError(
            f"`vector.extract` of a sub-vector at a dynamic position (at {op.where})"
        )
    result = ctx.new_var(ctx.result(op, 0))
    ctx.require(
        Equal(Var(source), Var(result), op.id),
        Divides(Var(source), source_shape, op.id),
        Divides(Var(result), result_value.shape, op.id),
    )
    ctx.not_of_kind(result, op, *_NOT_SPLAT_OR_STRIDED)


@rule("vector.insert_strided_slice")
def insert_strided_slice(ctx: RuleContext, op: Op) -> None:
    """Inserting a slice: all three share a tiled layout; offsets on tile boundaries."""
    _unit_strides(ctx, op)
    src = ctx.new_var(ctx.operand(op, 0))
    dst = ctx.new_var(ctx.operand(op, 1))
    result = ctx.new_var(ctx.result(op, 0))
    offsets = ctx.ints(op.operation.attributes["offsets"])
    ctx.require(
        Divides(Var(dst), offsets, op.id),
        Equal(Var(dst), Var(src), op.id),
        Equal(Var(dst), Var(result), op.id),
        Equal(Var(src), Var(result), op.id),
    )
    ctx.not_of_kind(dst, op, *_NOT_SPLAT_OR_STRIDED)
