# ruff: noqa: E501  (MLIR op lines read best whole)
"""Rank-3 partial reductions through the unit-dim rewrite reduce the right axes.

A (128, 128) tile expanded by a unit dim (``x[:, None, :]`` and friends, a
``broadcast_in_dim``) and reduced over the unit dim and one kept dim: the
rewrite reduces the (128, 128) tile over that kept dim alone
(``smalto.rewrite.patterns.narrow_reduction``). Random floats tell row sums
from column sums only through rounding (the two sums of a random tile differ
by an ulp or so at best); here the tile holds ``x[i, j] = 128 i - j``, whose
row and column sums and maxima differ everywhere and are exact in f32, and
each result is compared with numpy's reduction of the same tile over the
expected axis: both through the rewrite itself (``smalto.rewrite``) and
through inference, which rewrites a module that has no layouts as written
(``smalto.rescue.unit_dims``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any
from unittest import mock

import numpy as np
import pytest
from evaluator import Evaluator
from evaluator_ops import shape_and_dtype
from jax._src.lib.mlir import ir
from mlir_snippets import func_module, parse

import smalto
from smalto.rewrite import RewrittenOp, patterns, rewrite_unit_dims
from smalto.rewrite.webs import Web, i64_array

BID = "mosaic_gpu.broadcast_in_dim"
SMEM = "#gpu.address_space<workgroup>"
TILE = (128, 128)


class Counting(Evaluator):
    """The evaluator with every buffer filled by ``counting`` (``x[i, j] = 128 i - j`` for
    the tile), the same in every run."""

    def fresh(self, op: ir.Operation | ir.Value, ty: ir.Type, index: int = 0) -> Any:
        made = self._made.setdefault(op, [])
        if index < len(made):
            return made[index]
        shape, dtype = shape_and_dtype(ty)
        buffer = counting(shape).astype(dtype)
        self.buffers.append(buffer)
        made.append(buffer)
        return buffer


def counting(shape: tuple[int, ...]) -> np.ndarray:
    """Up by the row-major stride along every dim but the minor one, down by 1 along it
    (``x[i, j] = 128 i - j`` for the tile): sums and maxima along any two axes differ."""
    indices = np.indices(shape)
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    value = sum(indices[d] * strides[d] for d in range(len(shape) - 1))
    return value - indices[-1] if shape else np.zeros(())


def tile() -> np.ndarray:
    return counting(TILE).astype(np.float32)


# (the expanded shape, the dims of the tile in it, the dims reduced, the tile's axis that
# those reduce): every place of the unit dim, each kept dim reduced with it.
CASES = [
    ((128, 1, 128), (0, 2), (1, 2), 1),  # the case (there 64x1x64): row sums
    ((128, 1, 128), (0, 2), (0, 1), 0),
    ((1, 128, 128), (1, 2), (0, 1), 0),
    ((1, 128, 128), (1, 2), (0, 2), 1),
    ((128, 128, 1), (0, 1), (1, 2), 1),
    ((128, 128, 1), (0, 1), (0, 2), 0),
]
KINDS = {"add": ("0.0", np.sum), "maximumf": ("0xFF800000", np.max)}


def module_text(
    expanded: tuple[int, ...], dims: tuple[int, int], reduced: tuple[int, int], kind: str
) -> str:
    """``y = x_ref[...][<expanded>] * 2``, reduced over ``reduced`` (``jnp.sum(y,
    axis=reduced)``) into an SMEM ref, and broadcast along its unit dim into a GMEM ref,
    as Pallas lowers them."""
    shape = "x".join(map(str, expanded))
    wide = "x".join(str(2 if d == 1 else d) for d in expanded)
    sums = f"memref<128xf32, {SMEM}>"
    identity, _ = KINDS[kind]
    return func_module(
        f"""
