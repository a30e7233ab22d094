"""Requirements of `vector` ops: broadcasts, reductions, reshapes, slices.

The solver's statement: ``smalto.rules.vector`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

from jax.experimental.mosaic.gpu import fragmented_array as fa

from smalto.check.core import (
    IN,
    OUT,
    Checker,
    ints,
    rule,
)
from smalto.check.names import describe
from smalto.check.semantics import (
    reduce_layout,
    reshape_layout,
)
from smalto.hw import layouts as hl
from smalto.program.view import Kind, Op


@rule("vector.broadcast")
def _vector_broadcast(c: Checker, op: Op) -> None:
    c.expect(op, OUT, 0, hl.splat(c.value(op, OUT, 0).shape), "a broadcast scalar")


@rule("vector.multi_reduction")
def _multi_reduction(c: Checker, op: Op) -> None:
    # JAX's lowering reduces tiled inputs only ("Unsupported layout").
    c.not_kinds(op, IN, 0, splat=True, strided=True)
    c.same(op, [(IN, 1), (OUT, 0)], "the accumulator and the result are one value")
    source = c.reg(op, IN, 0)
    result = c.reg(op, OUT, 0)
    if source is None or result is None:
        return
    dims = ints(op.operation.attributes["reduction_dims"])
    rank = len(c.value(op, IN, 0).shape)
    layout = source.layout
    tiled = len(layout.base_tile_shape) if isinstance(layout, fa.TiledLayout) else rank
    if tiled != rank and any(d >= rank - tiled for d in dims):
        # JAX's lowering of this op looks the reduced dim up in the tiling by
        # its index in the vector: with a tiling of fewer dims a tiled dim is
        # misread or fails; untiled dims reduce within each thread.
        c.report(
            op,
            f"the source is {describe(source)}, a tiling of {tiled} of its {rank} dims; the "
            "lowering reduces such a source only over its untiled dims, not over "
            f"{tuple(dims)}",
        )
    reduced = reduce_layout(source, dims, rank, keep=False)
    if reduced is None:
        c.report(op, f"cannot reduce {describe(source)} over dims {dims}")
    elif reduced != result:
        c.report(
            op,
            f"reducing {describe(source)} over dims {dims} gives {describe(reduced)}, "
            f"not the result's {describe(result)}",
        )


@rule("vector.shape_cast")
def _shape_cast(c: Checker, op: Op) -> None:
    source, result = c.reg(op, IN, 0), c.reg(op, OUT, 0)
    if source is None or result is None:
        return
    src_shape, dst_shape = c.value(op, IN, 0).shape, c.value(op, OUT, 0).shape
    for a, b, a_shape, b_shape in (
        (source, result, src_shape, dst_shape),
        (result, source, dst_shape, src_shape),
    ):
        reshaped = reshape_layout(a, a_shape, b_shape)
        if reshaped is None:
            c.report(op, f"reshaping {describe(a)} from {a_shape} to {b_shape} moves elements")
            return
        if reshaped != b:
            c.report(
                op,
                f"reshaping {describe(a)} from {a_shape} to {b_shape} gives {describe(reshaped)}, "
                f"not {describe(b)}",
            )
            return


def _unit_strides(c: Checker, op: Op) -> bool:
    strides = ints(op.operation.attributes["strides"])
    if any(s != 1 for s in strides):
        c.report(op, f"non-unit strides {strides} cannot be lowered")
        return False
    return True


@rule("vector.extract_strided_slice")
def _extract_strided_slice(c: Checker, op: Op) -> None:
    if not _unit_strides(c, op):
        return
    c.same(op, [(IN, 0), (OUT, 0)], "a slice keeps the source's layout")
    c.not_kinds(op, OUT, 0, splat=True, strided=True)
    offsets = ints(op.operation.attributes["offsets"])
    c.divides(op, IN, 0, offsets, "the slice offsets")


@rule("vector.extract")
def _extract(c: Checker, op: Op) -> None:
    source_shape = c.value(op, IN, 0).shape
    if c.value(op, OUT, 0).kind != Kind.VECTOR:
        c.expect(op, IN, 0, hl.splat(source_shape), "a vector a scalar is extracted from")
        return
    c.same(op, [(IN, 0), (OUT, 0)], "a sub-vector keeps the source's layout")
    c.not_kinds(op, OUT, 0, splat=True, strided=True)
    c.divides(op, IN, 0, source_shape, "the source shape")
    c.divides(op, OUT, 0, c.value(op, OUT, 0).shape, "the result shape")


@rule("vector.insert_strided_slice")
def _insert_strided_slice(c: Checker, op: Op) -> None:
    if not _unit_strides(c, op):
        return
    c.same(op, [(IN, 0), (IN, 1), (OUT, 0)], "an inserted slice keeps the layout")
    c.not_kinds(op, IN, 1, splat=True, strided=True)
    c.divides(op, IN, 1, ints(op.operation.attributes["offsets"]), "the slice offsets")
