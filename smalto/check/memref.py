"""Requirements of `memref` ops: scalar accesses and views of SMEM refs.

The solver's statement: ``smalto.rules.memref`` (policy: docs/rules_and_checks.md).
"""

from __future__ import annotations

import math

from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import memref

from smalto.check.core import (
    IN,
    OUT,
    Checker,
    known_divisor,
    rule,
    untiled,
)
from smalto.check.names import describe, describe_apart
from smalto.check.semantics import (
    collapse_tiling,
    transpose_tiling,
)
from smalto.check.smem import Transforms
from smalto.program.view import Op


@rule("memref.load")
def _memref_load(c: Checker, op: Op) -> None:
    untiled(c, op, 0, "a ref read by memref.load")


@rule("memref.store")
def _memref_store(c: Checker, op: Op) -> None:
    untiled(c, op, 1, "a ref written by memref.store")


@rule("memref.cast", "mosaic_gpu.get_cluster_ref")
def _same_ref(c: Checker, op: Op) -> None:
    c.same(op, [(IN, 0), (OUT, 0)], "the result is the same ref")


@rule("memref.subview")
def _subview(c: Checker, op: Op) -> None:
    c.same(op, [(IN, 0), (OUT, 0)], "a window keeps the ref's tiling")
    view = op.view
    assert isinstance(view, memref.SubViewOp)
    if any(s != 1 for s in view.static_strides):
        c.report(op, "non-unit strides cannot be lowered")
        return
    source_shape = c.value(op, IN, 0).shape
    dynamic = iter(range(1, 1 + len(view.offsets)))
    multiple: list[int] = []
    for dim, (size, offset) in enumerate(zip(view.static_sizes, view.static_offsets, strict=True)):
        offset_operand = next(dynamic) if ir.ShapedType.is_dynamic_size(offset) else None
        if ir.ShapedType.is_dynamic_size(size):
            multiple = []
            continue
        divisor = math.gcd(size, source_shape[dim])
        if offset_operand is None:
            divisor = math.gcd(divisor, offset)
        else:
            divisor = known_divisor(divisor, offset_operand, op)
        multiple.append(divisor)
    c.divides(op, IN, 0, multiple, "the window's sizes and offsets, known divisors")


@rule("memref.transpose")
def _transpose(c: Checker, op: Op) -> None:
    source, result = c.smem(op, IN, 0), c.smem(op, OUT, 0)
    if source is None or result is None:
        return
    permutation = tuple(
        ir.AffineDimExpr(e).position
        for e in ir.AffineMapAttr(op.operation.attributes["permutation"]).value.results
    )
    expected = transpose_tiling(source.tiling, permutation)
    if expected is False:
        c.report(
            op, f"permutation {permutation} mixes tiled and untiled dims of {describe(source)}"
        )
    # The swizzle is physical: a view keeps it whatever it does to the tiling.
    elif (wanted := Transforms(expected, source.swizzle)) != result:
        wanted_name, result_name = describe_apart(wanted, result)
        c.report(
            op,
            f"transposing {describe(source)} by {permutation} gives {wanted_name}, "
            f"not {result_name}",
        )


@rule("memref.expand_shape")
def _expand_shape(c: Checker, op: Op) -> None:
    c.same(op, [(IN, 0), (OUT, 0)], "an expanded ref keeps its tiling")
    attributes = op.operation.attributes
    groups = [len(ir.ArrayAttr(g)) for g in ir.ArrayAttr(attributes["reassociation"])]
    output_shape = list(ir.DenseI64ArrayAttr(attributes["static_output_shape"]))
    kept: list[int] = []
    for dim, group in zip(reversed(output_shape), reversed(groups), strict=False):
        if ir.ShapedType.is_dynamic_size(dim) or group > 1:
            break
        kept.append(dim)
    c.divides(op, IN, 0, tuple(reversed(kept)), "the trailing dims the expansion keeps")


@rule("memref.collapse_shape")
def _collapse_shape(c: Checker, op: Op) -> None:
    source, result = c.smem(op, IN, 0), c.smem(op, OUT, 0)
    if source is None or result is None:
        return
    groups = [len(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.operation.attributes["reassociation"])]
    expected = collapse_tiling(source.tiling, c.value(op, IN, 0).shape, groups)
    if expected is False:
        c.report(op, f"collapsing dims {groups} breaks the tiles of {describe(source)}")
    elif (wanted := Transforms(expected, source.swizzle)) != result:
        c.report(
            op,
            f"collapsing {describe(source)} by groups {groups} gives {describe(wanted)}, "
            f"not {describe(result)}",
        )