%x = "mosaic_gpu.vector_load"(%x_ref) : (memref<128x128xf32>) -> vector<128x128xf32>
%e = {BID}(%x : vector<128x128xf32>) <broadcast_dimensions = [{dims[0]}, {dims[1]}]> -> vector<{shape}xf32>
%two = arith.constant dense<2.0> : vector<{shape}xf32>
%y = arith.mulf %e, %two : vector<{shape}xf32>
%init = arith.constant {identity} : f32
%acc = vector.broadcast %init : f32 to vector<128xf32>
%s = vector.multi_reduction <{kind}>, %y, %acc [{reduced[0]}, {reduced[1]}] : vector<{shape}xf32> to vector<128xf32>
%out = "mosaic_gpu.slice_smem"() <{{offset = 0 : i32}}> : () -> {sums}
"mosaic_gpu.vector_store"(%s, %out) : (vector<128xf32>, {sums}) -> ()
%w = {BID}(%y : vector<{shape}xf32>) <broadcast_dimensions = [0, 1, 2]> -> vector<{wide}xf32>
"mosaic_gpu.vector_store"(%w, %wide) : (vector<{wide}xf32>, memref<{wide}xf32>) -> ()
""",
        [("x_ref", "memref<128x128xf32>"), ("wide", f"memref<{wide}xf32>")],
    )


def stored(module: ir.Module) -> np.ndarray:
    """What the module stores into the SMEM ref of the reduction (the one of 128 elements)."""
    with module.context:
        buffers = Counting(module).run()
    (sums,) = [b for b in buffers if b.shape == (128,)]
    return sums


def expected(axis: int, kind: str) -> np.ndarray:
    _, reduce = KINDS[kind]
    return reduce(tile() * 2, axis=axis).astype(np.float32)


def _id(case: tuple[Any, ...]) -> str:
    expanded, _, reduced, _ = case
    return f"{'x'.join(map(str, expanded))} over {list(reduced)}"


def test_the_tile_tells_the_axes_apart() -> None:
    """Not hollow: row and column sums (and maxima) of the tile differ at every element."""
    for kind in KINDS:
        assert (expected(0, kind) != expected(1, kind)).all()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_the_rewrite_reduces_the_tile_over_the_kept_dim(case: tuple[Any, ...], kind: str) -> None:
    expanded, dims, reduced, axis = case
    before = parse(module_text(expanded, dims, reduced, kind))
    after = parse(str(before), before.context)
    with after.context, ir.Location.unknown():
        records = rewrite_unit_dims(after)
    assert ("vector.multi_reduction", "now") in [(r.op, r.change.split()[0]) for r in records]
    assert after.operation.verify()
    np.testing.assert_array_equal(stored(before), expected(axis, kind))
    np.testing.assert_array_equal(stored(after), expected(axis, kind))


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_inference_reduces_the_right_axes(case: tuple[Any, ...]) -> None:
    """Through ``infer_layout``: where the module as written has no layouts it is
    rewritten (and says so); either way it stores the sums over the expected axis."""
    expanded, dims, reduced, axis = case
    module = parse(module_text(expanded, dims, reduced, "add"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        smalto.infer_layout(module)
    rewritten = any(issubclass(w.category, smalto.UnitDimRewriteWarning) for w in caught)
    if expanded == (128, 1, 128):
        assert rewritten, "the issue's case infers only once rewritten"
    np.testing.assert_array_equal(stored(module), expected(axis, "add"))


def _narrowed_to_the_other_kept_dim(op: ir.Operation, web: Web) -> RewrittenOp:
    """A wrong ``narrow_reduction``: reduces the kept dim the reduction left alone."""
    reduced = set(i64_array(op.attributes["reduction_dims"]))
    wrong = [i for i, d in enumerate(web.kept) if d not in reduced]
    op.attributes["reduction_dims"] = ir.DenseI64ArrayAttr.get(wrong)
    return RewrittenOp(op.name, "(mutant)", None, f"now reduces dims {wrong}")


def test_a_rewrite_that_reduces_the_other_kept_dim_is_caught() -> None:
    """The mutant of the issue (column sums stored for row sums) verifies, and these
    values show it at every element."""
    expanded, dims, reduced, axis = CASES[0]
    module = parse(module_text(expanded, dims, reduced, "add"))
    with (
        module.context,
        ir.Location.unknown(),
        mock.patch.object(patterns, "narrow_reduction", _narrowed_to_the_other_kept_dim),
    ):
        rewrite_unit_dims(module)
    assert module.operation.verify()
    got = stored(module)
    np.testing.assert_array_equal(got, expected(1 - axis, "add"))
    assert (got != expected(axis, "add")).all()
